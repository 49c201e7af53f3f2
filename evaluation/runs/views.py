"""The pages of runs: the list, launching, a run with its trials, progress, cancel, re-run and retry,
its metrics, paired comparison and trajectory exports."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views import View
from django.views.generic import TemplateView

from evaluation.agents.sandbox_status import sandbox_status
from evaluation.fleet import selectors as fleet_selectors
from evaluation.models import Protocol, Run, TrialStatus
from evaluation.models.taxonomy import MEANING, TrialEnd
from evaluation.provenance.synthetic import run_synthetic_text
from evaluation.runs import exports, metric_selectors, metrics, model_usage, paired, presentation
from evaluation.runs import selectors as run_selectors
from evaluation.runs.forms import LaunchForm, RetryForm
from evaluation.runs.launch import run_cancel, run_launch, run_rerun
from evaluation.runs.queries import PairedComparisonQuery, RunTrialsPageQuery
from evaluation.runs.refusals import LaunchRefused, error_in_words
from evaluation.runs.retries import retryable_counts, run_retry_unscored
from evaluation.runs.selection import selection_in_words
from evaluation.runs.waiting_runs import runs_wait_for_the_sandbox
from veriharm_site.confirmation import Confirmation, ConfirmStepMixin
from veriharm_site.permissions import RoleRequiredMixin, signed_in_user
from veriharm_site.queries import PageNumberQuery, QueryPageMixin, query_string
from veriharm_site.refusals import Refused

PAGE_SIZE = 50


class RunListView(RoleRequiredMixin, QueryPageMixin, TemplateView):
    permission_required = "evaluation.view_evaluations"
    template_name = "evaluation/runs.html"
    query_serializer = PageNumberQuery

    def get_context_data(self, **kwargs):
        page = Paginator(run_selectors.runs_list(), PAGE_SIZE).get_page(self.query["page"])
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
        demo_waits = not sandbox.ready and runs_wait_for_the_sandbox()
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
    run = run_selectors.run_found(pk)
    if run is None:
        raise Http404("No run with this id.")
    return run


class RunDetailView(RoleRequiredMixin, QueryPageMixin, TemplateView):
    permission_required = "evaluation.view_evaluations"
    template_name = "evaluation/run.html"
    query_serializer = RunTrialsPageQuery

    def get_context_data(self, **kwargs):
        run = _run_or_404(kwargs["pk"])
        status = self.query["status"]
        page = Paginator(run_selectors.run_trials(run, status, self.query["q"]), PAGE_SIZE).get_page(self.query["page"])
        progress = run_selectors.run_progress(run)
        return super().get_context_data(
            run=run,
            progress=progress,
            ends=run_selectors.end_counts(progress),
            stale_count=run_selectors.run_stale_count(run),
            selection_words=selection_in_words(run.selection),
            page=page,
            status=status,
            search=self.query["q"],
            statuses=TrialStatus.choices,
            querystring=query_string(self.query),
            agent_rows=presentation.agent_rows(metric_selectors.run_metrics(run)),
            usage=model_usage.run_model_usage(run),
            hosts=fleet_selectors.run_hosts(run),
            synthetic=run_synthetic_text(run),
            **kwargs,
        )


class RunProgressView(RoleRequiredMixin, View):
    permission_required = "evaluation.view_evaluations"

    def get(self, request: HttpRequest, pk: int) -> JsonResponse:
        return JsonResponse(run_selectors.run_progress(_run_or_404(pk)))


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
        items = metric_selectors.run_metrics(run)
        return super().get_context_data(
            run=run,
            progress=run_selectors.run_progress(run),
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
        agents = metric_selectors.run_agent_choices(run)
        other = None
        if self.query["run_b"] is not None and self.query["run_b"] != run.pk:
            other = run_selectors.run_found(self.query["run_b"])
            if other is None:
                error = [("run_b", f"no run {self.query['run_b']}; pick one of the runs offered")]
                return render(request, "bad_query.html", {"errors": error}, status=400)
        agents_b = metric_selectors.run_agent_choices(other) if other else agents
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
                result = metric_selectors.paired_comparison(run, a, b, run_b=other)
            except Refused as refused:
                return render(request, "bad_query.html", {"errors": refused.error_pairs()}, status=400)
        context = self.get_context_data(
            run=run,
            agents=agents,
            agents_b=agents_b,
            other=other,
            comparable=metric_selectors.comparable_runs(run),
            chosen_a=a,
            chosen_b=b,
            result=result,
            rows=presentation.paired_rows(result.comparison if result else None),
            method=paired.METHOD,
            synthetic=run_synthetic_text(run),
            **kwargs,
        )
        return self.render_to_response(context)
