"""A numeric path parameter past what the database holds matches no route (the site's 404), on every
database: SQLite, the embedded default, raises OverflowError on such a number inside a query."""

from __future__ import annotations

import re

import pytest
from django.urls import Resolver404, URLPattern, URLResolver, get_resolver, resolve, reverse

ROUTE_PARAMETER = re.compile(r"<(?:(\w+):)?(\w+)>")


def _routes(patterns, prefix: str = ""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern)


def test_every_numeric_path_parameter_is_a_bounded_number():
    kinds = [
        (route, kind)
        for route in _routes(get_resolver().url_patterns)
        if not route.startswith("admin/")
        for kind, _ in ROUTE_PARAMETER.findall(route)
    ]
    assert sum(kind == "number" for _, kind in kinds) > 40
    assert [route for route, kind in kinds if kind == "int"] == []


@pytest.mark.parametrize("number", ["1" + "0" * 18, str(2**63), "1" + "0" * 20])
def test_a_number_too_large_for_the_database_matches_no_route(number):
    assert resolve("/evaluation/trials/1/final-state.tar.gz").kwargs == {"pk": 1}
    with pytest.raises(Resolver404):
        resolve(f"/evaluation/trials/{number}/final-state.tar.gz")
    with pytest.raises(Resolver404):
        resolve(f"/api/evaluation/runs/{number}/")
    assert reverse("evaluation:trial-final-state", args=[10**18 - 1]).startswith("/evaluation/trials/9999")
