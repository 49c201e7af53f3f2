"""Filters of the trial page's transcript and configuration (`evaluation.results.transcript_view`)."""

from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from evaluation.results import transcript_view

register = template.Library()


@register.filter
def headline(step: object) -> transcript_view.Headline:
    return transcript_view.headline(getattr(step, "command", ""), getattr(step, "content", ""))


@register.filter
def marked(text: str, search: str = "") -> SafeString:
    return transcript_view.marked(text or "", search or "")


@register.filter
def readable(text: str, search: str = "") -> SafeString:
    """The text escaped (matches of `search` marked), each long JSON literal in it indented and
    folded on its own."""
    html = []
    for kind, piece in transcript_view.embedded_json(text or ""):
        shown = transcript_view.marked(piece, search or "")
        if kind == "json":
            lines = piece.count("\n") + 1
            html.append(
                format_html(
                    '<details class="json" data-testid="embedded-json"><summary>JSON, {} lines</summary>{}</details>',
                    lines,
                    shown,
                )
            )
        else:
            html.append(shown)
    return mark_safe("".join(html))  # noqa: S308 - each piece is escaped above


@register.filter
def found_beyond(step: object, search: str) -> str:
    """Where a step holds `search` when its line does not show it: the words around it."""
    command, content = getattr(step, "command", ""), getattr(step, "content", "")
    if search.lower() in transcript_view.headline(command, content).text.lower():
        return ""
    return transcript_view.snippet(command, search) or transcript_view.snippet(content, search)


@register.filter
def page_of(position: int, page_size: int) -> int:
    """The page of the whole transcript a step at `position` (from 0) sits on."""
    return position // page_size + 1
