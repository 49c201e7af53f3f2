from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views import View
from django.views.generic import TemplateView

from candidates.models import Candidate
from evaluation.models.taxonomy import MEANING, TrialEnd
from evaluation.results import presentation, selectors, transcript_view
from evaluation.runs import exports, metrics, paired
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import candidate_rerun, run_cancel, run_launch, run_rerun
from evaluation.runs.refusals import LaunchRefused, error_in_words
from evaluation.runs.retries import retryable_counts, run_retry_unscored
from evaluation.runs.sandbox_status import sandbox_status
from evaluation.runs.selection import selection_in_words
from evaluation.trials import rescoring
from veriharm_site.confirmation import Confirmation, ConfirmStepMixin
from veriharm_site.permissions import RoleRequiredMixin, signed_in_user
from veriharm_site.queries import PageNumberQuery, QueryPageMixin, query_string
from veriharm_site.refusals import Refused

from .demo.runs import demo_runs_pending
from .fleet import selectors as fleet_selectors
from .forms import LaunchForm, RetryForm
from .models import FinalState, Protocol, Run, Trial, TrialStatus
from .queries import PairedComparisonQuery, RunTrialsPageQuery, TranscriptQuery
from .synthetic import run_synthetic_text

PAGE_SIZE = 50
# Folded, a step is one line: a page of them is a screen or two, and its output is read only when opened.
STEPS_PAGE_SIZE = 100


class RunListView(RoleRequiredMixin, QueryPageMixin, TemplateView):
    permission_required = "evaluation.view_evaluations"
    template_name = "evaluation/runs.html"
    query_serializer = PageNumberQuery

    def get_context_data(self, **kwargs):
        page = Paginator(selectors.runs_list(), PAGE_SIZE).get_page(self.query["page"])
        return super().get_context_data(page=page, **kwargs)


class RunLaunchView(RoleRequiredMixin, View):
    permission_required = "evaluation.run_evaluations"
    template_name = "evaluation/launch.html"

    def _form(self, data: QueryDict | None = None) -> LaunchForm:
        initial = {}
        if data is None and self.request.GET.get("ids"):
            initial = {"selection_kind": "ids", "ids": self.request.GET["ids"]}
        if data is None and self.request.GET.get("protocol") in Protocol.values:
            initial["protocol"] = self.request.GET["protocol"]
        return LaunchForm(data, initial=initial, default_backend=settings.VERIHARM_SANDBOX_BACKEND)

    def _render(self, request: HttpRequest, context: dict, status: int = 200) -> HttpResponse:
        sandbox = sandbox_status()
        demo_waits = not sandbox.ready and demo_runs_pending()
        context = {**context, "sandbox": sandbox, "demo_waits": demo_waits}
        return render(request, self.template_name, context, status=status)

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._render(request, {"form": self._form()})

    def post(self, request: HttpRequest) -> HttpResponse:
        form = self._form(request.POST)
        if not form.is_valid():
            return self._render(request, {"form": form}, status=400)
        data = form.cleaned_data
        try:
            run = run_launch(
                selection=form.selection(),
                agent_ids=[a.pk for a in data["agents"]],
                repetitions=data["repetitions"],
                backend=data["backend"],
                created_by=signed_in_user(request),
                name=data["name"],
                test_timeout=data.get("test_timeout"),
                protocol=data.get("protocol") or None,
                budget_usd=data.get("budget_usd"),
            )
        except LaunchRefused as refused:
            errors = [error_in_words(error) for error in refused.errors]
            return self._render(request, {"form": form, "errors": errors}, status=400)
        messages.success(request, f"Launched {run}: {run.trials.count()} trials queued.")
        return redirect("evaluation:run", pk=run.pk)


def _run_or_404(pk: int) -> Run:
    try:
        return selectors.run_get(pk)
    except Run.DoesNotExist:
        raise Http404("No run with this id.") from None


class RunDetailView(RoleRequiredMixin, QueryPageMixin, TemplateView):
    permission_required = "evaluation.view_evaluations"
    template_name = "evaluation/run.html"
    query_serializer = RunTrialsPageQuery

    def get_context_data(self, **kwargs):
        run = _run_or_404(kwargs["pk"])
        status = self.query["status"]
        page = Paginator(selectors.run_trials(run, status, self.query["q"]), PAGE_SIZE).get_page(self.query["page"])
        progress = selectors.run_progress(run)
        return super().get_context_data(
            run=run,
            progress=progress,
            ends=selectors.end_counts(progress),
            stale_count=selectors.run_stale_count(run),
            selection_words=selection_in_words(run.selection),
            page=page,
            status=status,
            search=self.query["q"],
            statuses=TrialStatus.choices,
            querystring=query_string(self.query),
            agent_rows=presentation.agent_rows(selectors.run_metrics(run)),
            usage=selectors.run_model_usage(run),
            hosts=fleet_selectors.run_hosts(run),
            synthetic=run_synthetic_text(run),
            **kwargs,
        )


class RunProgressView(RoleRequiredMixin, View):
    permission_required = "evaluation.view_evaluations"

    def get(self, request: HttpRequest, pk: int) -> JsonResponse:
        return JsonResponse(selectors.run_progress(_run_or_404(pk)))


class RunCancelView(RoleRequiredMixin, ConfirmStepMixin, View):
    permission_required = "evaluation.run_evaluations"

    def confirmation(self, request: HttpRequest, pk: int) -> Confirmation:
        run = _run_or_404(pk)
        return Confirmation(
            title=f"Cancel {run}?",
            message="Its queued trials end now, unrun; running ones stop at their next step. Finished trials keep "
            "their results. A cancelled run cannot be resumed (a re-run starts a new one).",
            action="Cancel the run",
            back_url=reverse("evaluation:run", args=[run.pk]),
            back_label="No, keep it running",
        )

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        run = _run_or_404(pk)
        ended = run_cancel(run)
        messages.success(
            request, f"Cancelled {run}: {ended} queued trial(s) ended; running ones stop at their next step."
        )
        return redirect("evaluation:run", pk=run.pk)


class RunRerunView(RoleRequiredMixin, ConfirmStepMixin, View):
    permission_required = "evaluation.run_evaluations"

    def confirmation(self, request: HttpRequest, pk: int) -> Confirmation:
        run = _run_or_404(pk)
        trials = run.trials.count()
        return Confirmation(
            title=f"Re-run {run}?",
            message=f"A new run evaluates the same candidates with the same agents again: {trials} trial"
            f"{'' if trials == 1 else 's'} queued, each using sandbox time (and model calls, for model "
            "agents). This run and its results stay as they are.",
            action="Re-run",
            back_url=reverse("evaluation:run", args=[run.pk]),
            danger=False,
        )

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        run = _run_or_404(pk)
        try:
            new = run_rerun(run, created_by=signed_in_user(request))
        except LaunchRefused as refused:
            messages.error(request, f"Not re-run: {refused}")
            return redirect("evaluation:run", pk=run.pk)
        messages.success(request, f"Re-running {run} as {new}; the earlier results are kept.")
        return redirect("evaluation:run", pk=new.pk)


class RunRetryView(RoleRequiredMixin, View):
    """Retry the run's trials that ended without a verdict, by the endings chosen, in the same run."""

    permission_required = "evaluation.run_evaluations"
    template_name = "evaluation/retry.html"

    def _render(self, request: HttpRequest, run: Run, form: RetryForm, status: int = 200) -> HttpResponse:
        counts = retryable_counts(run)
        chosen = set(form["ends"].value() or [])
        rows = [
            {"end": end, "label": TrialEnd(end).label, "meaning": MEANING[end], "count": n, "checked": end in chosen}
            for end, n in counts.items()
        ]
        confirmation = Confirmation(
            title=f"Retry the unscored trials of {run}?",
            message="Each chosen trial is run again as a new trial of this run, with the inputs and agent "
            "configuration pinned at launch. Trials with a verdict are not touched; each retried trial stays "
            "readable on its page, and the run's counts and metrics take its retry instead.",
            action="Retry the chosen trials",
            back_url=reverse("evaluation:run", args=[run.pk]),
            danger=False,
        )
        context = {"confirmation": confirmation, "form": form, "rows": rows, "run": run, "total": sum(counts.values())}
        return render(request, self.template_name, context, status=status)

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        run = _run_or_404(pk)
        # Checked by default: every ending some trial had, but the budget, which a retry spends again.
        initial = [end for end, n in retryable_counts(run).items() if n and end != TrialEnd.BUDGET]
        return self._render(request, run, RetryForm(initial={"ends": initial}))

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        run = _run_or_404(pk)
        form = RetryForm(request.POST)
        if not form.is_valid():
            return self._render(request, run, form, status=400)
        try:
            retried = run_retry_unscored(run, form.cleaned_data["ends"])
        except Refused as refused:
            form.add_error(None, refused.message)
            return self._render(request, run, form, status=refused.status_code)
        said = ", ".join(f"{n} {TrialEnd(end).label.lower()}" for end, n in retried.by_end.items() if n)
        messages.success(
            request, f"Retrying {len(retried.trial_ids)} trial(s) of {run} ({said}); the earlier attempts are kept."
        )
        return redirect("evaluation:run", pk=run.pk)


class RunTrajectoriesView(RoleRequiredMixin, View):
    """The run's trials as ATIF trajectories (.tar.gz) or an Inspect eval log (.eval)."""

    permission_required = "evaluation.view_evaluations"
    export = ""

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        run = _run_or_404(pk)
        chosen = exports.TRAJECTORY_EXPORTS[self.export]
        try:
            data = chosen.document(run)
        except Refused as refused:
            return render(request, "bad_query.html", {"errors": refused.error_pairs()}, status=refused.status_code)
        response = HttpResponse(data, content_type=chosen.content_type)
        response["Content-Disposition"] = f'attachment; filename="{chosen.file_name(run)}"'
        return response


class RunMetricsView(RoleRequiredMixin, TemplateView):
    permission_required = "evaluation.view_evaluations"
    template_name = "evaluation/metrics.html"

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        run = _run_or_404(kwargs["pk"])
        fmt = request.GET.get("format", "")
        if fmt == "csv":
            response = HttpResponse(exports.metrics_csv(run), content_type="text/csv; charset=utf-8")
            response["Content-Disposition"] = f'attachment; filename="veriharm-run-{run.pk}-metrics.csv"'
            return response
        if fmt == "json":
            response = HttpResponse(exports.metrics_json(run), content_type="application/json")
            response["Content-Disposition"] = f'attachment; filename="veriharm-run-{run.pk}-metrics.json"'
            return response
        return super().get(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        run = _run_or_404(kwargs["pk"])
        items = selectors.run_metrics(run)
        return super().get_context_data(
            run=run,
            progress=selectors.run_progress(run),
            agent_rows=presentation.agent_rows(items),
            breakdowns=presentation.breakdown_tables(items),
            definitions=[(metrics.LABELS[name], metrics.FORMULAS[name]) for name in metrics.METRICS],
            unresolved=sum(item.unresolved for item in items),
            excluded=sum(item.excluded_candidates for item in items),
            synthetic=run_synthetic_text(run),
            **kwargs,
        )


class RunCompareView(RoleRequiredMixin, QueryPageMixin, TemplateView):
    """Two systems of a run, paired by candidate (`evaluation.runs.paired`); its first two agents unless
    `?a=&b=` name others."""

    permission_required = "evaluation.view_evaluations"
    template_name = "evaluation/compare.html"
    query_serializer = PairedComparisonQuery

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        run = _run_or_404(kwargs["pk"])
        agents = selectors.run_agent_choices(run)
        other = None
        if self.query["run_b"] is not None and self.query["run_b"] != run.pk:
            try:
                other = selectors.run_get(self.query["run_b"])
            except Run.DoesNotExist:
                error = [("run_b", f"no run {self.query['run_b']}; pick one of the runs offered")]
                return render(request, "bad_query.html", {"errors": error}, status=400)
        agents_b = selectors.run_agent_choices(other) if other else agents
        a, b = self.query["a"], self.query["b"]
        if other is not None:
            # B from the other run: its agent of A's name when B is not given or not of that run (the
            # run was just switched), else its first.
            a = a if a is not None else (agents[0].pk if agents else None)
            if b not in {agent.pk for agent in agents_b}:
                same = {agent.name: agent.pk for agent in agents_b}
                named = next((agent.name for agent in agents if agent.pk == a), "")
                b = same.get(named, agents_b[0].pk if agents_b else None)
        elif a is None and len(agents) >= 2:
            a, b = agents[0].pk, agents[1].pk
        result = None
        if a is not None and b is not None:
            try:
                result = selectors.paired_comparison(run, a, b, run_b=other)
            except Refused as refused:
                return render(request, "bad_query.html", {"errors": refused.error_pairs()}, status=400)
        context = self.get_context_data(
            run=run,
            agents=agents,
            agents_b=agents_b,
            other=other,
            comparable=selectors.comparable_runs(run),
            chosen_a=a,
            chosen_b=b,
            result=result,
            rows=presentation.paired_rows(result.comparison if result else None),
            method=paired.METHOD,
            synthetic=run_synthetic_text(run),
            **kwargs,
        )
        return self.render_to_response(context)


class TrialDetailView(RoleRequiredMixin, QueryPageMixin, TemplateView):
    permission_required = "evaluation.view_evaluations"
    template_name = "evaluation/trial.html"
    query_serializer = TranscriptQuery

    def get_context_data(self, **kwargs):
        try:
            trial = selectors.trial_detail(kwargs["pk"])
        except Trial.DoesNotExist:
            raise Http404("No trial with this id.") from None
        search = self.query["q"]
        steps = Paginator(selectors.transcript_steps(trial, search), STEPS_PAGE_SIZE).get_page(self.query["page"])
        if search:
            positions = selectors.transcript_positions(trial, steps.object_list)
            for step in steps.object_list:
                step.position = positions[step.pk]  # type: ignore[attr-defined]
        return super().get_context_data(
            trial=trial,
            steps=steps,
            step_total=selectors.transcript_length(trial) if search else steps.paginator.count,
            steps_page_size=STEPS_PAGE_SIZE,
            search=search,
            querystring=query_string(self.query),
            config_parts=transcript_view.config_parts(trial.agent_config),
            end_meaning=MEANING.get(trial.end, ""),
            retried_by=selectors.trial_retry(trial),
            rescores=rescoring.trial_rescores(trial),
            model_calls=list(selectors.trial_model_calls(trial)),
            usage=selectors.trial_model_usage(trial.pk),
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
