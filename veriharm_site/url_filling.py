"""Links to many objects of one route, reversed once: a page with hundreds of rows (a candidate's
trials, the review queue's strip) would otherwise spend more on reversing a URL per row than on
the rest of the row."""

from __future__ import annotations

from collections.abc import Callable

from django.urls import reverse

_SLOT = 987654321  # no id or rank gets this large: its digits mark where the argument goes


def url_filler(viewname: str, suffix: str = "") -> Callable[[int], str]:
    """`url_filler(name)(n)` is `reverse(name, args=[n]) + suffix`, for a route of one int argument.
    Made for one request: the URL's prefix is that of the request being answered."""
    head, _, tail = reverse(viewname, args=[_SLOT]).partition(str(_SLOT))
    return lambda value: f"{head}{int(value)}{tail}{suffix}"
