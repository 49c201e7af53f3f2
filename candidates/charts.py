"""Geometry of horizontal (stacked) bar charts, drawn by templates as inline SVG (pure).

No chart library: pages must work offline and the figures must be the same numbers the
tables show, so the server computes rectangles from those numbers and the template only
draws them.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

LABEL_WIDTH = 300.0
PLOT_WIDTH = 520.0
VALUE_WIDTH = 80.0
BAR_HEIGHT = 18.0
BAR_GAP = 8.0
GROUP_GAP = 14.0
AXIS_HEIGHT = 24.0
TICKS = 4


@dataclass(frozen=True)
class Segment:
    x: float
    width: float
    series: int  # 1-based, for the fill (CSS class <palette>-N)
    title: str


@dataclass(frozen=True)
class Bar:
    y: float
    label: str
    segments: tuple[Segment, ...]
    value_x: float
    value_label: str
    emphasis: bool  # overall rows are drawn bold


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True)
class BarSpec:
    """One bar to draw: its label, one value per series (stacked left to right), its end label."""

    label: str
    values: tuple[float, ...]
    value_label: str
    emphasis: bool = False
    group_start: bool = False  # leave a gap above: the first bar of a new group


@dataclass(frozen=True)
class Chart:
    width: float
    height: float
    bar_height: float
    label_x: float  # labels end here, right-aligned before the plot
    plot_x: float
    plot_width: float
    axis_y: float
    bars: tuple[Bar, ...]
    ticks: tuple[Tick, ...]
    series: tuple[str, ...]
    palette: str  # CSS class prefix of the fills: "seq" for ordered series, "cat" for unordered ones


def stacked_bars(
    specs: Sequence[BarSpec],
    *,
    series: Sequence[str],
    maximum: float,
    tick_label: Callable[[float], str],
    value_title: Callable[[str, str, float], str],
    palette: str = "seq",
) -> Chart:
    """Bars scaled so that `maximum` spans the plot; `value_title(bar, series, value)` is each
    segment's tooltip, so a reader can get every number from the figure itself."""
    scale = PLOT_WIDTH / maximum if maximum > 0 else 0.0
    bars: list[Bar] = []
    y = 0.0
    for index, spec in enumerate(specs):
        if spec.group_start and index:
            y += GROUP_GAP
        x = LABEL_WIDTH
        segments = []
        for number, (name, value) in enumerate(zip(series, spec.values), start=1):
            width = value * scale
            if width > 0:
                segments.append(Segment(x=x, width=width, series=number, title=value_title(spec.label, name, value)))
            x += width
        bars.append(
            Bar(
                y=y,
                label=spec.label,
                segments=tuple(segments),
                value_x=x + 6,
                value_label=spec.value_label,
                emphasis=spec.emphasis,
            )
        )
        y += BAR_HEIGHT + BAR_GAP
    ticks = tuple(
        Tick(x=LABEL_WIDTH + PLOT_WIDTH * i / TICKS, label=tick_label(maximum * i / TICKS)) for i in range(TICKS + 1)
    )
    return Chart(
        width=LABEL_WIDTH + PLOT_WIDTH + VALUE_WIDTH,
        height=y + AXIS_HEIGHT,
        bar_height=BAR_HEIGHT,
        label_x=LABEL_WIDTH - 8,
        plot_x=LABEL_WIDTH,
        plot_width=PLOT_WIDTH,
        axis_y=y,
        bars=tuple(bars),
        ticks=ticks,
        series=tuple(series),
        palette=palette,
    )


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is at least `value`, so that the
    axis ticks (quarters of it) fall on round numbers."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if value <= step * power:
            return step * power
    return 10.0 * power


def count_label(value: float) -> str:
    """A tick of a count axis: whole numbers plainly, quarters of small maxima with decimals."""
    return f"{value:,.0f}" if value == int(value) else f"{value:,.2f}".rstrip("0")
