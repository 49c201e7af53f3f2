from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.options import Action
from django.db.models import Model
from django.http import HttpRequest

from .models import Candidate, Decision, Judgement, Release, ReleaseItem, Revision, Search, SearchAttempt, SourceTask


class JudgementInline(admin.TabularInline):
    """Read-only: Q and the ranking are derived from judgements by the import service."""

    model = Judgement
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
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


# --- Curation: decisions and revisions are history, frozen releases are immutable ---------------


class _HistoryAdmin(admin.ModelAdmin):
    """Read-only: decisions and revisions are made in the review pages and never change."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(Decision)
class DecisionAdmin(_HistoryAdmin):
    list_display = ["candidate", "verdict", "reason", "candidate_revision", "decided_by", "decided_at", "flag_warning"]
    list_filter = ["verdict", "reason"]
    search_fields = ["candidate__external_id", "note", "flag_warning"]
    list_select_related = ["candidate", "decided_by"]


@admin.register(Revision)
class RevisionAdmin(_HistoryAdmin):
    list_display = ["candidate", "number", "author", "created_at"]
    search_fields = ["candidate__external_id", "reason"]
    list_select_related = ["candidate", "author"]


_RELEASE_ITEM_FIELDS = ("position", "external_id", "revision", "content_hash")


class ReleaseItemInline(admin.TabularInline):
    model = ReleaseItem
    extra = 0
    fields = readonly_fields = _RELEASE_ITEM_FIELDS
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    """Drafts: name, version and description may change. Frozen: read-only and not deletable.
    Freezing happens on the release page, where the approved set is snapshotted."""

    list_display = ["name", "version", "frozen_at", "checksum", "created_by"]
    list_filter = ["name"]
    readonly_fields = ["created_by", "created_at", "frozen_at", "frozen_by", "checksum", "previous", "changelog"]
    inlines = [ReleaseItemInline]

    def get_actions(
        self, request: HttpRequest, action_location: admin.ActionLocation = admin.ActionLocation.CHANGE_LIST
    ) -> dict[str, Action | None]:
        # The bulk delete would reach frozen releases without asking each one.
        actions = super().get_actions(request, action_location)
        actions.pop("delete_selected", None)
        return actions

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A release needs its creator, which the curation pages and API record.
        return False

    def has_change_permission(self, request: HttpRequest, obj: Release | None = None) -> bool:
        if obj is not None and obj.is_frozen:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Release | None = None) -> bool:
        if obj is not None and obj.is_frozen:
            return False
        return super().has_delete_permission(request, obj)
