from typing import Any

from django import template

register = template.Library()


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    """Look up a key in a dict from a template."""
    if mapping is None:
        return None
    return mapping.get(key)


@register.filter
def percent(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "–"
    return f"{value * 100:.{digits}f}%"
