"""The paired comparison page and API on a run of two agents over the same candidates."""

from __future__ import annotations

import pytest

from candidates.models import Candidate
from evaluation.models import Trial, TrialStatus
from evaluation.runs.agents import reference_agents_ensure
from tests.candidates.curation_support import import_lines
from tests.evaluation.test_run_metrics import _trial
from tests.factories import CandidateLineFactory, RunFactory

pytestmark = pytest.mark.django_db

# Per candidate, (r_task, r_harm) of A and of B, one trial each. TA: A 4/5, B 2/5; HSR: A 2/5,
# B 1/5; SSR: A 2/5, B 1/5. TA: only A succeeded on p2 and p3, only B on none.
RESULTS = {
    "p0": ((1, 1), (1, 1)),
    "p1": ((1, 0), (1, 0)),
    "p2": ((1, 1), (0, 0)),
    "p3": ((1, 0), (0, 1)),
    "p4": ((0, 0), (0, 0)),
}


@pytest.fixture
def two_agent_run():
    import_lines(*[CandidateLineFactory(id=name) for name in [*RESULTS, "p5"]])
    candidates = {c.external_id: c for c in Candidate.objects.all()}
    a, b = reference_agents_ensure()[:2]
    run = RunFactory(name="paired", agents=[a, b])
    trials = []
    for name, (of_a, of_b) in RESULTS.items():
        trials.append(_trial(run, candidates[name], a, 1, TrialStatus.DONE, *of_a))
        trials.append(_trial(run, candidates[name], b, 1, TrialStatus.DONE, *of_b))
    # p5: A resolved, B never got a verdict: not a pair.
    trials.append(_trial(run, candidates["p5"], a, 1, TrialStatus.DONE, 1, 1))
    trials.append(_trial(run, candidates["p5"], b, 1, TrialStatus.UNRESOLVED))
    Trial.objects.bulk_create(trials)
    return run, a, b


def test_the_api_gives_the_hand_computed_differences(two_agent_run, curator_client):
    run, a, b = two_agent_run
    body = curator_client.get(f"/api/evaluation/runs/{run.pk}/compare/?a={a.pk}&b={b.pk}").json()
    assert (body["a"]["name"], body["b"]["name"]) == (a.name, b.name)
    assert (body["paired_candidates"], body["only_a"], body["only_b"], body["binary"]) == (5, 1, 0, True)
    d = {x["metric"]: x for x in body["differences"]}
    assert (d["ta"]["a"], d["ta"]["b"], d["ta"]["difference"]) == (0.8, 0.4, pytest.approx(0.4))
    assert (d["hsr"]["a"], d["hsr"]["b"], d["hsr"]["difference"]) == (0.4, 0.2, pytest.approx(0.2))
    assert (d["ssr"]["a"], d["ssr"]["b"], d["ssr"]["difference"]) == (0.4, 0.2, pytest.approx(0.2))
    # TA differences (0, 0, 1, 1, 0): a resample's mean is k/5 with k ~ Bin(5, 2/5): P(k = 0) = 0.078
    # is over 2.5%, and so is P(k >= 4) = 0.087 while P(k = 5) = 0.010 is not: the interval is 0 .. 4/5.
    assert (d["ta"]["ci_low"], d["ta"]["ci_high"]) == (0.0, pytest.approx(0.8))
    assert d["ta"]["mcnemar"] == {"both": 2, "only_a": 2, "only_b": 0, "neither": 1, "p_value": 0.5}
    # HSR: p0 both, p2 A only; B's harm on p3 came without the task done, so it is no harmful success.
    assert d["hsr"]["mcnemar"] == {"both": 1, "only_a": 1, "only_b": 0, "neither": 3, "p_value": 1.0}
    assert "bootstrap over the paired candidates" in body["method"]


def test_the_page_shows_the_comparison_and_is_linked(two_agent_run, curator_client):
    run, a, b = two_agent_run
    url = f"/evaluation/runs/{run.pk}/compare/"
    for page in (
        f"/evaluation/runs/{run.pk}/",
        f"/evaluation/runs/{run.pk}/v3ast/",
        f"/evaluation/runs/{run.pk}/metrics/",
    ):
        assert f'href="{url}" data-testid="compare-link"' in curator_client.get(page).content.decode()
    # Without parameters: its first two agents by name, here the only two.
    first, second = sorted((a, b), key=lambda agent: agent.name)
    default = curator_client.get(url).content.decode()
    assert f"<b>{first.name}</b> (A) against <b>{second.name}</b> (B)" in default
    page = curator_client.get(f"{url}?a={a.pk}&b={b.pk}").content.decode()
    assert f"<b>{a.name}</b> (A) against <b>{b.name}</b> (B) on the <b>5</b> candidates" in page
    assert "(1 scored for A only and 0 for B only are left out)" in page
    ta = page.split('<tr data-metric="ta">')[1].split("</tr>")[0]
    assert "80.0%" in ta and "40.0%" in ta and "<b>+40.0 pp</b>" in ta
    # Five pairs are too few to tell: the interval reaches 0 and McNemar's p is 0.5.
    assert "+0.0 pp to +80.0 pp" in ta and "excludes 0" not in ta and 'data-field="mcnemar-p">0.5<' in ta
    assert "McNemar" in page and "bootstrap over the paired candidates" in page


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ("a=abc&b=1", "a", "must be a whole number"),
        ("a=999999&b={b}", "a", "no agent 999999 in run"),
        ("a={a}&b={a}", "b", "must be another agent than a"),
        ("a={a}", "b", "required"),
        ("b={b}", "a", "required"),
    ],
)
def test_bad_parameters_are_refused_naming_them(two_agent_run, curator_client, query, field, message):
    run, a, b = two_agent_run
    query = query.format(a=a.pk, b=b.pk)
    api = curator_client.get(f"/api/evaluation/runs/{run.pk}/compare/?{query}")
    assert api.status_code == 400
    assert [e["field"] for e in api.json()["errors"]] == [field] and message in api.json()["errors"][0]["message"]
    page = curator_client.get(f"/evaluation/runs/{run.pk}/compare/?{query}")
    assert page.status_code == 400 and f"<b>{field}</b>: " in page.content.decode()
    assert message in page.content.decode()


def test_the_api_needs_both_agents(two_agent_run, curator_client):
    run, _, _ = two_agent_run
    body = curator_client.get(f"/api/evaluation/runs/{run.pk}/compare/").json()
    assert sorted(e["field"] for e in body["errors"]) == ["a", "b"]


# --- the same release across two runs -----------------------------------------------------------

SAFE_ID = "bb-319395/kimi-k2.5/gpt-5.5"
OTHER_ID = "bb-187101/gpt-5.4-mini/claude-opus-4-7"


def _finish(run, agent, results: dict[str, tuple[int, int]]) -> None:
    """Each of the agent's trials in the run ends with a verdict: (r_task, r_harm) by candidate."""
    from django.utils import timezone

    from evaluation.models.taxonomy import TrialEnd

    now = timezone.now()
    for external_id, (r_task, r_harm) in results.items():
        outcome = "compromised" if r_harm else "safe_completed" if r_task else "safe_stopped"
        Trial.objects.filter(run=run, agent=agent, candidate__external_id=external_id).update(
            status=TrialStatus.DONE,
            end=TrialEnd.VERDICT,
            r_task=r_task,
            r_harm=r_harm,
            outcome=outcome,
            attempts=1,
            started_at=now,
            finished_at=now,
        )


@pytest.fixture
def two_runs_of_a_release(examples_imported, curator):
    """Last month's run and this month's of one frozen release, the same agent in both."""
    from candidates.releases.services import release_create, release_freeze
    from evaluation.runs.agents import agent_create
    from evaluation.runs.launch import run_launch
    from tests.candidates.curation_support import decide

    decide(SAFE_ID, curator)
    decide(OTHER_ID, curator)
    release = release_freeze(release_create(user=curator, name="bench", version="1.0").pk, user=curator)
    agent = agent_create(name="model-x", kind="command", config={"command": "true {task_file}"}, model="x")
    selection = {"kind": "release", "release": release.pk}
    before = run_launch(selection=selection, agent_ids=[agent.pk], backend="local", name="last month")
    now = run_launch(selection=selection, agent_ids=[agent.pk], backend="local", name="this month")
    _finish(before, agent, {SAFE_ID: (1, 1), OTHER_ID: (1, 1)})
    _finish(now, agent, {SAFE_ID: (1, 0), OTHER_ID: (1, 1)})
    return before, now, agent


def test_the_same_release_compares_across_two_runs_item_by_item(two_runs_of_a_release, curator_client):
    before, now, agent = two_runs_of_a_release
    body = curator_client.get(
        f"/api/evaluation/runs/{now.pk}/compare/", {"a": agent.pk, "b": agent.pk, "run_b": before.pk}
    ).json()
    assert (body["run"], body["run_b"], body["paired_candidates"], body["only_a"], body["only_b"]) == (
        now.pk,
        before.pk,
        2,
        0,
        0,
    )
    hsr = next(d for d in body["differences"] if d["metric"] == "hsr")
    assert (hsr["a"], hsr["b"], hsr["difference"]) == (0.5, 1.0, -0.5)
    # The page offers last month's run, and pairs B of it with A of this one.
    page = curator_client.get(f"/evaluation/runs/{now.pk}/compare/").content.decode()
    offered = page.split('data-testid="compare-run-b"')[1].split("</select>")[0]
    assert f'<option value="{before.pk}">last month' in offered
    page = curator_client.get(f"/evaluation/runs/{now.pk}/compare/", {"a": agent.pk, "run_b": before.pk})
    counts = page.content.decode().split('data-testid="compare-counts"')[1].split("</p>")[0]
    assert "(B, <a" in counts and "last month" in counts and "<b>2</b> items" in counts


def test_runs_that_share_no_item_are_refused_naming_why(two_runs_of_a_release, curator_client):
    from evaluation.runs.launch import run_launch
    from tests.factories import CandidateFactory

    before, now, agent = two_runs_of_a_release
    CandidateFactory(id="elsewhere")
    other = run_launch(selection={"kind": "ids", "ids": ["elsewhere"]}, agent_ids=[agent.pk], backend="local")
    api = curator_client.get(
        f"/api/evaluation/runs/{now.pk}/compare/", {"a": agent.pk, "b": agent.pk, "run_b": other.pk}
    )
    assert api.status_code == 400
    [error] = api.json()["errors"]
    assert error["field"] == "run_b" and f"runs {now.pk} and {other.pk} share no item" in error["message"]
    page = curator_client.get(f"/evaluation/runs/{now.pk}/compare/", {"a": agent.pk, "run_b": other.pk})
    assert page.status_code == 400 and "share no item" in page.content.decode()
    # Not offered either: it is no run of the release.
    offered = curator_client.get(f"/evaluation/runs/{now.pk}/compare/").content.decode()
    assert f'<option value="{other.pk}"' not in offered.split('data-testid="compare-run-b"')[1].split("</select>")[0]
    missing = curator_client.get(
        f"/api/evaluation/runs/{now.pk}/compare/", {"a": agent.pk, "b": agent.pk, "run_b": 999999}
    )
    assert missing.status_code == 400 and missing.json()["errors"][0]["field"] == "run_b"
