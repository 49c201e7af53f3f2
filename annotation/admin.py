from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from .models import Adjudication, Assignment, ItemSkip, LabelChange, Study, StudyItem, StudyMember


class ReadOnlyAdmin(admin.ModelAdmin):
    """Samples, claims and labels are written only by the annotation services (locks, constraints);
    the admin shows them and may delete them, never edits them."""

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


class MemberInline(admin.TabularInline):
    model = StudyMember
    extra = 0
    readonly_fields = ["user", "pseudonym", "added_at"]
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["name", "status", "per_group", "top_k", "stratify_by", "annotators_per_item", "created_at"]
    list_filter = ["status", "stratify_by"]
    search_fields = ["name"]
    readonly_fields = [
        "seed",
        "top_k",
        "per_group",
        "stratify_by",
        "annotators_per_item",
        "routing",
        "ranked_at_sampling",
        "strata_report",
        "created_by",
        "created_at",
        "closed_at",
    ]
    inlines = [MemberInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a study is a sample: create it from the Studies page, which draws it


@admin.register(StudyItem)
class StudyItemAdmin(ReadOnlyAdmin):
    list_display = ["study", "number", "candidate", "group", "stratum", "rank_at_sampling", "quality_at_sampling"]
    list_filter = ["study", "group"]
    raw_id_fields = ["candidate"]


@admin.register(Assignment)
class AssignmentAdmin(ReadOnlyAdmin):
    list_display = ["study", "item", "annotator", "submitted_at", "c1", "c2", "c3", "revisions"]
    list_filter = ["study", "submitted_at"]
    raw_id_fields = ["item"]


@admin.register(ItemSkip)
class ItemSkipAdmin(ReadOnlyAdmin):
    list_display = ["study", "item", "annotator", "skipped_at", "returned_at", "unclear", "reason"]
    list_filter = ["study", "unclear"]
    raw_id_fields = ["item"]


@admin.register(LabelChange)
class LabelChangeAdmin(ReadOnlyAdmin):
    list_display = ["assignment", "c1", "c2", "c3", "answered_at", "replaced_at"]
    raw_id_fields = ["assignment"]


@admin.register(Adjudication)
class AdjudicationAdmin(ReadOnlyAdmin):
    list_display = ["item", "c1", "c2", "c3", "decided_by", "decided_at", "reason"]
    raw_id_fields = ["item"]
