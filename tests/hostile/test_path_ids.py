"""Every page with a number in its path answers a missing object for any number, however large: a 404
(or the method's refusal), never a server error. (The API's routes are walked from its schema, with
huge numbers among the path values: test_schema_walk.py.)"""

from __future__ import annotations

import re

import pytest

from tests.routes import PARAMETER, site_routes

pytestmark = pytest.mark.django_db

# Beyond 64 bits, and a plausible id that does not exist.
IDS = (10**20, 987654321)
# Values for the other kinds of path parameter, so each route is reached.
OTHER = {"str": "nope", "slug": "nope", "path": "nope", "uuid": "00000000-0000-0000-0000-000000000000"}


def _numeric_routes() -> list[str]:
    return sorted(
        {
            route
            for route in site_routes()
            if not route.startswith(("admin/", "api/"))
            and any(kind == "number" for kind, _ in PARAMETER.findall(route))
        }
    )


def _filled(route: str, number: int) -> str:
    def value(match: re.Match) -> str:
        kind = match.group(1) or "str"
        return str(number) if kind == "number" else OTHER.get(kind, "nope")

    return "/" + PARAMETER.sub(value, route).lstrip("^").rstrip("$")


def test_every_numbered_page_answers_a_missing_object_for_any_integer(admin_client_):
    routes = _numeric_routes()
    assert len(routes) > 30  # the walk reaches the app's pages, not an empty list
    failed = []
    for route in routes:
        for number in IDS:
            url = _filled(route, number)
            for method in ("get", "post"):
                answer = getattr(admin_client_, method)(url)
                if answer.status_code >= 500 or (answer.status_code == 200 and method == "get"):
                    failed.append((method, url, answer.status_code))
    assert failed == []
