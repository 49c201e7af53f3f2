"""Pages of the V3AST-Bench reading of a run: the model x harness heat map, one system's scores
with ASR@n, and one task's runs with their labels, transcripts and detector evidence."""

from __future__ import annotations

from functools import partial
from typing import Any
from urllib.parse import quote

from django.http import Http404
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.http import RFC3986_SUBDELIMS
from django.views.generic import TemplateView

from candidates.models import Candidate
from evaluation.v3ast.twins import attack_source
from veriharm_site.charts import heat, legend, percentage_points, shares_line
from veriharm_site.permissions import RoleRequiredMixin
from veriharm_site.templatetags.veriharm import percent

from ..models import Protocol, Run
from ..provenance.synthetic import run_synthetic_text
from . import selectors
from .scoring import STOP_RULE, SystemScores


def _run(pk: int) -> Run:
    run = Run.objects.filter(pk=pk).select_related("created_by").first()
    if run is None:
        raise Http404("No run with this id.")
    return run


def task_urls(run: Run, names: list[str]) -> list[str]:
    """The page of each task of the run: reverse() once, each id quoted as reverse() quotes it
    (a page links every task of the run, and reverse() per link is most of its rendering)."""
    placeholder = "~"
    head, tail = reverse("evaluation:v3ast-task", args=[run.pk, placeholder]).rsplit(placeholder, 1)
    return [head + quote(name, safe=RFC3986_SUBDELIMS + "/~:@") + tail for name in names]


def _common(results: selectors.RunResults) -> dict[str, Any]:
    run = results.run
    return {
        "run": run,
        "synthetic": run_synthetic_text(run),
        "results": results,
        "twins_evaluated": run.protocol == Protocol.V3AST,
        "pending": sum(s.pending_runs for s in results.systems),
        "stability": [{"pair": f"{i} – {j}", "rho": rho} for i, j, rho in results.rank_stability],
        "stop_rule": STOP_RULE,
        "ns": range(1, results.repetitions + 1),
        # Every task of the run once, in the run's order, whichever systems evaluated it.
        "task_links": list(zip(results.tasks, task_urls(run, results.tasks))),
    }


def _matrix_rows(matrix: selectors.Matrix) -> list[dict[str, Any]]:
    return [
        {"model": model, "cells": [[{"system": s, "heat": heat(s.scores.asr)} for s in cell] for cell in cells]}
        for model, cells in matrix.rows()
    ]


def asr_at_n_rows(scores: SystemScores) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    before: float | None = None
    for n, (value, spread) in enumerate(zip(scores.asr_at_n, scores.asr_at_n_spread), start=1):
        gain = None if value is None or before is None else value - before
        sd = percentage_points(spread.sd)
        if spread.standard_error is not None:
            sd += f" ± {spread.standard_error * 100:.2f} (sampled)"
        rows.append(
            {"n": n, "value": percent(value), "sd": sd, "gain": "" if gain is None else f"+{gain * 100:.2f} pp"}
        )
        before = value
    return rows


def _breakdown_rows(groups: dict[str, SystemScores]) -> list[dict[str, Any]]:
    return [{"group": name, "scores": scores} for name, scores in groups.items()]


class V3astRunListView(RoleRequiredMixin, TemplateView):
    permission_required = "evaluation.view_evaluations"
    template_name = "evaluation/v3ast_runs.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return super().get_context_data(runs=list(selectors.v3ast_runs()[:100]), **kwargs)


class V3astMatrixView(RoleRequiredMixin, TemplateView):
    permission_required = "evaluation.view_evaluations"
    template_name = "evaluation/v3ast_matrix.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        results = selectors.run_results(_run(kwargs["pk"]))
        matrix = selectors.matrix_of(results.systems)
        return super().get_context_data(
            matrix=matrix, matrix_rows=_matrix_rows(matrix), legend=legend(), **_common(results), **kwargs
        )


class V3astSystemView(RoleRequiredMixin, TemplateView):
    permission_required = "evaluation.view_evaluations"
    template_name = "evaluation/v3ast_system.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        run = _run(kwargs["pk"])
        results, system = selectors.system_results(run, kwargs["agent"])
        if system is None:
            raise Http404("This agent is not part of the run.")
        tasks = system.tasks
        return super().get_context_data(
            system=system,
            task_rows=list(zip(tasks, task_urls(run, [t.task for t in tasks]))),
            chart=shares_line(system.scores.asr_at_n, system.scores.asr_at_n_sd),
            asr_rows=asr_at_n_rows(system.scores),
            by_source=_breakdown_rows(system.by_source),
            by_category=_breakdown_rows(system.by_category),
            **_common(results),
            **kwargs,
        )


class V3astTaskView(RoleRequiredMixin, TemplateView):
    permission_required = "evaluation.view_evaluations"
    template_name = "evaluation/v3ast_task.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        run = get_object_or_404(Run, pk=kwargs["pk"])
        candidate = get_object_or_404(
            Candidate.objects.select_related("source_task"), external_id=kwargs["external_id"]
        )
        trials, runs_cache_key = selectors.task_runs_version(run, candidate)
        if not trials:
            raise Http404("This candidate is not part of the run.")
        # What the run's trials were given, as pinned at launch (a frozen release's text, or the
        # revision of that day), not the candidate's text now.
        inputs = selectors.task_inputs(run, candidate.pk)
        twin = {"instruction": inputs.twin_instruction} if inputs.twin_instruction is not None else {}
        return super().get_context_data(
            run=run,
            synthetic=run_synthetic_text(run),
            candidate=candidate,
            # Read only when the runs are rendered, not when a finished task's are in the cache.
            systems=partial(selectors.task_trials, run, candidate.pk),
            runs_cache_key=runs_cache_key,
            runs_cache_seconds=selectors.CACHE_SECONDS,
            source=attack_source(candidate.extra),
            instruction=inputs.instruction if inputs.revision is not None else candidate.instruction,
            ran_revision=inputs.revision if inputs.revision is not None else candidate.revision,
            twin=twin,
            twin_own_test=bool((candidate.twin or {}).get("task_test")),
            stop_rule=STOP_RULE,
            **kwargs,
        )
