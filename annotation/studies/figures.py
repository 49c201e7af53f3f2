"""Which numbers of a study's results go into its figures (Figure 3 and the agreement chart); the
geometry is `veriharm_site.charts`, the drawing templates/charts/."""

from __future__ import annotations

from collections.abc import Sequence

from veriharm_site.charts import (
    BandChart,
    BarSpec,
    Chart,
    MatrixChart,
    banded_bars,
    matrix_2x2,
    percent_label,
    stacked_bars,
)
from veriharm_site.intervals import interval_text

from .measures.statistics import LANDIS_KOCH, Prediction, landis_koch


def _share_tick(value: float) -> str:
    return f"{value * 100:.0f}%"


def confusion_matrix(p: Prediction) -> MatrixChart:
    """Rows: the group (top = predicted valid); columns: the human majority Valid_agg."""
    return matrix_2x2(
        ((p.tp, p.fp), (p.fn, p.tn)),
        (("TP", "FP"), ("FN", "TN")),
        title="Confusion matrix: group against human validity",
        column_title="Human majority (Valid_agg)",
        columns=("valid", "invalid"),
        rows=(("Top-K", "predicted valid"), ("Bottom-K", "predicted invalid")),
    )


def prediction_metrics(p: Prediction) -> Chart:
    ci = p.intervals
    metrics = (
        ("Accuracy", p.accuracy, ci.accuracy),
        ("Precision", p.precision, ci.precision),
        ("Recall", p.recall, ci.recall),
    )
    intervals = {name: interval for name, _, interval in metrics}

    def title(bar: str, _series: str, value: float) -> str:
        interval = intervals[bar]
        return f"{bar}: {value * 100:.1f}%" + (f" (95% interval {interval_text(interval)})" if interval else "")

    return stacked_bars(
        [BarSpec(name, (value or 0.0,), percent_label(value)) for name, value, _ in metrics],
        series=("share",),
        maximum=1.0,
        tick_label=_share_tick,
        value_title=title,
    )


def validity_by_group(p: Prediction) -> Chart:
    """Figure 3(c): the share of human-valid items in the top and in the bottom group."""
    specs = []
    counts: dict[tuple[str, str], int] = {}
    for name, valid, invalid in (("Top-K", p.tp, p.fp), ("Bottom-K", p.fn, p.tn)):
        counts[(name, "valid")], counts[(name, "invalid (hatched)")] = valid, invalid
        total = valid + invalid
        if not total:
            specs.append(BarSpec(name, (0.0, 0.0), "no decided items"))
            continue
        # The end label stays short (the segments' tooltips give both counts).
        specs.append(BarSpec(name, (valid / total, invalid / total), f"{valid / total * 100:.0f}% valid"))
    return stacked_bars(
        specs,
        series=("valid", "invalid (hatched)"),
        maximum=1.0,
        tick_label=_share_tick,
        palette="validity",
        value_title=lambda bar, series, value: f"{bar}, {series}: {counts[(bar, series)]} ({value * 100:.0f}%)",
    )


def agreement(rows: Sequence[tuple[str, float | None, float | None]]) -> BandChart:
    """(title, Fleiss' kappa, Krippendorff's alpha) per measure, on a -0.2..1 axis with Landis-Koch bands."""
    return banded_bars(
        [(title, (kappa, alpha)) for title, kappa, alpha in rows],
        series=("κ", "α"),
        bands=(*LANDIS_KOCH, (1.0, "almost perfect")),
        lo=-0.2,
        hi=1.0,
        describe=landis_koch,
        title="Agreement: Fleiss' kappa and Krippendorff's alpha with Landis-Koch bands",
    )
