"""Who may call what: every route of the site and every HTTP method it accepts, for anonymous and
each role, against one explicit table.

A route missing from the table fails, a row for a route that no longer exists fails, and so does
any check loosened or tightened: "allowed" is any answer but 401/403 (and, for a page, not a
redirect to a login page); "refused" is 401/403 (or, anonymous on a page, the login redirect),
and a refused request changes no row of any table. Each request runs in a transaction rolled back
afterwards, so what one accepts (a delete, a freeze) does not change what the next one meets, and
the work an accepted launch would queue (transaction.on_commit) is never sent.

To add a route: one row, `("url-name", "METHOD", ROLES)`. HEAD follows GET and OPTIONS is left
out; a function view is called with GET only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.db import transaction
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient

from candidates.models import ImportJob
from tests.conftest import make_user
from tests.hostile.seed import Seeded, seed, table_counts
from veriharm_site.roles import ADMIN_APPS, VIEWER

ANON, ANN, VIEW, CUR, ADM = "anonymous", "annotator", "viewer", "curator", "admin"
ROLES = (ANON, ANN, VIEW, CUR, ADM)

EVERYONE = frozenset(ROLES)
SIGNED_IN = frozenset({ANN, VIEW, CUR, ADM})
# annotation.annotate. Admins hold every permission too, but no study ever has them as a member
# (study members cannot see the ranking), so past the list of their studies they meet 404.
ANNOTATORS = frozenset({ANN, ADM})
READERS = frozenset({VIEW, CUR, ADM})  # candidates.view_ranking / evaluation.view_evaluations / annotation.view_results
CURATORS = frozenset({CUR, ADM})  # candidates.curate, import_pipeline, annotation.manage_studies
ADMINS = frozenset({ADM})  # evaluation.run_evaluations, the Django admin
NOBODY: frozenset[str] = frozenset()

# (url name, method, the roles that get through). Reading is for READERS, changing for CURATORS,
# running agents for ADMINS; annotators reach only their blind pages.
EXPECTED: list[tuple[str, str, frozenset[str]]] = [
    # The site
    ("home", "GET", SIGNED_IN),
    ("favicon", "GET", EVERYONE),
    ("login", "GET", EVERYONE),
    ("login", "POST", EVERYONE),
    ("login", "PUT", EVERYONE),
    ("logout", "POST", EVERYONE),
    ("schema", "GET", SIGNED_IN),
    ("api-docs", "GET", SIGNED_IN),
    ("metrics", "GET", NOBODY),  # a scraper's token or address, never a role (tests/fleet/test_prometheus_metrics.py)
    # Candidates: pages
    ("candidates:ranking", "GET", READERS),
    ("candidates:detail", "GET", READERS),
    ("candidates:detail", "POST", CURATORS),  # a decision from the candidate's page
    ("candidates:highlight-css", "GET", EVERYONE),
    ("candidates:import", "GET", CURATORS),
    ("candidates:import", "POST", CURATORS),
    ("candidates:import-job", "GET", CURATORS),
    ("candidates:export", "GET", CURATORS),
    ("candidates:review-queue", "GET", CURATORS),
    ("candidates:review-queue", "POST", CURATORS),  # decide the ticked rows (a confirm step, then the batch)
    ("candidates:review", "GET", CURATORS),
    ("candidates:review", "POST", CURATORS),
    ("candidates:revise", "GET", CURATORS),
    ("candidates:revise", "POST", CURATORS),
    ("candidates:releases", "GET", READERS),
    ("candidates:releases", "POST", CURATORS),
    ("candidates:release-import", "POST", CURATORS),
    ("candidates:release", "GET", READERS),
    ("candidates:release-freeze", "GET", CURATORS),  # the confirmation page
    ("candidates:release-freeze", "POST", CURATORS),
    ("candidates:release-description", "POST", CURATORS),
    ("candidates:release-delete", "GET", CURATORS),  # the confirmation page
    ("candidates:release-delete", "POST", CURATORS),
    ("candidates:release-jsonl", "GET", READERS),
    ("candidates:release-bundle", "GET", READERS),
    ("candidates:release-inspect", "GET", READERS),
    ("candidates:release-harbor", "GET", READERS),
    ("candidates:search-report", "GET", READERS),
    ("candidates:descriptive", "GET", READERS),
    # Candidates: API
    ("api-candidates", "GET", READERS),
    ("api-pipeline-format-schema", "GET", READERS),
    ("api-candidate-detail", "GET", READERS),
    ("api-candidates-import", "POST", CURATORS),
    ("api-candidates-import-job", "GET", CURATORS),
    ("api-candidates-export", "GET", CURATORS),
    ("api-decisions", "GET", READERS),
    ("api-decisions", "POST", CURATORS),
    ("api-revisions", "GET", READERS),
    ("api-revisions", "POST", CURATORS),
    ("api-review-queue", "GET", CURATORS),
    ("api-review-decisions-bulk", "POST", CURATORS),
    ("api-releases", "GET", READERS),
    ("api-releases", "POST", CURATORS),
    ("api-release-import", "POST", CURATORS),
    ("api-release", "GET", READERS),
    ("api-release", "PATCH", CURATORS),
    ("api-release", "DELETE", CURATORS),
    ("api-release-freeze", "POST", CURATORS),
    ("api-release-jsonl", "GET", READERS),
    ("api-release-bundle", "GET", READERS),
    ("api-release-inspect", "GET", READERS),
    ("api-release-harbor", "GET", READERS),
    ("api-search-report", "GET", READERS),
    ("api-descriptive", "GET", READERS),
    # Evaluation: pages
    ("evaluation:runs", "GET", READERS),
    ("evaluation:launch", "GET", ADMINS),
    ("evaluation:launch", "POST", ADMINS),
    ("evaluation:run-import", "GET", ADMINS),
    ("evaluation:run-import", "POST", ADMINS),
    ("evaluation:run", "GET", READERS),
    ("evaluation:run-progress", "GET", READERS),
    ("evaluation:run-cancel", "GET", ADMINS),  # the confirmation page
    ("evaluation:run-cancel", "POST", ADMINS),
    ("evaluation:run-rerun", "GET", ADMINS),  # the confirmation page
    ("evaluation:run-rerun", "POST", ADMINS),
    ("evaluation:run-retry", "GET", ADMINS),  # the form: endings and their counts
    ("evaluation:run-retry", "POST", ADMINS),
    ("evaluation:run-metrics", "GET", READERS),
    ("evaluation:run-compare", "GET", READERS),
    ("evaluation:run-atif", "GET", READERS),  # the transcripts the trial pages show readers
    ("evaluation:run-inspect", "GET", READERS),
    ("evaluation:trial", "GET", READERS),
    ("evaluation:trial-final-state", "GET", ADMINS),
    ("evaluation:workers", "GET", ADMINS),
    ("evaluation:v3ast-runs", "GET", READERS),
    ("evaluation:v3ast-matrix", "GET", READERS),
    ("evaluation:v3ast-system", "GET", READERS),
    ("evaluation:v3ast-task", "GET", READERS),
    ("evaluation:generation-runs", "GET", READERS),  # candidates.view_ranking: judges and scores
    ("evaluation:generation-launch", "GET", ADMINS),
    ("evaluation:generation-launch", "POST", ADMINS),
    ("evaluation:generation-run", "GET", READERS),
    ("evaluation:generation-run-progress", "GET", READERS),
    ("evaluation:generation-run-cancel", "GET", ADMINS),  # the confirmation page
    ("evaluation:generation-run-cancel", "POST", ADMINS),
    ("evaluation:generation-search", "GET", READERS),
    ("evaluation:generation-proposal-text", "GET", READERS),
    ("evaluation:candidate-rerun", "GET", ADMINS),  # the confirmation page
    ("evaluation:candidate-rerun", "POST", ADMINS),
    ("evaluation:candidate-rescore", "POST", ADMINS),
    # Evaluation: API
    ("api-evaluation-runs", "GET", READERS),
    ("api-evaluation-runs", "POST", ADMINS),
    ("api-evaluation-run-import", "POST", ADMINS),
    ("api-evaluation-run", "GET", READERS),
    ("api-evaluation-run-progress", "GET", READERS),
    ("api-evaluation-run-cancel", "POST", ADMINS),
    ("api-evaluation-run-rerun", "POST", ADMINS),
    ("api-evaluation-run-retry", "POST", ADMINS),
    ("api-evaluation-run-metrics", "GET", READERS),
    ("api-evaluation-run-compare", "GET", READERS),
    ("api-evaluation-run-atif", "GET", READERS),
    ("api-evaluation-run-inspect", "GET", READERS),
    ("api-evaluation-run-trials", "GET", READERS),
    ("api-evaluation-v3ast-matrix", "GET", READERS),
    ("api-evaluation-v3ast-system", "GET", READERS),
    ("api-evaluation-trial", "GET", READERS),
    ("api-evaluation-workers", "GET", ADMINS),
    ("api-generation-runs", "POST", ADMINS),
    ("api-generation-run", "GET", ADMINS),
    ("api-generation-run-cancel", "POST", ADMINS),
    ("api-evaluation-agents", "GET", READERS),
    ("api-evaluation-candidate-results", "GET", READERS),
    ("api-evaluation-candidate-rerun", "POST", ADMINS),
    ("api-evaluation-candidate-rescores", "GET", READERS),
    ("api-evaluation-candidate-rescores", "POST", ADMINS),
    # Annotation: the annotator's blind pages and API
    ("annotation:home", "GET", ANNOTATORS),
    ("annotation:next", "POST", ANNOTATORS),
    ("annotation:item", "GET", ANNOTATORS),
    ("annotation:item", "POST", ANNOTATORS),
    ("annotation:done", "GET", ANNOTATORS),
    ("annotation:labels", "GET", ANNOTATORS),
    ("annotation:guidelines", "GET", ANNOTATORS),
    ("annotation:guidelines", "POST", ANNOTATORS),
    ("annotation:next-skipped", "POST", ANNOTATORS),
    ("annotation:preferences", "POST", ANNOTATORS),
    ("annotation:skip", "POST", ANNOTATORS),
    ("annotation:skipped-list", "GET", ANNOTATORS),
    ("annotation:return", "POST", ANNOTATORS),
    ("api-annotation-my-skipped", "GET", ANNOTATORS),
    ("api-annotation-return", "POST", ANNOTATORS),
    ("api-annotation-skip", "POST", ANNOTATORS),
    ("api-annotation-my-studies", "GET", ANNOTATORS),
    ("api-annotation-next", "POST", ANNOTATORS),
    ("api-annotation-progress", "GET", ANNOTATORS),
    ("api-annotation-my-labels", "GET", ANNOTATORS),
    ("api-annotation-item", "GET", ANNOTATORS),
    ("api-annotation-label", "POST", ANNOTATORS),
    ("api-annotation-label", "PUT", ANNOTATORS),
    # Annotation: studies, for curators
    ("annotation:studies", "GET", READERS),  # annotation.view_results
    ("annotation:study-create", "GET", CURATORS),
    ("annotation:study-create", "POST", CURATORS),
    ("annotation:study", "GET", READERS),  # annotation.view_results
    ("annotation:study-close", "POST", CURATORS),
    ("annotation:study-reopen", "POST", CURATORS),
    ("annotation:study-members", "POST", CURATORS),
    ("annotation:results", "GET", READERS),  # annotation.view_results
    ("annotation:disagreement", "GET", READERS),  # annotation.view_results
    ("annotation:export", "GET", READERS),  # annotation.view_results
    ("annotation:annotators", "GET", READERS),  # annotation.view_results
    ("annotation:item-review", "GET", READERS),  # annotation.view_results
    ("annotation:item-review", "POST", CURATORS),
    ("annotation:study-guidelines", "POST", CURATORS),
    ("api-annotation-studies", "GET", READERS),  # annotation.view_results
    ("api-annotation-studies", "POST", CURATORS),
    ("api-annotation-study", "GET", READERS),  # annotation.view_results
    ("api-annotation-study-close", "POST", CURATORS),
    ("api-annotation-study-reopen", "POST", CURATORS),
    ("api-annotation-study-items", "GET", READERS),  # annotation.view_results
    ("api-annotation-study-results", "GET", READERS),  # annotation.view_results
    ("api-annotation-study-export", "GET", READERS),  # annotation.view_results
]

# Checks inside a view, on top of its route's: (url name, method, query string, roles).
VARIANTS: list[tuple[str, str, str, frozenset[str]]] = [
    ("annotation:export", "GET", "identities=1", ADMINS),  # annotation.export_identities
    ("api-annotation-study-export", "GET", "identities=1", ADMINS),
]

# The Django admin has its own check (is_staff and model permissions): its index and every
# registered model's list and add pages are for admins only; everyone else is sent to its login.
ADMIN_SITE = ADMINS

# Which seeded object a route's `pk` names.
PK_OF = {
    "candidates:import-job": "import_job",
    "api-candidates-import-job": "import_job",
    "evaluation:trial": "trial",
    "evaluation:trial-final-state": "trial",
    "api-evaluation-trial": "trial",
    "evaluation:generation-search": "generation_search",
    "evaluation:generation-proposal-text": "generation_search",
}
PK_PREFIXES = (
    ("api-generation-", "generation_run"),
    ("evaluation:generation-", "generation_run"),
    ("candidates:release", "release"),
    ("api-release", "release"),
    ("evaluation:", "run"),
    ("api-evaluation-", "run"),
    ("annotation:", "study"),
    ("api-annotation-", "study"),
)
# Query strings a route needs to find its seeded object.
QUERY = {"api-decisions": "candidate", "api-revisions": "candidate"}
# Allowed, but answering 404 for the seeded object: no trial here has a kept final state, and an
# admin is a member of no study.
MAY_BE_MISSING = {("evaluation:trial-final-state", ADM)} | {
    (name, ADM)
    for name, _, roles in EXPECTED
    if roles == ANNOTATORS and name not in ("annotation:home", "api-annotation-my-studies")
}
# Routes whose success is a redirect to the login page.
ENDS_AT_LOGIN = {"logout"}
# Routes outside /api/ that no login opens, so they answer anonymous with 403, not the login page.
NO_LOGIN_PAGE = {"metrics"}


@dataclass(frozen=True)
class Route:
    name: str
    pattern: str
    methods: tuple[str, ...]
    params: tuple[str, ...]

    @property
    def is_api(self) -> bool:
        return self.pattern.startswith("api/")


def _routes(patterns: list[Any], prefix: str = "", namespace: str = "") -> Iterator[tuple[str, str, Any]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            inner = namespace + (f"{entry.namespace}:" if entry.namespace else "")
            yield from _routes(entry.url_patterns, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), namespace + (entry.name or ""), entry.callback


def _methods(callback: Any) -> tuple[str, ...]:
    cls = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
    if cls is None:
        return ("GET",)
    return tuple(m.upper() for m in cls.http_method_names if m not in ("head", "options") and hasattr(cls, m))


def site_routes() -> list[Route]:
    """Every route outside the Django admin, with the methods its view answers."""
    return [
        Route(name, pattern, _methods(callback), tuple(re.findall(r"<(?:\w+:)?(\w+)>", pattern)))
        for pattern, name, callback in _routes(get_resolver().url_patterns)
        if not pattern.startswith("admin/")
    ]


def _pk_source(name: str) -> str:
    if name in PK_OF:
        return PK_OF[name]
    for prefix, source in PK_PREFIXES:
        if name.startswith(prefix):
            return source
    raise AssertionError(f"{name}: which seeded object does its pk name? Add it to PK_OF.")


def url_of(route: Route, seeded: Seeded, import_job: int) -> str:
    objects = {
        "release": seeded.release,
        "run": seeded.run,
        "trial": seeded.trial,
        "study": seeded.study,
        "import_job": import_job,
        "generation_run": seeded.generation_run,
        "generation_search": seeded.generation_search,
    }
    values = {
        "study_id": seeded.study,
        "token": seeded.token,
        "external_id": seeded.candidate,
        "agent": seeded.agent,
        "rank": 1,
        "name": "labels.csv",
        "number": 1,
    }
    kwargs = {p: objects[_pk_source(route.name)] if p == "pk" else values[p] for p in route.params}
    query = f"?{QUERY[route.name]}={seeded.candidate}" if route.name in QUERY else ""
    return reverse(route.name, kwargs=kwargs) + query


def _login_redirect(response: Any) -> bool:
    if response.status_code not in (301, 302):
        return False
    path = urlparse(response["Location"]).path
    return path in (reverse("login"), reverse("admin:login"))


def refused(response: Any, route: str = "") -> bool:
    return response.status_code in (401, 403) or (_login_redirect(response) and route not in ENDS_AT_LOGIN)


@dataclass
class World:
    seeded: Seeded
    import_job: int
    users: dict[str, Any]
    clients: dict[str, APIClient]


@pytest.fixture
def world(db) -> World:
    seeded = seed()
    users = {
        ANN: seeded.users["annotator"],
        VIEW: seeded.users["viewer"],
        CUR: seeded.users["curator"],
        ADM: seeded.users["admin"],
    }
    job = ImportJob.objects.create(token="permission-matrix", created_by=users[CUR])
    clients = {ANON: APIClient(raise_request_exception=False)}
    for role, user in users.items():
        clients[role] = APIClient(raise_request_exception=False)
        clients[role].force_login(user)
    return World(seeded, job.pk, users, clients)


def _send(client: APIClient, method: str, url: str, api: bool, count: bool) -> tuple[Any, bool]:
    """One request, rolled back; with `count`, whether it changed any row count."""
    # An empty body: enough to show an allowed write gets past the check (it answers 400 for
    # what is missing, or acts and is rolled back), and a refused one must change nothing.
    body = {"data": "{}", "content_type": "application/json"} if api and method != "GET" else {}
    with transaction.atomic():
        count = count and method != "GET"
        before = table_counts() if count else None
        response = client.generic(method, url, **body)
        changed = count and table_counts() != before
        transaction.set_rollback(True)
    return response, changed


def test_the_table_names_every_route_and_method_and_nothing_else():
    accepted = {(r.name, m) for r in site_routes() for m in r.methods}
    listed = [(name, method) for name, method, _ in EXPECTED]
    assert len(listed) == len(set(listed)), "a route and method listed twice"
    missing = sorted(accepted - set(listed))
    stale = sorted(set(listed) - accepted)
    assert not missing, "routes and methods with no row in EXPECTED (who may call them?):\n" + "\n".join(
        f"  ({name!r}, {method!r}, <roles>)" for name, method in missing
    )
    assert not stale, "rows in EXPECTED for routes or methods that no longer exist:\n" + "\n".join(
        f"  ({name!r}, {method!r})" for name, method in stale
    )


def test_every_route_and_method_lets_through_exactly_the_roles_in_the_table(world):
    expected = {(name, method): roles for name, method, roles in EXPECTED}
    problems: list[str] = []
    for route in site_routes():
        url = url_of(route, world.seeded, world.import_job)
        for method in route.methods:
            if (route.name, method) in expected:  # else the test above names it
                problems += _check(world, route, method, url, expected[(route.name, method)])
    assert problems == [], f"{len(problems)} permission mismatches:\n" + "\n".join(problems)


def test_checks_within_a_view_let_through_exactly_the_roles_in_the_table(world):
    routes = {route.name: route for route in site_routes()}
    problems: list[str] = []
    for name, method, query, allowed_roles in VARIANTS:
        url = url_of(routes[name], world.seeded, world.import_job)
        problems += _check(world, routes[name], method, f"{url}{'&' if '?' in url else '?'}{query}", allowed_roles)
    assert problems == [], f"{len(problems)} permission mismatches:\n" + "\n".join(problems)


def _check(world: World, route: Route, method: str, url: str, allowed_roles: frozenset[str]) -> list[str]:
    """What is wrong with how `method url` answers each role."""
    problems = []
    for role in ROLES:
        response, changed = _send(world.clients[role], method, url, route.is_api, count=role not in allowed_roles)
        if route.name == "logout" and role != ANON:
            world.clients[role].force_login(world.users[role])  # signed in again for the next route
        where = f"{method} {url} ({route.name}) as {role} -> {response.status_code}"
        if response.status_code >= 500:
            problems.append(f"{where}: a server error")
        elif role in allowed_roles:
            if refused(response, route.name):
                problems.append(f"{where}: refused, but the table lets {role} through")
            elif response.status_code == 404 and (route.name, role) not in MAY_BE_MISSING:
                problems.append(f"{where}: the seeded object was not found (the check went untested)")
        elif not refused(response, route.name):
            problems.append(f"{where}: let through, but the table allows only {sorted(allowed_roles)}")
        elif changed:
            problems.append(f"{where}: refused, yet rows changed")
        elif role == ANON and not route.is_api and route.name not in NO_LOGIN_PAGE and response.status_code != 302:
            problems.append(f"{where}: anonymous on a page should be sent to the login page")
        elif role != ANON and response.status_code != 403:
            problems.append(f"{where}: a signed-in user refused should get 403")
    return problems


def test_the_django_admin_is_for_admins_only(world):
    """Its index and every registered model's list and add pages refuse everyone but admins; admins
    get the index and the list of every model of the apps they manage."""
    urls = {reverse("admin:index"): True}
    for model in admin.site._registry:
        meta = model._meta
        urls[reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")] = meta.app_label in ADMIN_APPS
        urls[reverse(f"admin:{meta.app_label}_{meta.model_name}_add")] = False
    assert len(urls) > 10
    problems = []
    for url, admins_get_it in urls.items():
        for role in ROLES:
            response = world.clients[role].get(url)
            where = f"GET {url} as {role} -> {response.status_code}"
            if role in ADMIN_SITE and admins_get_it and response.status_code != 200:
                problems.append(f"{where}: refused, but admins manage every record here")
            if role not in ADMIN_SITE and not refused(response):
                problems.append(f"{where}: let through, but the Django admin is for admins only")
    assert problems == [], "\n".join(problems)


def test_the_viewer_role_reads_but_holds_no_permission_to_change_anything(db):
    viewer = make_user("view", VIEWER)
    held = {
        f"{p.content_type.app_label}.{p.codename}"
        for p in Permission.objects.filter(group__user=viewer).select_related("content_type")
    }
    assert held == {"candidates.view_ranking", "evaluation.view_evaluations", "annotation.view_results"}
