from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from .agents.factory import check_network, permission_mode
from .models import Agent, FinalState, ModelCall, ReferenceCheck, Rescore, Run, TranscriptStep, Trial, TrialInputs


class AgentForm(forms.ModelForm):
    class Meta:
        model = Agent
        fields = "__all__"

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data  # what ModelForm.clean returns (the stubs allow None)
        try:
            check_network(data.get("kind", ""), data.get("config") or {}, data.get("network"))
        except ValueError as exc:
            # A network mode that does not fit the configuration is the network field's problem.
            field = "network" if str(exc).startswith(("network must", "this agent asks")) else "config"
            raise forms.ValidationError({field: str(exc)}) from None
        return data


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    form = AgentForm
    list_display = ["name", "kind", "model", "harness", "network", "time_limit", "active"]
    list_filter = ["kind", "active", "network"]
    search_fields = ["name", "model", "harness"]
    readonly_fields = ["harness_permission_mode"]

    @admin.display(description="Permission mode")
    def harness_permission_mode(self, agent: Agent) -> str:
        """What the agent's harness may do without asking, as V3AST reports it."""
        return permission_mode(agent.kind, agent.config) or "–"


class TrialInline(admin.TabularInline):
    """Results are written by workers only; the admin shows them."""

    model = Trial
    extra = 0
    can_delete = False
    fields = readonly_fields = (
        "candidate",
        "agent",
        "kind",
        "repetition",
        "status",
        "r_task",
        "r_harm",
        "outcome",
        "attempts",
    )
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["__str__", "protocol", "backend", "repetitions", "created_by", "created_at", "cancelled_at"]
    list_filter = ["protocol", "backend"]
    # The protocol decided which trials exist: changing it afterwards would misdescribe them.
    # The budget too: the gateway checks calls against the budget the run was launched with.
    readonly_fields = [
        "created_at",
        "created_by",
        "protocol",
        "selection",
        "rerun_of",
        "cancelled_at",
        "release",
        "release_checksum",
        "inputs_sha256",
        "budget_usd",
    ]
    inlines = [TrialInline]


class StepInline(admin.TabularInline):
    model = TranscriptStep
    extra = 0
    can_delete = False
    readonly_fields = ["attempt", "index", "kind", "command", "content", "exit_code", "timed_out", "duration"]

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


class ModelCallInline(admin.TabularInline):
    """Recorded by the model gateway only."""

    model = ModelCall
    extra = 0
    can_delete = False
    fields = readonly_fields = (
        "attempt",
        "route",
        "model",
        "streamed",
        "status_code",
        "input_tokens",
        "output_tokens",
        "retries",
        "latency",
        "cost_usd",
        "error",
    )

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(Trial)
class TrialAdmin(admin.ModelAdmin):
    list_display = [
        "pk",
        "run",
        "candidate",
        "agent",
        "kind",
        "repetition",
        "status",
        "end",
        "r_task",
        "r_harm",
        "outcome",
        "attempts",
    ]
    list_filter = ["status", "end", "kind", "outcome", "agent"]
    raw_id_fields = ["run", "candidate", "agent", "inputs"]
    inlines = [ModelCallInline, StepInline]
    show_full_result_count = False

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[str]:
        # Outcomes come from the sandbox, never from a form.
        return [f.name for f in Trial._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(ReferenceCheck)
class ReferenceCheckAdmin(admin.ModelAdmin):
    list_display = [
        "candidate",
        "candidate_revision",
        "verdict",
        "harm_passes_untouched",
        "task_passes_untouched",
        "does_not_discriminate",
        "updated_at",
    ]
    list_filter = ["verdict", "harm_passes_untouched", "task_passes_untouched", "does_not_discriminate"]
    raw_id_fields = ["candidate", "safe_trial", "harmful_trial", "noop_trial"]
    readonly_fields = [
        "verdict",
        "detail",
        "safe_trial",
        "harmful_trial",
        "noop_trial",
        "harm_passes_untouched",
        "task_passes_untouched",
        "does_not_discriminate",
        "candidate",
        "candidate_revision",
    ]


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records of what ran and what it gave: shown, never edited by hand."""

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[str]:
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(TrialInputs)
class TrialInputsAdmin(ReadOnlyAdmin):
    list_display = [
        "digest",
        "instruction_sha256",
        "task_test_sha256",
        "harm_test_sha256",
        "environment_sha256",
        "created_at",
    ]
    search_fields = ["digest", "instruction_sha256", "task_test_sha256", "harm_test_sha256"]
    show_full_result_count = False


@admin.register(FinalState)
class FinalStateAdmin(ReadOnlyAdmin):
    list_display = ["trial", "size", "sha256", "created_at", "expires_at", "pruned_at"]
    list_filter = ["pruned_at"]
    raw_id_fields = ["trial"]


@admin.register(Rescore)
class RescoreAdmin(ReadOnlyAdmin):
    list_display = ["trial", "candidate_revision", "status", "end", "r_task", "r_harm", "created_at"]
    list_filter = ["status", "end"]
    raw_id_fields = ["trial", "inputs", "requested_by"]


@admin.register(ModelCall)
class ModelCallAdmin(ReadOnlyAdmin):
    list_display = [
        "trial",
        "attempt",
        "route",
        "model",
        "status_code",
        "input_tokens",
        "output_tokens",
        "retries",
        "cost_usd",
        "created_at",
    ]
    list_filter = ["route", "status_code", "streamed"]
    raw_id_fields = ["trial"]
    show_full_result_count = False
