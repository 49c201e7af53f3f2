from django.contrib import admin

from .models import Candidate, Judgement, Search, SearchAttempt, SourceTask


class JudgementInline(admin.TabularInline):
    """Read-only: Q and the ranking are derived from judgements by the import service."""

    model = Judgement
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Candidate)
class CandidateAdmin(admin.ModelAdmin):
    list_display = ["external_id", "rank", "quality", "perturbation", "risk_category", "target_agent", "proposer"]
    list_filter = ["perturbation", "risk_category", "target_agent", "proposer"]
    search_fields = ["external_id", "instruction"]
    ordering = ["rank", "external_id"]
    readonly_fields = ["quality", "rank", "content_hash", "imported_at", "updated_at"]
    raw_id_fields = ["source_task"]
    inlines = [JudgementInline]
    show_full_result_count = False


@admin.register(SourceTask)
class SourceTaskAdmin(admin.ModelAdmin):
    list_display = ["external_id"]
    search_fields = ["external_id", "instruction"]


class AttemptInline(admin.TabularInline):
    model = SearchAttempt
    extra = 0


@admin.register(Search)
class SearchAdmin(admin.ModelAdmin):
    list_display = ["source_task_external_id", "target_agent", "proposer", "budget", "succeeded"]
    list_filter = ["succeeded", "target_agent", "proposer"]
    raw_id_fields = ["candidate"]
    inlines = [AttemptInline]
