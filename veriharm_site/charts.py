"""Every chart of the site, one way: this module computes the geometry from the numbers the
tables show (pure: no app imports, no markup), and the templates under templates/charts/ draw
it as inline SVG, so every label goes through the template engine's escaping.

No chart library: pages must work offline. Kinds: stacked horizontal bars (reports, Figure 3's
bars), a 2x2 matrix (Figure 3's confusion matrix), signed bars over labelled bands (agreement),
a heat scale (the V3AST matrix) and a line with whiskers (ASR@n).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .intervals import percent_text

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


def percent_label(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value * 100:.{digits}f}%"


# ------------------------------------------------------------------------------- 2x2 matrix


@dataclass(frozen=True)
class MatrixCell:
    x: float
    y: float
    count: int
    name: str  # e.g. "TP"
    note: str  # e.g. "60% of row"
    correct: bool  # the diagonal: drawn in the "agree" colour
    opacity: float
    cx: float  # the middle, where its count and note go


@dataclass(frozen=True)
class MatrixChart:
    width: float
    height: float
    cell_width: float
    cell_height: float
    x0: float
    y0: float
    title: str
    column_title: str
    columns: tuple[tuple[str, float], ...]  # (label, x of its middle)
    rows: tuple[tuple[str, str, float], ...]  # (label, sub-label, y of its middle)
    cells: tuple[MatrixCell, ...]
    heading_x: float
    row_label_x: float


def matrix_2x2(
    counts: tuple[tuple[int, int], tuple[int, int]],
    names: tuple[tuple[str, str], tuple[str, str]],
    *,
    title: str,
    column_title: str,
    columns: tuple[str, str],
    rows: tuple[tuple[str, str], tuple[str, str]],
) -> MatrixChart:
    """Counts in a 2x2 grid, the diagonal counted as correct; each cell's shade grows with its count."""
    x0, y0, w, h = 170.0, 46.0, 130.0, 70.0
    most = max(1, *(n for row in counts for n in row))
    cells = []
    for r in range(2):
        row_total = sum(counts[r])
        for c in range(2):
            n = counts[r][c]
            note = f"{n / row_total * 100:.0f}% of row" if row_total else "–"
            cells.append(
                MatrixCell(
                    x=x0 + c * w,
                    y=y0 + r * h,
                    count=n,
                    name=names[r][c],
                    note=note,
                    correct=r == c,
                    opacity=round(0.12 + 0.6 * n / most, 2),
                    cx=x0 + (c + 0.5) * w,
                )
            )
    return MatrixChart(
        width=x0 + 2 * w + 10,
        height=y0 + 2 * h + 10,
        cell_width=w,
        cell_height=h,
        x0=x0,
        y0=y0,
        title=title,
        column_title=column_title,
        columns=tuple((label, x0 + (i + 0.5) * w) for i, label in enumerate(columns)),
        rows=tuple((label, sub, y0 + (i + 0.5) * h) for i, (label, sub) in enumerate(rows)),
        cells=tuple(cells),
        heading_x=x0 + w,
        row_label_x=x0 - 10,
    )


# ----------------------------------------------------------------------- signed bars over bands


@dataclass(frozen=True)
class BandBar:
    name: str
    y: float
    x: float
    width: float
    value_x: float
    label: str  # "κ 0.61", or "κ undefined"
    title: str
    defined: bool
    series: int


@dataclass(frozen=True)
class BandRow:
    title: str
    y: float
    bars: tuple[BandBar, ...]


@dataclass(frozen=True)
class Band:
    x: float
    width: float
    label: str
    shaded: bool


@dataclass(frozen=True)
class BandChart:
    width: float
    height: float
    label_x: float
    top: float
    zero_x: float
    plot_bottom: float
    plot_height: float
    bar_height: float
    bands: tuple[Band, ...]
    rows: tuple[BandRow, ...]
    series: tuple[str, ...]
    title: str


def banded_bars(
    rows: Sequence[tuple[str, Sequence[float | None]]],
    *,
    series: Sequence[str],
    bands: Sequence[tuple[float, str]],
    lo: float,
    hi: float,
    describe: Callable[[float], str],
    title: str,
) -> BandChart:
    """Per row, one bar per series from 0 to its value on a lo..hi axis drawn over named bands
    (`bands`: upper bound and name, ascending, the last one's bound `hi`); `describe(value)` names
    the band a value falls in, for the tooltip."""
    x0, width, bar, top = 170.0, 560.0, 11.0, 22.0
    row_height = 34.0

    def x(value: float) -> float:
        return x0 + width * (min(max(value, lo), hi) - lo) / (hi - lo)

    drawn_bands = []
    previous = lo
    for index, (upper, name) in enumerate(bands):
        drawn_bands.append(Band(x=x(previous), width=x(upper) - x(previous), label=name, shaded=index % 2 == 0))
        previous = upper
    drawn_rows = []
    for i, (row_title, values) in enumerate(rows):
        y = top + 4 + i * row_height
        bars = []
        for j, (name, value) in enumerate(zip(series, values)):
            yy = y + j * (bar + 2)
            if value is None:
                bars.append(BandBar(name, yy, x(0), 0, x(0) + 4, f"{name} undefined", "", False, j + 1))
                continue
            start, end = sorted((x(0), x(value)))
            bars.append(
                BandBar(
                    name,
                    yy,
                    start,
                    max(end - start, 1),
                    max(end, x(0)) + 4,
                    f"{name} {value:.2f}",
                    f"{name} = {value:.3f} ({describe(value)})",
                    True,
                    j + 1,
                )
            )
        drawn_rows.append(BandRow(row_title, y, tuple(bars)))
    return BandChart(
        width=x0 + width + 60,
        height=top + len(rows) * row_height + 12,
        label_x=x0 - 8,
        top=top,
        zero_x=x(0),
        plot_bottom=top + len(rows) * row_height + 4,
        plot_height=len(rows) * row_height + 4,
        bar_height=bar,
        bands=tuple(drawn_bands),
        rows=tuple(drawn_rows),
        series=tuple(series),
        title=title,
    )


# ------------------------------------------------------------------- heat scale and share lines

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
        LegendStop(
            offset=f"{100 * i / steps:.0f}%",
            colour=heat(i / steps).background,
            label=percent_text(i / steps, 0),
            x=round(width * i / steps, 1),
        )
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
class AxisTick:
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
    y_ticks: list[AxisTick]
    polyline: str


def shares_line(
    values: Sequence[float | None], sds: Sequence[float | None] | None = None, *, width: int = 460, height: int = 260
) -> LineChart | None:
    """Shares at n = 1..N on a 0-100% axis, each point with its ± SD whisker (ASR@n of a V3AST
    system); None without values."""
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
    for n, (value, sd) in enumerate(zip(values, sds or [None] * len(values)), start=1):
        if value is None:
            continue
        points.append(
            Point(
                n=n,
                x=round(x_of(n), 1),
                y=y_of(value),
                label=percent_text(value),
                sd_top=None if sd is None else y_of(value + sd),
                sd_bottom=None if sd is None else y_of(value - sd),
                sd_label="" if sd is None else f"± {percentage_points(sd)}",
            )
        )
    return LineChart(
        width=width,
        height=height,
        left=left,
        top=top,
        right=right,
        bottom=bottom,
        points=points,
        y_ticks=[AxisTick(position=y_of(share), label=percent_text(share, 0)) for share in (0, 0.25, 0.5, 0.75, 1.0)],
        polyline=" ".join(f"{p.x},{p.y}" for p in points),
    )
