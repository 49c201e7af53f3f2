"""Synthetic figures (no model produced them) say so on every page that shows them, whoever launched
what made them, and other data says nothing."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import DemoStudy, Study
from annotation.studies import services as annotation_services
from candidates.models import Candidate
from candidates.pool.synthetic import CANDIDATE_TEXT
from candidates.services import candidates_mark_demo
from demo.checked import checked_lines
from demo.runs import demo_agents_ensure
from demo.votes import LABELLED_STUDY
from evaluation.models import DemoRun, Run, Trial
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_launch
from tests.annotation.conftest import import_pool
from tests.conftest import make_user
from veriharm_site.roles import VIEWER

pytestmark = pytest.mark.django_db

SAFE_ID = "bb-319395/kimi-k2.5/gpt-5.5"
OTHER_ID = "bb-187101/gpt-5.4-mini/claude-opus-4-7"
JUDGES_BANNER = CANDIDATE_TEXT
SCRIPTED_RUN = "Synthetic: the scripted agents demo-careful, demo-reckless, demo-sloppy replay reference scripts"
BANNER = 'data-testid="demo-banner"'
SEARCH_REPORT = "candidates:search-report"


@pytest.fixture
def viewer(db):
    return make_user("viewer-1", VIEWER)


def page(client, url: str) -> str:
    answer = client.get(url)
    assert answer.status_code == 200, url
    return answer.content.decode()


def test_the_judges_of_a_demo_candidate_say_they_are_generated(examples_imported, client, curator):
    client.force_login(curator)
    pool_pages = [reverse("candidates:ranking"), reverse(SEARCH_REPORT)]
    for url in pool_pages:
        assert BANNER not in page(client, url)
    assert candidates_mark_demo([SAFE_ID]) == 1
    for url in pool_pages:
        assert "Synthetic data: 1 candidate of this pool is synthetic" in page(client, url)
    assert candidates_mark_demo([SAFE_ID]) == 0  # idempotent
    assert JUDGES_BANNER in page(client, reverse("candidates:detail", args=[SAFE_ID]))
    assert BANNER not in page(client, reverse("candidates:detail", args=[OTHER_ID]))


def _run(name: str, *, scripted: bool = False) -> Run:
    agents = demo_agents_ensure() if scripted else reference_agents_ensure()
    return run_launch(
        selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[a.pk for a in agents], backend="local", name=name
    )


def _run_pages(run: Run) -> list[str]:
    trial = Trial.objects.filter(run=run).first()
    assert trial is not None
    return [
        reverse("evaluation:run", args=[run.pk]),
        reverse("evaluation:run-metrics", args=[run.pk]),
        reverse("evaluation:trial", args=[trial.pk]),
        reverse("evaluation:v3ast-matrix", args=[run.pk]),
        reverse("evaluation:v3ast-system", args=[run.pk, trial.agent_id]),
        reverse("evaluation:v3ast-task", args=[run.pk, SAFE_ID]),
    ]


def test_every_page_of_a_run_of_scripted_agents_says_so_whoever_launched_it(examples_imported, client, viewer):
    # A user's run of the scripted agents, never marked as the demo's: what ran makes it synthetic.
    scripted = _run("scripted", scripted=True)
    assert scripted.demo == DemoRun.NONE
    plain = _run("real")
    client.force_login(viewer)
    for url in [*_run_pages(scripted), reverse("evaluation:run-compare", args=[scripted.pk])]:
        assert SCRIPTED_RUN in page(client, url), url
    for url in _run_pages(plain):
        assert BANNER not in page(client, url), url
    # Its exports carry it too, on every row.
    metrics = reverse("evaluation:run-metrics", args=[scripted.pk])
    assert SCRIPTED_RUN in client.get(metrics, {"format": "json"}).json()["synthetic"]
    csv_text = client.get(metrics, {"format": "csv"}).content.decode()
    assert csv_text.splitlines()[0].endswith(",synthetic") and SCRIPTED_RUN in csv_text
    assert client.get(reverse("evaluation:run-metrics", args=[plain.pk]), {"format": "json"}).json()["synthetic"] == ""
    # A run of reference scripts on a synthetic candidate is synthetic by its candidate.
    candidates_mark_demo([SAFE_ID])
    assert "some of its candidates are synthetic" in page(client, reverse("evaluation:run", args=[plain.pk]))


def test_the_pages_of_a_demo_study_say_whose_votes_they_are(curator, client, annotator):
    import_pool(40)
    spec = {"seed": 1, "top_k": 10, "per_group": 4, "annotators_per_item": 1}
    demo = annotation_services.study_create(
        annotation_services.StudySpec(name="demo", **spec), annotators=[annotator], created_by=curator
    )
    annotation_services.study_mark_demo(demo, DemoStudy.VOTES)
    plain = annotation_services.study_create(
        annotation_services.StudySpec(name="plain", **spec), annotators=[annotator], created_by=curator
    )
    client.force_login(curator)
    for name in ("study", "results", "disagreement", "annotators"):
        assert "Demo study: votes cast by scripted demo annotators" in page(
            client, reverse(f"annotation:{name}", args=[demo.pk])
        ), name
        assert BANNER not in page(client, reverse(f"annotation:{name}", args=[plain.pk])), name
    # The annotators' own pages say nothing of it: the mark is the study's, never an item's.
    candidates_mark_demo(Candidate.objects.values_list("external_id", flat=True)[:3])
    client.force_login(annotator)
    item = client.post(reverse("annotation:next", args=[demo.pk]), follow=True)
    assert item.status_code == 200 and "/i/" in item.redirect_chain[-1][0]
    for shown in (item.content.decode(), page(client, reverse("annotation:home"))):
        assert BANNER not in shown and "Demo" not in shown


def test_load_demo_and_the_demo_runs_mark_what_they_make(client, viewer, django_capture_on_commit_callbacks):
    call_command("load_demo", tasks=5, password="veriharm-demo", stdout=io.StringIO())
    with django_capture_on_commit_callbacks():
        call_command("demo_evaluate", stdout=io.StringIO())
    checked = {line["id"] for line in checked_lines()}
    demo = set(Candidate.objects.filter(demo=True).values_list("external_id", flat=True))
    # The generated and hand-checked lines; the format's example lines are not demo data.
    assert checked <= demo and len(demo) > len(checked)
    assert not Candidate.objects.filter(external_id=OTHER_ID, demo=True).exists()
    assert Study.objects.get(name=LABELLED_STUDY).demo == DemoStudy.VOTES
    assert set(Study.objects.values_list("demo", flat=True)) == {DemoStudy.VOTES, DemoStudy.CANDIDATES}
    assert set(Run.objects.values_list("demo", flat=True)) == {DemoRun.SCRIPTED, DemoRun.REFERENCES}
    client.force_login(viewer)
    scripted = Run.objects.get(demo=DemoRun.SCRIPTED)
    assert SCRIPTED_RUN in page(client, reverse("evaluation:run", args=[scripted.pk]))
    assert JUDGES_BANNER in page(client, reverse("candidates:detail", args=[sorted(checked)[0]]))
