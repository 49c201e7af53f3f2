"""The pages of a trial (what it ran, its transcript, its kept final state) and a candidate's results
(re-run it, re-score its trials)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views import View
from django.views.generic import TemplateView

from candidates.models import Candidate
from evaluation.models import FinalState, Trial
from evaluation.models.taxonomy import MEANING
from evaluation.provenance.synthetic import run_synthetic_text
from evaluation.results import transcript_view, trial_selectors
from evaluation.results.queries import TranscriptQuery
from evaluation.runs import model_usage
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import candidate_rerun
from evaluation.runs.refusals import LaunchRefused, error_in_words
from evaluation.trials import rescoring
from veriharm_site.confirmation import Confirmation, ConfirmStepMixin
from veriharm_site.permissions import RoleRequiredMixin, signed_in_user
from veriharm_site.queries import QueryPageMixin, query_string

# Folded, a step is one line: a page of them is a screen or two, and its output is read only when opened.
STEPS_PAGE_SIZE = 100


class TrialDetailView(RoleRequiredMixin, QueryPageMixin, TemplateView):
    permission_required = "evaluation.view_evaluations"
    template_name = "evaluation/trial.html"
    query_serializer = TranscriptQuery

    def get_context_data(self, **kwargs):
        try:
            trial = trial_selectors.trial_detail(kwargs["pk"])
        except Trial.DoesNotExist:
            raise Http404("No trial with this id.") from None
        search = self.query["q"]
        steps = Paginator(trial_selectors.transcript_steps(trial, search), STEPS_PAGE_SIZE).get_page(self.query["page"])
        if search:
            positions = trial_selectors.transcript_positions(trial, steps.object_list)
            for step in steps.object_list:
                step.position = positions[step.pk]  # type: ignore[attr-defined]
        return super().get_context_data(
            trial=trial,
            steps=steps,
            step_total=trial_selectors.transcript_length(trial) if search else steps.paginator.count,
            steps_page_size=STEPS_PAGE_SIZE,
            search=search,
            querystring=query_string(self.query),
            config_parts=transcript_view.config_parts(trial.agent_config),
            end_meaning=MEANING.get(trial.end, ""),
            retried_by=trial_selectors.trial_retry(trial),
            rescores=rescoring.trial_rescores(trial),
            model_calls=list(trial_selectors.trial_model_calls(trial)),
            usage=model_usage.trial_model_usage(trial.pk),
            synthetic=run_synthetic_text(trial.run),
            **kwargs,
        )


class TrialFinalStateView(RoleRequiredMixin, View):
    """The kept final state of a trial as a gzip tar, for forensics (admins)."""

    permission_required = "evaluation.run_evaluations"

    def get(self, request: HttpRequest, pk: int) -> HttpResponseBase:
        state = FinalState.objects.filter(trial_id=pk).first()
        if state is None or not state.available:
            raise Http404("No kept final state for this trial.")
        response = FileResponse(
            state.archive.open("rb"),
            as_attachment=True,
            filename=f"veriharm-trial-{pk}-final-state.tar.gz",
            content_type="application/gzip",
        )
        response["X-Content-SHA256"] = state.sha256
        return response


class CandidateRescoreView(RoleRequiredMixin, View):
    permission_required = "evaluation.run_evaluations"

    def post(self, request: HttpRequest, external_id: str) -> HttpResponse:
        candidate = get_object_or_404(Candidate, external_id=external_id)
        try:
            rescores = rescoring.rescore_launch(candidate, requested_by=signed_in_user(request))
        except rescoring.RescoreRefused as refused:
            messages.error(request, f"Not re-scored: {refused}")
        else:
            messages.success(
                request,
                f"Re-scoring {len(rescores)} trial(s) of {external_id} against the tests of "
                f"revision {candidate.revision}; no agent runs again.",
            )
        return redirect(reverse("candidates:detail", args=[external_id]) + "#rescores")


class CandidateRerunView(RoleRequiredMixin, ConfirmStepMixin, View):
    permission_required = "evaluation.run_evaluations"

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.GET.get("reference") != "1":
            return super().get(request, *args, **kwargs)
        candidate = get_object_or_404(Candidate, external_id=kwargs["external_id"])
        confirmation = Confirmation(
            title=f"Check the tests of {candidate.external_id}?",
            message=f"A new run of the safe, harmful and no-op reference agents, one trial each, on revision "
            f"{candidate.revision}: its tests discriminate when the safe script gives (1, 0), the harmful one (1, 1) "
            "and the untouched environment (0, 0). Earlier results stay in its history.",
            action="Run the reference check",
            back_url=reverse("candidates:detail", args=[candidate.external_id]),
            danger=False,
        )
        return render(request, "evaluation/reference_check_confirm.html", {"confirmation": confirmation})

    def confirmation(self, request: HttpRequest, external_id: str) -> Confirmation:
        candidate = get_object_or_404(Candidate, external_id=external_id)
        return Confirmation(
            title=f"Re-evaluate {candidate.external_id}?",
            message="A new run evaluates this candidate again with every agent that evaluated it before, using "
            "sandbox time (and model calls, for model agents). Earlier results stay in its history.",
            action="Re-evaluate",
            back_url=reverse("candidates:detail", args=[candidate.external_id]),
            danger=False,
        )

    def post(self, request: HttpRequest, external_id: str) -> HttpResponse:
        candidate = get_object_or_404(Candidate, external_id=external_id)
        # The reference check alone ("Check its tests"), or every agent that evaluated it before.
        given = request.POST.get("reference")
        if given not in (None, "1"):
            errors = [("reference", "must be 1 (check the tests with the reference agents) or left out")]
            return render(request, "bad_query.html", {"errors": errors}, status=400)
        reference = given == "1"
        agents = [a.pk for a in reference_agents_ensure()] if reference else None
        try:
            run = candidate_rerun(candidate, created_by=signed_in_user(request), agent_ids=agents)
        except LaunchRefused as refused:
            messages.error(request, f"Not re-evaluated: {'; '.join(error_in_words(e) for e in refused.errors)}")
            return redirect("candidates:detail", external_id=external_id)
        done = "Checking the tests of" if reference else "Re-evaluating"
        messages.success(request, f"{done} {external_id} in {run}; earlier results stay in its history.")
        return redirect("evaluation:run", pk=run.pk)
