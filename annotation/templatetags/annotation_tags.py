"""Small formatting filters for annotation pages."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from annotation.studies.measures.statistics import Coefficient

register = template.Library()


@register.filter
def answer(value: bool | None) -> SafeString:
    """Yes / no / undecided, as a symbol and a word (not colour alone)."""
    if value is None:
        return mark_safe('<span class="ans ans-none" title="undecided">–</span>')
    if value:
        return mark_safe('<span class="ans ans-yes" title="yes">✓ yes</span>')
    return mark_safe('<span class="ans ans-no" title="no">✗ no</span>')


@register.filter
def mark(value: bool) -> str:
    return "✓" if value else "✗"


@register.filter
def coefficient(c: Coefficient | None, digits: int = 3) -> SafeString:
    if c is None or c.value is None:
        note = c.note if c is not None else ""
        return format_html('<span class="hint" title="{}">undefined</span>', note)
    return format_html("<b>{}</b>", f"{c.value:.{digits}f}")


@register.filter
def majority_of(row: Any, measure: str) -> bool | None:
    """row|majority_of:"c1" is row.majority("c1"), which templates cannot call with an argument."""
    return row.majority(measure)


@register.filter
def split_of(row: Any, measure: str) -> str:
    """'2–1': yes and no votes on one measure."""
    yes, no = row.splits[measure]
    return f"{yes}–{no}"


@register.filter
def split_title(row: Any, measure: str) -> str:
    """What a split counts, for its tooltip: '2 yes, 1 no', and for Valid whose votes they are."""
    yes, no = row.splits[measure]
    votes = f"{yes} yes, {no} no"
    if measure == "valid":
        return f"{votes}: each annotator's own Valid (C1 and C2 and C3); the majority is of these votes"
    return f"{votes}: the annotators' votes on {measure.upper()}"
