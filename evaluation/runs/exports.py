"""Metrics of a run as CSV or JSON documents, a paired comparison of two of its systems as the API's,
and the run's trajectories for other tools (ATIF, an Inspect eval log), by name for the page and API."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from evaluation.models import Run
from evaluation.provenance.synthetic import run_synthetic_text
from evaluation.runs import inspect_log_export, paired, trajectory_export
from evaluation.runs.metric_selectors import PairedComparison, run_metrics_rows
from evaluation.runs.metrics import FORMULAS, METRICS
from veriharm_site.csv_safe import SafeDictWriter

COLUMNS = [
    "run",
    "agent",
    "model",
    "harness",
    "breakdown",
    "group",
    "n_candidates",
    "n_trials",
    *[f"{m}{suffix}" for m in METRICS for suffix in ("", "_se", "_ci_low", "_ci_high")],
    "unresolved_trials",
    "stale_trials",
    "excluded_candidates",
    # What no model produced in the run (`evaluation.provenance.synthetic`), on every row; empty when nothing.
    "synthetic",
]


def metrics_csv(run: Run) -> str:
    buffer = io.StringIO()
    writer = SafeDictWriter(buffer, fieldnames=COLUMNS, extrasaction="ignore")
    writer.writeheader()
    synthetic = run_synthetic_text(run)
    for row in run_metrics_rows(run):
        row = {**row, "synthetic": synthetic}
        writer.writerow({key: ("" if row.get(key) is None else row.get(key)) for key in COLUMNS})
    return buffer.getvalue()


def metrics_document(run: Run) -> dict[str, Any]:
    return {
        "run": run.pk,
        "name": str(run),
        "backend": run.backend,
        "repetitions": run.repetitions,
        "synthetic": run_synthetic_text(run),
        "definitions": FORMULAS,
        "standard_error": "clustered by candidate: per-candidate means first, "
        "SE = sqrt(sum_c (x_c - mean)^2 / (n (n - 1))); NHSR by linearisation of the ratio",
        "interval": "95% Wilson score interval with each candidate counted once: k = sum_c x_c of n candidates; "
        "for NHSR k = sum_c h_c of n = sum_c t_c",
        "rows": run_metrics_rows(run),
    }


def metrics_json(run: Run) -> str:
    return json.dumps(metrics_document(run), indent=2)


def paired_document(result: PairedComparison) -> dict[str, Any]:
    """A paired comparison as the API answers it."""
    c = result.comparison
    return {
        "run": result.run.pk,
        "run_b": result.run_b.pk if result.run_b else result.run.pk,
        "a": result.a,
        "b": result.b,
        "paired_candidates": c.paired,
        "only_a": c.only_a,
        "only_b": c.only_b,
        "binary": c.binary,
        "method": paired.METHOD,
        "differences": [
            {
                "metric": d.metric,
                "a": float(d.a),
                "b": float(d.b),
                "difference": float(d.value),
                "ci_low": None if d.ci is None else d.ci.low,
                "ci_high": None if d.ci is None else d.ci.high,
                "mcnemar": None if d.mcnemar is None else asdict(d.mcnemar),
            }
            for d in c.differences
        ],
    }


@dataclass(frozen=True)
class TrajectoryExport:
    """A download of a run's trajectories: its file name and bytes (a Refused when it cannot be one)."""

    content_type: str
    file_name: Callable[[Run], str]
    document: Callable[[Run], bytes]


TRAJECTORY_EXPORTS = {
    "atif": TrajectoryExport(
        "application/gzip",
        lambda run: f"{trajectory_export.archive_name(run)}.tar.gz",
        trajectory_export.run_atif_archive,
    ),
    "inspect": TrajectoryExport("application/zip", inspect_log_export.log_name, inspect_log_export.run_inspect_log),
}
