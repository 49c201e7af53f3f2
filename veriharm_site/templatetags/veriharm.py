from typing import Any

from django import template

from veriharm_site.intervals import Interval, interval_text, percent_text

register = template.Library()


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    """Look up a key in a dict from a template."""
    if mapping is None:
        return None
    return mapping.get(key)


@register.filter
def percent(value: float | None, digits: int = 1) -> str:
    return percent_text(value, digits)


@register.filter
def interval(value: Interval | None) -> str:
    """A 95% interval as "12.3–45.6%"; "" without one (also for a missing object's attribute)."""
    return interval_text(value) if isinstance(value, Interval) else ""


@register.simple_tag(takes_context=True)
def render_panel(context: template.Context, panel: Any) -> str:
    """Render a panel's read model (`candidates.hooks.panels.Panel`) with its template; no queries here,
    the view built it. The page's context (csrf_token, can, request) stays visible to it."""
    # Only ever rendered from a template, so the context has one.
    assert context.template is not None
    panel_template = context.template.engine.get_template(panel.template)
    with context.push(**panel.fields()):
        return panel_template.render(context)
