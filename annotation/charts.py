"""Inline SVG charts of study results (Figure 3 and agreement), rendered on the server.

No chart library: pages must work without any CDN. Every mark carries its number as text and
categories differ by pattern as well as colour, for colour-blind readers.
"""
from __future__ import annotations

from collections.abc import Sequence
from html import escape

from django.utils.safestring import SafeString, mark_safe

from .statistics import LANDIS_KOCH, Prediction, landis_koch

VALID = "#1f7a4d"
INVALID = "#b4472a"
NEUTRAL = "#2457c5"
MUTED = "#5b6474"
LINE = "#dde1e8"

_DEFS = (
    '<defs><pattern id="{id}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
    '<rect width="6" height="6" fill="{colour}"/><line x1="0" y1="0" x2="0" y2="6" stroke="#fff" stroke-width="2" '
    'stroke-opacity=".45"/></pattern></defs>'
)


def _svg(width: int, height: int, title: str, body: Sequence[str], defs: str = "") -> SafeString:
    # Everything interpolated into `body` is escaped by the callers (via _text or numbers).
    return mark_safe(
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'style="max-width:100%;height:auto" xmlns="http://www.w3.org/2000/svg" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>{defs}{''.join(body)}</svg>"
    )


def _text(x: float, y: float, content: str, *, anchor: str = "start", size: int = 12, weight: str = "normal",
          fill: str = "#1d2330") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" font-weight="{weight}" '
        f'fill="{fill}" font-family="system-ui, sans-serif">{escape(content)}</text>'
    )


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"


def confusion_matrix_svg(p: Prediction) -> SafeString:
    """Rows: the group (top = predicted valid); columns: the human majority Valid_agg."""
    cells = ((p.tp, p.fp), (p.fn, p.tn))
    correct = ((True, False), (False, True))
    most = max(1, p.tp, p.fp, p.fn, p.tn)
    x0, y0, w, h = 170, 46, 130, 70
    body = [
        _text(x0 + w, 18, "Human majority (Valid_agg)", anchor="middle", weight="600"),
        _text(x0 + w / 2, 38, "valid", anchor="middle"),
        _text(x0 + 1.5 * w, 38, "invalid", anchor="middle"),
        _text(x0 - 10, y0 + h / 2 - 4, "Top-K", anchor="end", weight="600"),
        _text(x0 - 10, y0 + h / 2 + 12, "predicted valid", anchor="end", size=11, fill=MUTED),
        _text(x0 - 10, y0 + 1.5 * h - 4, "Bottom-K", anchor="end", weight="600"),
        _text(x0 - 10, y0 + 1.5 * h + 12, "predicted invalid", anchor="end", size=11, fill=MUTED),
    ]
    names = (("TP", "FP"), ("FN", "TN"))
    for r in range(2):
        row_total = sum(cells[r])
        for c in range(2):
            n = cells[r][c]
            colour = VALID if correct[r][c] else INVALID
            opacity = 0.12 + 0.6 * n / most
            x, y = x0 + c * w, y0 + r * h
            share = f"{n / row_total * 100:.0f}% of row" if row_total else "–"
            body += [
                f'<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="{colour}" fill-opacity="{opacity:.2f}" '
                f'stroke="#fff" stroke-width="2"><title>{names[r][c]}: {n}</title></rect>',
                _text(x + w / 2, y + 32, str(n), anchor="middle", size=22, weight="700"),
                _text(x + w / 2, y + 52, f"{names[r][c]} · {share}", anchor="middle", size=11),
            ]
    return _svg(x0 + 2 * w + 10, y0 + 2 * h + 10, "Confusion matrix: group against human validity", body)


def metric_bars_svg(p: Prediction) -> SafeString:
    metrics = (("Accuracy", p.accuracy), ("Precision", p.precision), ("Recall", p.recall))
    x0, width, bar, gap = 90, 300, 22, 12
    body = []
    for i, (name, value) in enumerate(metrics):
        y = 10 + i * (bar + gap)
        body.append(_text(x0 - 8, y + 16, name, anchor="end"))
        body.append(f'<rect x="{x0}" y="{y}" width="{width}" height="{bar}" fill="{LINE}"/>')
        if value is not None:
            body.append(f'<rect x="{x0}" y="{y}" width="{width * value:.1f}" height="{bar}" fill="{NEUTRAL}"/>')
        body.append(_text(x0 + width + 8, y + 16, _pct(value), weight="700"))
    return _svg(x0 + width + 60, 10 + 3 * (bar + gap), "Top-K as a predictor of human validity", body)


def validity_by_group_svg(p: Prediction) -> SafeString:
    """Figure 3(b): the share of human-valid items in the top and in the bottom group."""
    groups = (("Top-K", p.tp, p.fp), ("Bottom-K", p.fn, p.tn))
    x0, width, bar, gap = 90, 260, 30, 16
    defs = _DEFS.format(id="invalid-hatch", colour=INVALID)
    body = []
    for i, (name, valid, invalid) in enumerate(groups):
        y = 12 + i * (bar + gap)
        total = valid + invalid
        body.append(_text(x0 - 8, y + 20, name, anchor="end", weight="600"))
        if not total:
            body.append(f'<rect x="{x0}" y="{y}" width="{width}" height="{bar}" fill="{LINE}"/>')
            body.append(_text(x0 + 8, y + 20, "no decided items", fill=MUTED))
            continue
        vw = width * valid / total
        body.append(f'<rect x="{x0}" y="{y}" width="{vw:.1f}" height="{bar}" fill="{VALID}"><title>valid: {valid}</title></rect>')
        body.append(
            f'<rect x="{x0 + vw:.1f}" y="{y}" width="{width - vw:.1f}" height="{bar}" fill="url(#invalid-hatch)">'
            f"<title>invalid: {invalid}</title></rect>"
        )
        # Numbers beside the bar, where a thin segment cannot hide them.
        body.append(_text(x0 + width + 8, y + 13, f"valid {valid / total * 100:.0f}% ({valid})", weight="600",
                          fill=VALID))
        body.append(_text(x0 + width + 8, y + 27, f"invalid {invalid / total * 100:.0f}% ({invalid})", fill=INVALID))
    body.append(f'<rect x="{x0}" y="{12 + 2 * (bar + gap)}" width="12" height="12" fill="{VALID}"/>')
    body.append(_text(x0 + 16, 22 + 2 * (bar + gap), "valid", size=11))
    body.append(f'<rect x="{x0 + 70}" y="{12 + 2 * (bar + gap)}" width="12" height="12" fill="url(#invalid-hatch)"/>')
    body.append(_text(x0 + 86, 22 + 2 * (bar + gap), "invalid (hatched)", size=11))
    return _svg(x0 + width + 140, 30 + 2 * (bar + gap), "Human validity within the top and bottom groups", body, defs)


def agreement_svg(rows: Sequence[tuple[str, float | None, float | None]]) -> SafeString:
    """(title, Fleiss' kappa, Krippendorff's alpha) per measure, on a -0.2..1 axis with Landis-Koch bands."""
    lo, hi = -0.2, 1.0
    x0, width, bar = 170, 560, 11

    def x(value: float) -> float:
        return x0 + width * (min(max(value, lo), hi) - lo) / (hi - lo)

    body = []
    top = 22
    previous = lo
    for upper, band in (*LANDIS_KOCH, (hi, "almost perfect")):
        shade = "#f3f5f8" if band in ("poor", "fair", "substantial") else "#fff"
        body.append(f'<rect x="{x(previous):.1f}" y="{top}" width="{x(upper) - x(previous):.1f}" '
                    f'height="{len(rows) * 34 + 4}" fill="{shade}"/>')
        body.append(_text((x(previous) + x(upper)) / 2, top - 6, band, anchor="middle", size=10, fill=MUTED))
        previous = upper
    body.append(f'<line x1="{x(0):.1f}" y1="{top}" x2="{x(0):.1f}" y2="{top + len(rows) * 34 + 4}" stroke="{MUTED}"/>')
    for i, (title, kappa, alpha) in enumerate(rows):
        y = top + 4 + i * 34
        body.append(_text(x0 - 8, y + 17, title, anchor="end", size=11))
        for j, (name, value, fill) in enumerate((("κ", kappa, NEUTRAL), ("α", alpha, "url(#alpha-hatch)"))):
            yy = y + j * (bar + 2)
            if value is None:
                body.append(_text(x(0) + 4, yy + 9, f"{name} undefined", size=10, fill=MUTED))
                continue
            start, end = sorted((x(0), x(value)))
            body.append(f'<rect x="{start:.1f}" y="{yy}" width="{max(end - start, 1):.1f}" height="{bar}" fill="{fill}">'
                        f"<title>{name} = {value:.3f} ({landis_koch(value)})</title></rect>")
            body.append(_text(max(end, x(0)) + 4, yy + 9, f"{name} {value:.2f}", size=10))
    defs = _DEFS.format(id="alpha-hatch", colour="#7a4fb5")
    return _svg(x0 + width + 60, top + len(rows) * 34 + 12,
                "Agreement: Fleiss' kappa and Krippendorff's alpha with Landis-Koch bands", body, defs)
