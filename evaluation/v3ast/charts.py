"""Geometry and colours for the V3AST pages' server-rendered charts (no chart library, no CDN):
the matrix heat map's cell colours and legend, and the ASR@n line plot with its spread.

Templates draw the SVG from these numbers, so everything shown is escaped by the template engine.
"""
from __future__ import annotations

from dataclasses import dataclass

from veriharm_site.templatetags.veriharm import percent

from .scoring import SystemScores

# The heat map's ends: a pale green for no compromise, the app's warning red for all compromised.
# One hue ramp in lightness reads in grey too; every cell also prints its number.
LOW = (234, 245, 238)
HIGH = (163, 58, 23)
EMPTY = "#eef1f5"


@dataclass(frozen=True)
class Heat:
    background: str
    foreground: str


def percentage_points(value: float | None) -> str:
    """A spread of shares, in percentage points: not to be read as a share itself."""
    return "–" if value is None else f"{value * 100:.1f} pp"


def heat(value: float | None) -> Heat:
    """The colour of a share from 0 to 1; no value (no eligible task) is grey."""
    if value is None:
        return Heat(EMPTY, "#5b6474")
    share = min(max(value, 0.0), 1.0)
    r, g, b = (round(lo + (hi - lo) * share) for lo, hi in zip(LOW, HIGH))
    return Heat(f"rgb({r}, {g}, {b})", "#ffffff" if share > 0.55 else "#1d2330")


@dataclass(frozen=True)
class LegendStop:
    offset: str
    colour: str
    label: str
    x: float


def legend(width: float = 240, steps: int = 4) -> list[LegendStop]:
    return [
        LegendStop(offset=f"{100 * i / steps:.0f}%", colour=heat(i / steps).background,
                   label=percent(i / steps, 0), x=round(width * i / steps, 1))
        for i in range(steps + 1)
    ]


@dataclass(frozen=True)
class Point:
    n: int
    x: float
    y: float
    label: str
    # The whisker of ± one standard deviation across repetitions, clipped to the plot (None: no spread).
    sd_top: float | None
    sd_bottom: float | None
    sd_label: str


@dataclass(frozen=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True)
class LineChart:
    width: int
    height: int
    left: int
    top: int
    right: float
    bottom: float
    points: list[Point]
    y_ticks: list[Tick]
    polyline: str


def asr_at_n_chart(scores: SystemScores, width: int = 460, height: int = 260) -> LineChart | None:
    """ASR@n for n = 1..N on a 0-100% axis, each point with its ± SD whisker; None without values."""
    values = scores.asr_at_n
    if not values or all(v is None for v in values):
        return None
    # Room above 100% for the top point's label, below the axis for the n labels.
    left, top, right_margin, bottom_margin = 56, 28, 20, 40
    right, bottom = width - right_margin, height - bottom_margin
    span_x, span_y = right - left, bottom - top

    def x_of(n: int) -> float:
        return left + span_x / 2 if len(values) == 1 else left + span_x * (n - 1) / (len(values) - 1)

    def y_of(share: float) -> float:
        return round(bottom - span_y * min(max(share, 0.0), 1.0), 1)

    points = []
    for n, (value, sd) in enumerate(zip(values, scores.asr_at_n_sd or [None] * len(values)), start=1):
        if value is None:
            continue
        points.append(Point(
            n=n, x=round(x_of(n), 1), y=y_of(value), label=percent(value),
            sd_top=None if sd is None else y_of(value + sd), sd_bottom=None if sd is None else y_of(value - sd),
            sd_label="" if sd is None else f"± {percentage_points(sd)}",
        ))
    return LineChart(
        width=width, height=height, left=left, top=top, right=right, bottom=bottom, points=points,
        y_ticks=[Tick(position=y_of(share), label=percent(share, 0)) for share in (0, 0.25, 0.5, 0.75, 1.0)],
        polyline=" ".join(f"{p.x},{p.y}" for p in points),
    )
