"""Every HTML form and every link parameter of the site, found by walking the pages as each role,
sent back with hostile values.

The schema walk covers the API; the pages have their own forms (labels, decisions, study settings,
launches, filters) and links that carry parameters (pages, filters, the way back to an item),
reachable only by following links. Each field of each form gets a NUL, a lone surrogate, a number
past 64 bits and text past every size limit: never a 500, and a POST carrying text the database
cannot store or text over the limits is refused with nothing changed. Each parameter of each link
gets the same and a few wrong shapes besides (a path, a word, a negative number): never a 500.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import parse_qsl, quote, urljoin, urlsplit

import pytest
from django.db import transaction
from django.test import Client

from .seed import seed, table_counts

ROLES = ["annotator", "viewer", "curator", "admin"]
START = ["/", "/candidates/", "/annotation/", "/evaluation/", "/evaluation/v3ast/"]
# Pages not worth walking: the admin has its own forms and checks; exports are files, not pages.
SKIP_PREFIXES = ("/admin/", "/logout/", "/api/", "/static/")
SKIP_PARTS = ("export", "download", ".csv", ".json", ".zip", ".tar", ".eval")
MAX_PAGES = 200
# Values no field may store (NUL, a lone surrogate), a number no column holds, and text over every limit.
TEXT_REFUSED = {"nul": "bad\x00text", "surrogate": "bad\ud800text", "oversized": "x" * 200_000}
HUGE = "9223372036854775808"
# Beside those, shapes a link's parameter may be given by hand instead of the page's own value.
WRONG_SHAPES = {"path": "a/b", "word": "abc", "negative": "-1"}
TYPED = {"text", "search", "number", "hidden", "email", "url", "date", "datetime-local", "textarea", "select", ""}


@dataclass
class Form:
    page: str
    method: str
    action: str
    fields: list[tuple[str, str, str]] = field(default_factory=list)  # (name, type, value)

    def key(self) -> tuple:
        return self.method, _shape(self.action), tuple(sorted(name for name, _, _ in self.fields))


class _Page(HTMLParser):
    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.links: list[str] = []
        self.forms: list[Form] = []
        self._form: Form | None = None
        self._textarea: tuple[str, list[str]] | None = None
        self._select: tuple[str, list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "a" and a.get("href"):
            self.links.append(urljoin(self.url, a["href"]))
        elif tag == "form":
            self._form = Form(self.url, a.get("method", "get").lower(), urljoin(self.url, a.get("action") or self.url))
        elif self._form is not None and tag in ("input", "button") and a.get("name"):
            kind = a.get("type", "text" if tag == "input" else "submit").lower()
            if kind in ("checkbox", "radio") and "checked" not in a:
                return
            self._form.fields.append((a["name"], kind, a.get("value", "")))
        elif self._form is not None and tag == "textarea" and a.get("name"):
            self._textarea = (a["name"], [])
        elif self._form is not None and tag == "select" and a.get("name"):
            self._select = (a["name"], [])
        elif self._select is not None and tag == "option":
            self._select[1].append(a.get("value", ""))

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._textarea[1].append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea" and self._textarea and self._form:
            self._form.fields.append((self._textarea[0], "textarea", "".join(self._textarea[1])))
            self._textarea = None
        elif tag == "select" and self._select and self._form:
            options = self._select[1]
            self._form.fields.append((self._select[0], "select", options[0] if options else ""))
            self._select = None
        elif tag == "form" and self._form is not None:
            self.forms.append(self._form)
            self._form = None


def _shape(url: str) -> str:
    """The route of a URL with its ids blurred, so one form per route is tried, not one per object."""
    path = urlsplit(url).path
    return "/".join("<id>" if part.isdigit() or len(part) > 20 else part for part in path.split("/"))


@dataclass
class Walk:
    forms: list[Form]
    links: list[str]  # one link with parameters per route and set of parameter names
    pages: int


def _walk(client: Client, starts: list[str], problems: list[str]) -> Walk:
    seen: set[str] = set()
    shapes: dict[str, int] = {}
    queue = [*START, *starts]
    forms: dict[tuple, Form] = {}
    links: dict[tuple, str] = {}
    while queue and len(seen) < MAX_PAGES:
        url = queue.pop(0)
        parts = urlsplit(url)
        if parts.netloc not in ("", "testserver"):
            continue
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        if path in seen or parts.path.startswith(SKIP_PREFIXES) or any(p in path for p in SKIP_PARTS):
            continue
        # A few pages per route are enough: the ranking links to hundreds of candidates.
        shape = _shape(parts.path) + ("?" if parts.query else "")
        if shapes.get(shape, 0) >= 3:
            continue
        shapes[shape] = shapes.get(shape, 0) + 1
        seen.add(path)
        response = client.get(path)
        if response.status_code >= 500:
            problems.append(f"GET {path} -> {response.status_code}")
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
            continue
        page = _Page("http://testserver" + path)
        page.feed(response.content.decode())
        queue.extend(page.links)
        for link in page.links:
            parts = urlsplit(link)
            if parts.query and parts.netloc in ("", "testserver") and not parts.path.startswith(SKIP_PREFIXES):
                names = tuple(sorted({name for name, _ in parse_qsl(parts.query, keep_blank_values=True)}))
                links.setdefault((_shape(parts.path), names), link)
        for form in page.forms:
            forms.setdefault(form.key(), form)
    return Walk(list(forms.values()), list(links.values()), len(seen))


def _encode(pairs: list[tuple[str, str]]) -> str:
    return "&".join(f"{quote(k)}={quote(v.encode('utf-8', 'surrogatepass'))}" for k, v in pairs)


def _variants(form: Form) -> Iterator[tuple[str, str, bool, str]]:
    """(field, what, must be refused, encoded data) for each hostile value in each field."""
    for index, (name, kind, _) in enumerate(form.fields):
        if kind not in TYPED or name == "csrfmiddlewaretoken":
            continue
        values = dict(TEXT_REFUSED, huge=HUGE)
        for what, value in values.items():
            pairs = [(n, value if i == index else v) for i, (n, _, v) in enumerate(form.fields)]
            yield name, what, what in TEXT_REFUSED, _encode(pairs)


def _walk_as(role: str) -> tuple[Client, Walk, list[str]]:
    seeded = seed()
    client = Client(raise_request_exception=False)
    client.force_login(seeded.users[role])
    # Pages reached by a POST or a token, not by a link: the claimed item, and one object of each kind.
    starts = [
        f"/annotation/s/{seeded.study}/i/{seeded.token}/",
        f"/annotation/s/{seeded.study}/labels/",
        f"/annotation/studies/{seeded.study}/",
        f"/candidates/c/{seeded.candidate}/",
        f"/evaluation/runs/{seeded.run}/",
        f"/evaluation/trials/{seeded.trial}/",
    ]
    problems: list[str] = []
    return client, _walk(client, starts, problems), problems


@pytest.mark.parametrize("role", ROLES)
def test_every_page_form_refuses_hostile_values_without_a_500_or_a_change(db, role):
    client, walk, problems = _walk_as(role)
    forms, pages = walk.forms, walk.pages
    # An annotator's site is the studies, the item page and their own labels.
    assert pages >= (3 if role == "annotator" else 10) and forms, f"the walk found {pages} pages and {len(forms)} forms"
    sent = 0
    # Each submission is rolled back afterwards, so each starts from these counts.
    before = table_counts()
    for form in forms:
        path = urlsplit(form.action).path
        for name, what, refuse, data in _variants(form):
            with transaction.atomic():
                if form.method == "post":
                    response = client.generic("POST", path, data, content_type="application/x-www-form-urlencoded")
                else:
                    response = client.get(path, QUERY_STRING=data)
                after = table_counts() if form.method == "post" and refuse else before
                transaction.set_rollback(True)
            sent += 1
            where = f"{form.method.upper()} {path} (form on {urlsplit(form.page).path}) {name}={what}"
            if response.status_code >= 500:
                problems.append(f"{where} -> {response.status_code}")
            elif form.method == "post" and refuse and after != before:
                changed = sorted(t for t in after if after[t] != before[t])
                problems.append(f"{where} -> {response.status_code}, accepted: rows changed in {changed}")
    # Forms with nothing but a button (start, skip, log out) take no hostile value.
    typed = [f for f in forms if any(kind in TYPED and name != "csrfmiddlewaretoken" for name, kind, _ in f.fields)]
    assert sent >= 4 * len(typed), f"only {sent} hostile submissions built from {len(typed)} forms with fields"
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("role", ROLES)
def test_every_link_parameter_takes_hostile_values_without_a_500(db, role):
    client, walk, problems = _walk_as(role)
    # Every role follows links with parameters: pages of a list, filters, the way back to an item.
    assert walk.links, "the walk found no link with parameters"
    values = {**TEXT_REFUSED, "huge": HUGE, **WRONG_SHAPES}
    sent = 0
    for link in walk.links:
        parts = urlsplit(link)
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        for index, (name, _) in enumerate(pairs):
            for what, value in values.items():
                data = _encode([(n, value if i == index else v) for i, (n, v) in enumerate(pairs)])
                response = client.get(parts.path, QUERY_STRING=data)
                sent += 1
                if response.status_code >= 500:
                    problems.append(f"GET {parts.path}?{parts.query} with {name}={what} -> {response.status_code}")
    assert sent >= len(values) * len(walk.links)
    assert problems == [], "\n".join(problems)
