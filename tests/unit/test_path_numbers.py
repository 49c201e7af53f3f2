"""A numeric path parameter past what the database holds matches no route (the site's 404), on every
database: SQLite, the embedded default, raises OverflowError on such a number inside a query."""

from __future__ import annotations

import pytest
from django.urls import Resolver404, resolve, reverse

from tests.routes import PARAMETER, site_routes


def test_every_numeric_path_parameter_is_a_bounded_number():
    kinds = [
        (route, kind)
        for route in site_routes()
        if not route.startswith("admin/")
        for kind, _ in PARAMETER.findall(route)
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
