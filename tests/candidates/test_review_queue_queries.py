"""The review queue at a large K: its page, its API and the review page read as many queries
whatever K is and however many of its candidates are decided or flagged (no query per row, nor
per cell of the strip), and the strip still shows every candidate of the top-K with its decision."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from candidates.curation.review import decisions_record_bulk
from candidates.models import Candidate
from candidates.services import candidate_import_files
from demo import generated as demo
from evaluation.models import ReferenceCheck, ReferenceVerdict

pytestmark = pytest.mark.django_db

URLS = (
    "/candidates/review/?k={k}",
    "/candidates/review/?k={k}&page=2",
    "/candidates/review/?k={k}&sort=-decided&decision=rejected",
    "/candidates/review/?k={k}&decision=undecided&sort=-id&flagged=1",
    "/api/review/queue/?k={k}",
    "/api/review/queue/?k={k}&sort=decided&decision=approved",
    "/candidates/review/1/?k={k}",
    "/candidates/review/3/?k={k}&sort=-rank&decision=undecided",
)


@pytest.fixture
def pool(db) -> list[Candidate]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pool.jsonl"
        demo.write_jsonl(demo.synthetic_candidates(demo.load_bashbench(), 130), path)
        candidate_import_files([str(path)])
    return list(Candidate.objects.filter(rank__isnull=False).order_by("rank"))


def _decide_and_flag(candidates: list[Candidate], curator) -> None:
    """Every third rejected, every third approved; every fourth flagged by its reference check."""
    for verdict, reason, start in (("reject", "unrealistic", 0), ("approve", "valid", 1)):
        ids = [c.external_id for c in candidates[start::3]]
        decisions_record_bulk(external_ids=ids, user=curator, verdict=verdict, reason=reason, acknowledge_flags=True)
    ReferenceCheck.objects.bulk_create(
        ReferenceCheck(
            candidate=c, candidate_revision=c.revision, verdict=ReferenceVerdict.FLAGGED, harm_passes_untouched=True
        )
        for c in candidates[::4]
        if not ReferenceCheck.objects.filter(candidate=c).exists()
    )


def _queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return len(queries)


def test_the_queue_reads_as_many_queries_at_any_k(pool, curator, curator_client):
    # Nine, so that every listing of the small queue has a row too (the ninth is undecided and
    # flagged): an empty page reads nothing of its rows, and that is no query per row.
    _decide_and_flag(pool[:9], curator)
    small = {url: _queries(curator_client, url.format(k=9)) for url in URLS}
    _decide_and_flag(pool[:120], curator)
    large = {url: _queries(curator_client, url.format(k=120)) for url in URLS}
    assert large == small


def _strip(html: str) -> list[tuple[str, str, str]]:
    """(href, class, title) of each cell of the strip, in order."""
    strip = html.split('data-testid="review-strip"')[1].split("</nav>")[0]
    return re.findall(r'<a href="([^"]*)" class="([^"]*)" title="([^"]*)"', strip)


def test_the_strip_shows_every_candidate_of_the_top_k_with_its_decision(pool, curator, curator_client):
    _decide_and_flag(pool[:120], curator)
    cells = _strip(curator_client.get("/candidates/review/?k=120&decision=rejected&sort=-rank").content.decode())
    assert len(cells) == 120  # the whole top-K, whatever the listing's filter
    assert [c[1] for c in cells[:4]] == ["reject", "approve", "none", "reject"]
    assert cells[0] == (
        "/candidates/review/1/?k=120&amp;sort=-rank&amp;decision=rejected",
        "reject",
        f"rank 1 · {pool[0].external_id} · reject · flagged",
    )
    assert cells[2][2] == f"rank 3 · {pool[2].external_id} · undecided"
    review = curator_client.get("/candidates/review/3/?k=120").content.decode()
    assert review.count('aria-current="true"') == 1
    assert re.search(r'<a href="/candidates/review/3/\?k=120" class="none" title="[^"]*" aria-current="true">', review)
