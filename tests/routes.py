"""The site's routes as text, for the tests that walk every one of them."""

from __future__ import annotations

import re
from collections.abc import Iterator

from django.urls import URLPattern, URLResolver, get_resolver

# A path parameter: its converter (None for the default, str) and its name.
PARAMETER = re.compile(r"<(?:(\w+):)?(\w+)>")


def site_routes(patterns=None, prefix: str = "") -> Iterator[str]:
    """Every route of the site (the admin's included), each as its full pattern text."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            yield from site_routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern)
