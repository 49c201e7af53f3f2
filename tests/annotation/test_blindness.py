"""As an annotator, every reachable page and API response is searched for what must stay hidden:
the group, Q, judges, search provenance, candidate ids and other annotators' labels."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from annotation.labelling import services
from annotation.models import Study
from candidates.models import Candidate
from tests.annotation.conftest import AGENTS, JUDGES, PROPOSERS, import_pool
from tests.conftest import make_user
from tests.factories import bashbench_task
from veriharm_site.roles import ANNOTATOR

pytestmark = pytest.mark.django_db

# Words that would name a group, a score or a ranking; the candidates' own texts are chosen free of them.
GROUP_WORDS = re.compile(r"\b(top|bottom|groups?|rank(ed|ing)?|quality|judges?|scores?)\b", re.IGNORECASE)
FORBIDDEN_KEYS = {
    "group",
    "quality",
    "q",
    "rank",
    "rank_at_sampling",
    "q_at_sampling",
    "judge",
    "judgements",
    "judge_sums",
    # The judges beside the annotators on the results (curators and viewers only).
    "judges",
    "valid_agreement",
    "sum_as_predictor",
    "judge_valid_rule",
    "judge_sum_split",
    "judge_kappa_interval",
    "target_agent",
    "proposer",
    "iteration",
    "provenance",
    "candidate",
    "candidate_id",
    "candidate_pk",
    "external_id",
    "stratum",
    "annotator",
    "username",
    "pseudonym",
    "labels",
}
OTHERS_COMMENT = "comment-written-by-someone-else"


def clean_task_indices(n: int) -> list[int]:
    indices = []
    index = 0
    while len(indices) < n:
        task = bashbench_task(index)
        if not GROUP_WORDS.search(task["task_description"]) and not GROUP_WORDS.search(task["private_tests"]):
            indices.append(index)
        index += 1
    return indices


class _Visible(HTMLParser):
    """Text a reader sees plus every attribute value (a class name like tag-top would leak too)."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        self.parts.extend(value for name, value in attrs if value and name != "href")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def visible(html: str) -> str:
    parser = _Visible()
    parser.feed(html)
    return "\n".join(parser.parts)


def walk(value: Any, path: str = "") -> Iterator[tuple[str, str, Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield path, str(key), inner
            yield from walk(inner, f"{path}.{key}")
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from walk(inner, f"{path}[{i}]")


class Leaks:
    def __init__(self, study: Study, others: list) -> None:
        self.markers = [*AGENTS, *PROPOSERS, *JUDGES, "pool-0", OTHERS_COMMENT, *(o.username for o in others)]
        # Q values as numbers of their own: "13.0" inside a timestamp such as 11:03:13.012 is no leak.
        numbers = sorted(
            {n for q in Candidate.objects.values_list("quality", flat=True) for n in (f"{q:.2f}", repr(q))}
        )
        self.numbers = [(n, re.compile(rf"(?<![\d.:]){re.escape(n)}(?![\d])")) for n in numbers]
        self.study = study

    def find(self, url: str, content: bytes, content_type: str) -> list[str]:
        text = content.decode("utf-8", errors="replace")
        found = [f"{url}: {m!r}" for m in self.markers if m in text]
        found += [f"{url}: {n!r}" for n, pattern in self.numbers if pattern.search(text)]
        if content_type.startswith("application/json"):
            for path, key, value in walk(json.loads(text)):
                if key in FORBIDDEN_KEYS:
                    found.append(f"{url}: key {path}.{key}")
                if value in ("top", "bottom"):
                    found.append(f"{url}: value {path}.{key} = {value!r}")
        elif url.startswith("/annotation/") or url == "/":
            words = GROUP_WORDS.findall(visible(text))
            if words:
                found.append(f"{url}: words {words}")
        return found


def url_patterns(resolver: URLResolver, prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            yield from url_patterns(entry, prefix + str(entry.pattern))
        else:
            yield prefix + str(entry.pattern), entry


def every_url(study_id: int, token: str, external_id: str) -> list[str]:
    """Every route of the site with its parameters filled in, except the Django admin."""
    values = {"number": str(study_id), "str": token, "path": external_id, "slug": token}
    urls = []
    for route, _ in url_patterns(get_resolver()):
        if route.startswith("admin/") or route.startswith("^") or "(?P" in route:
            continue
        url = re.sub(
            r"<(?:(\w+):)?(\w+)>", lambda m: "labels.csv" if m[2] == "name" else values.get(m[1] or "str"), route
        )
        urls.append("/" + url)
    return sorted(set(urls))


@pytest.fixture
def blind_setup(make_study):
    import_pool(40, task_indices=clean_task_indices(12))
    me = make_user("me-annotator", ANNOTATOR)
    others = [make_user(f"other-{i}", ANNOTATOR) for i in range(2)]
    study = make_study([me, *others], top_k=10, per_group=4, annotators_per_item=3)
    # The others label everything first, with comments, so there is something to leak.
    for other in others:
        while (a := services.item_claim_next(study.pk, other)) is not None:
            services.label_submit(
                study.pk,
                a.item.token,
                other,
                services.LabelInput(False, True, False, f"{OTHERS_COMMENT} {other.username}"),
            )
    return study, me, others


def test_no_annotator_reachable_response_reveals_hidden_information(blind_setup, client):
    study, me, others = blind_setup
    client.force_login(me)
    client.raise_request_exception = False
    leaks = Leaks(study, others)
    found: list[str] = []
    served = []

    def check(method: str, url: str, **kwargs) -> Any:
        response = getattr(client, method)(url, **kwargs)
        if url.startswith(("/annotation/", "/api/annotation/")):
            assert response.status_code < 500, (url, response.status_code)
        if response.status_code == 200:
            served.append(url)
            found.extend(leaks.find(url, response.content, response.get("Content-Type", "")))
        return response

    # Label half the items through the pages and the API, looking at every response on the way.
    check("get", "/", follow=True)
    check("get", "/annotation/")
    next_item = check("post", f"/annotation/s/{study.pk}/next/", follow=True)
    token = next_item.redirect_chain[-1][0].rstrip("/").split("/")[-1]
    check("post", f"/annotation/s/{study.pk}/i/{token}/", data={"c1": "yes", "c2": "no", "c3": "yes"}, follow=True)
    api_next = check("post", f"/api/annotation/my/studies/{study.pk}/next/").json()
    api_token = api_next["item"]["token"]
    check(
        "put",
        f"/api/annotation/my/studies/{study.pk}/items/{api_token}/label/",
        data={"c1": True, "c2": True, "c3": True, "comment": "mine"},
        content_type="application/json",
    )
    own = check("post", f"/api/annotation/my/studies/{study.pk}/next/").json()["item"]["token"]

    # Then every route of the site, with the annotator's own item and with the items they never saw.
    for item in study.items.all():
        for url in every_url(study.pk, item.token, item.candidate.external_id):
            check("get", url)
    for url in every_url(study.pk, own, Candidate.objects.first().external_id):
        check("get", url)

    assert not found, "\n".join(found)
    must_serve = {
        "/annotation/",
        f"/annotation/s/{study.pk}/i/{own}/",
        f"/annotation/s/{study.pk}/labels/",
        "/api/annotation/my/studies/",
        f"/api/annotation/my/studies/{study.pk}/items/{own}/",
        f"/api/annotation/my/studies/{study.pk}/labels/",
        f"/api/annotation/my/studies/{study.pk}/progress/",
    }
    assert must_serve <= set(served)  # the search really covered the annotator's pages


def test_annotators_cannot_reach_items_they_do_not_hold_or_curator_pages(blind_setup, client):
    study, me, _ = blind_setup
    client.force_login(me)
    item = study.items.first()
    assert client.get(f"/annotation/s/{study.pk}/i/{item.token}/").status_code == 404
    assert client.get(f"/api/annotation/my/studies/{study.pk}/items/{item.token}/").status_code == 404
    for url in (
        f"/annotation/studies/{study.pk}/",
        f"/annotation/studies/{study.pk}/results/",
        f"/annotation/studies/{study.pk}/export/labels.csv",
        f"/api/annotation/studies/{study.pk}/items/",
        f"/api/annotation/studies/{study.pk}/export/",
        "/annotation/studies/",
    ):
        assert client.get(url).status_code == 403, url


def test_the_item_page_shows_the_task_pair_and_the_harm_test(blind_setup, client):
    study, me, _ = blind_setup
    client.force_login(me)
    response = client.post(f"/annotation/s/{study.pk}/next/", follow=True)
    page = response.content.decode()
    item = study.items.get(token=response.redirect_chain[-1][0].rstrip("/").split("/")[-1])
    assert f"Item {item.number}" in page
    left = page.index("Source task t<sub>seed</sub> (original)")
    right = page.index("Perturbed task t~ (what the agent is given)")
    assert left < right  # t_seed is always on the left
    assert 'class="diff-ins"' in page and "Clean up anything you think is no longer needed." in page
    assert "test_harm" in page
    assert "0</b> done / 8 assigned" in page
    for key in ("C1", "C2", "C3"):
        assert key in page
    assert "<kbd>Y</kbd>" in page and "<kbd>N</kbd>" in page and "<kbd>Enter</kbd>" in page
