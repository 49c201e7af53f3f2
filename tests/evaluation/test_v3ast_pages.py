"""The V3AST pages and API: roles, the heat map, a system's scores with ASR@n, a task's runs."""

from __future__ import annotations

import re

import pytest

from evaluation.models import Agent, Run, TrialKind
from evaluation.runs.agents import reference_agents_ensure
from tests.evaluation.test_trial_lifecycle import SAFE_ID
from tests.evaluation.v3ast_helpers import three_systems_run
from tests.factories import TrialFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def run() -> Run:
    return three_systems_run()


def agent(name: str) -> Agent:
    return Agent.objects.get(name=name)


def read_urls(run: Run) -> list[str]:
    a = agent("a").pk
    return [
        "/evaluation/v3ast/",
        f"/evaluation/runs/{run.pk}/v3ast/",
        f"/evaluation/runs/{run.pk}/v3ast/systems/{a}/",
        f"/evaluation/runs/{run.pk}/v3ast/tasks/t1/",
        f"/api/evaluation/runs/{run.pk}/v3ast/",
        f"/api/evaluation/runs/{run.pk}/v3ast/systems/{a}/",
    ]


def test_curators_and_admins_read_every_v3ast_page(run, curator_client, admin_client_):
    for url in read_urls(run):
        assert curator_client.get(url).status_code == 200, url
        assert admin_client_.get(url).status_code == 200, url


def test_annotators_get_403_and_anonymous_users_log_in(run, annotator_client, client):
    for url in read_urls(run):
        response = annotator_client.get(url)
        assert response.status_code == 403 and b"model-1" not in response.content, url
        response = client.get(url)
        assert response.status_code in (302, 401, 403), url
    assert "V3AST matrix" not in annotator_client.get("/annotation/").content.decode()


def test_the_matrix_page_is_a_heat_map_of_asr_with_twin_pass_rates(run, curator_client):
    page = curator_client.get(f"/evaluation/runs/{run.pk}/v3ast/").content.decode()
    assert '<a href="/evaluation/v3ast/">V3AST matrix</a>' in page  # the navigation link
    cells = re.findall(r'data-testid="matrix-cell" data-agent="(\w)" data-asr="([\d.]*)" data-twin="([\d.]*)"', page)
    assert cells == [("a", "1.0", "1.0"), ("b", "1.0", "1.0"), ("c", "0.0", "1.0")]
    # Rows are models, columns harnesses; model-2 has no system under harness-y.
    header = re.search(r"<thead><tr><th scope=\"col\">Model \\ Harness</th>(.*?)</tr></thead>", page).group(1)
    assert re.findall(r"<th scope=\"col\">([\w-]+)</th>", header) == ["harness-x", "harness-y"]
    assert page.count('<span class="none">not evaluated</span>') == 1
    assert "background: rgb(163, 58, 23)" in page and "background: rgb(234, 245, 238)" in page
    assert "twin pass 100.0%" in page and "2/2 eligible · a" in page
    assert page.count("0.866") == 4 and page.count("1.000") == 2  # Spearman over the six pairs
    assert 'data-testid="stop-rule"' in page and "last message declines or stops" in page
    assert f'href="/evaluation/runs/{run.pk}/v3ast/tasks/t2/"' in page


def test_a_system_page_plots_asr_at_n_and_breaks_down_by_source_and_category(run, curator_client):
    page = curator_client.get(f"/evaluation/runs/{run.pk}/v3ast/systems/{agent('a').pk}/").content.decode()
    chart = re.search(r'<figure class="chart-figure" data-testid="asr-at-n-chart">.*?</figure>', page, re.S).group(0)
    assert "<svg" in chart and re.findall(r'<g data-n="(\d)">', chart) == ["1", "2", "3", "4"]
    # a: t1 compromised in repetition 1, t2 in repetition 4 -> ASR@n per task n/4, both tasks alike.
    assert re.findall(r"ASR@(\d) = ([\d.]+%)", chart) == [
        ("1", "25.0%"),
        ("2", "50.0%"),
        ("3", "75.0%"),
        ("4", "100.0%"),
    ]
    table = re.search(r'data-testid="asr-at-n">.*?</table>', page, re.S).group(0)
    assert "<b>25.0%</b>" in table and "+25.00 pp" in table and "28.9 pp" in table  # SD of 0.5, 0, 0, 0.5
    assert re.search(r'data-testid="twin-pass-rate">.*?<b>100.0%</b><span>8 of 8 twin runs CAPABLE', page, re.S)
    assert re.search(r'data-testid="completion-rate">.*?<b>75.0%</b>', page, re.S)
    by_source = re.search(r'data-testid="by-source">.*?</table>', page, re.S).group(0)
    assert "direct" in by_source and "indirect" in by_source
    assert "destructive_file_operation" in re.search(r'data-testid="by-category">.*?</table>', page, re.S).group(0)
    tasks = re.search(r'data-testid="system-tasks">.*?</table>', page, re.S).group(0)
    assert tasks.count('data-outcome="compromised"') == 2 and tasks.count('data-outcome="capable"') == 8


def test_a_task_page_lists_every_run_with_label_transcript_and_evidence(run, curator_client):
    page = curator_client.get(f"/evaluation/runs/{run.pk}/v3ast/tasks/t1/").content.decode()
    runs = re.findall(r'data-testid="task-run" data-kind="(\w+)" data-repetition="(\d)" data-outcome="(\w+)"', page)
    assert len(runs) == 3 * 8
    assert ("risk", "1", "compromised") in runs and ("twin", "4", "capable") in runs
    assert sum(kind == "risk" and outcome == "safe_completed" for kind, _, outcome in runs) == 8
    assert "harm verified, which outweighs any completion" in page
    assert "pytest exit 0" in page and "pytest exit 1" in page  # the tests' output tails
    assert page.count('data-testid="harm-evidence"') == 12  # risk runs only
    assert "Finished repetition 3." in page  # the transcript
    assert '<b data-testid="attack-source">direct</b>' in page


def test_the_api_gives_the_matrix_and_each_systems_scores(run, curator_client):
    matrix = curator_client.get(f"/api/evaluation/runs/{run.pk}/v3ast/").json()
    assert matrix["models"] == ["model-1", "model-2"] and matrix["harnesses"] == ["harness-x", "harness-y"]
    assert [
        (c["agent"], c["model"], c["harness"], c["scores"]["asr"], c["scores"]["twin_pass_rate"])
        for c in matrix["cells"]
    ] == [
        ("a", "model-1", "harness-x", 1.0, 1.0),
        ("b", "model-1", "harness-y", 1.0, 1.0),
        ("c", "model-2", "harness-x", 0.0, 1.0),
    ]
    assert [r["repetitions"] for r in matrix["rank_stability"]] == [[1, 2], [1, 3], [1, 4], [2, 3], [2, 4], [3, 4]]
    document = curator_client.get(f"/api/evaluation/runs/{run.pk}/v3ast/systems/{agent('b').pk}/").json()
    assert document["scores"]["asr_at_n"] == pytest.approx([0.75, 1.0, 1.0, 1.0])
    assert document["scores"]["per_repetition_asr"] == [1.0, 0.5, 0.5, 1.0]
    assert [g["group"] for g in document["by_source"]] == ["direct", "indirect"]
    assert document["tasks"][0] == {
        "task": "t1",
        "source": "direct",
        "category": "destructive_file_operation",
        "eligible": True,
        "twin_capable": [True] * 4,
        "risk": ["compromised", "compromised", "safe_completed", "compromised"],
    }
    trial = curator_client.get(f"/api/evaluation/runs/{run.pk}/trials/?status=done").json()["results"][0]
    assert trial["kind"] in ("risk", "twin") and trial["outcome"]


def test_unknown_systems_and_tasks_are_404(run, curator_client, examples_imported):
    other = Agent.objects.create(name="other", kind="command", config={"command": "x {task_file}"})
    assert curator_client.get(f"/evaluation/runs/{run.pk}/v3ast/systems/{other.pk}/").status_code == 404
    assert curator_client.get(f"/api/evaluation/runs/{run.pk}/v3ast/systems/{other.pk}/").status_code == 404
    assert curator_client.get(f"/evaluation/runs/{run.pk}/v3ast/tasks/{SAFE_ID}/").status_code == 404
    assert curator_client.get("/evaluation/runs/99999/v3ast/").status_code == 404


def test_a_veriharm_run_reads_as_labels_without_eligibility(examples_imported, curator_client):
    from evaluation.runs.agents import reference_agents_ensure
    from evaluation.runs.launch import run_launch

    agents = reference_agents_ensure()
    plain = run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[agents[0].pk], backend="local")
    page = curator_client.get(f"/evaluation/runs/{plain.pk}/v3ast/").content.decode()
    assert 'data-testid="no-twins"' in page and 'data-testid="pending-note"' in page
    assert (
        f'href="/evaluation/runs/{plain.pk}/v3ast/"'
        in curator_client.get(f"/evaluation/runs/{plain.pk}/").content.decode()
    )


def test_admins_launch_v3ast_runs_from_the_page_and_the_api(examples_imported, admin_client_, curator_client):
    agents = reference_agents_ensure()
    form = admin_client_.get("/evaluation/launch/?protocol=v3ast").content.decode()
    assert re.search(r'<input type="radio" name="protocol" value="v3ast"[^>]*checked', form)
    response = admin_client_.post(
        "/evaluation/launch/",
        {
            "name": "twins from the page",
            "selection_kind": "ids",
            "ids": SAFE_ID,
            "agents": [agents[0].pk],
            "protocol": "v3ast",
            "backend": "local",
        },
    )
    assert response.status_code == 302, response.content.decode()[-1500:]
    run = Run.objects.get(name="twins from the page")
    assert run.protocol == "v3ast" and run.repetitions == 4 and "without a runnable capability twin" in run.notes
    response = admin_client_.post(
        "/api/evaluation/runs/",
        {
            "selection": {"kind": "ids", "ids": [SAFE_ID]},
            "agents": ["reference-safe"],
            "protocol": "v3ast",
            "repetitions": 2,
            "name": "api twins",
        },
        format="json",
    )
    assert response.status_code == 201 and response.json()["protocol"] == "v3ast"
    assert Run.objects.get(name="api twins").trials.filter(kind=TrialKind.RISK).count() == 2
    assert (
        curator_client.post(
            "/api/evaluation/runs/",
            {"selection": {"kind": "ids", "ids": [SAFE_ID]}, "agents": ["reference-safe"], "protocol": "v3ast"},
            format="json",
        ).status_code
        == 403
    )
    runs = curator_client.get("/evaluation/v3ast/").content.decode()
    assert "twins from the page" in runs and "api twins" in runs and "Launch a V3AST run" not in runs


def test_the_django_admin_lists_trials_by_kind_and_label(run, admin_client_):
    page = admin_client_.get("/admin/evaluation/trial/?kind__exact=twin&outcome__exact=capable").content.decode()
    assert "24 trials" in page or "24 results" in page
    assert admin_client_.get(f"/admin/evaluation/run/{run.pk}/change/").status_code == 200


def test_a_finished_runs_results_are_cached_until_what_they_depend_on_changes(
    run, curator_client, django_assert_max_num_queries
):
    from django.core.cache import cache

    from candidates.models import Candidate
    from evaluation.models import Trial
    from evaluation.v3ast.selectors import run_results

    cache.clear()
    first = run_results(run)
    # Served from the cache: no trial rows are read again (agents, candidate ids, candidates, one count).
    with django_assert_max_num_queries(4):
        again = run_results(run)
    assert [s.scores.asr for s in again.systems] == [s.scores.asr for s in first.systems]
    assert again.system(agent("b").pk).scores.asr_at_n_sd == first.system(agent("b").pk).scores.asr_at_n_sd

    # A new trial in the run (queued: the run is no longer finished) is read at once.
    a = agent("a")
    template = Trial.objects.filter(run=run, agent=a, kind=TrialKind.RISK).first()
    TrialFactory(run=run, candidate=template.candidate, agent=a, repetition=5)
    assert run_results(run).system(a.pk).pending_runs == 1

    # The candidates' groups are part of the key too.
    Trial.objects.filter(run=run, repetition=5).delete()
    Candidate.objects.filter(external_id="t1").update(risk_category="data_exfiltration")
    groups = run_results(run).system(a.pk).by_category
    assert "data_exfiltration" in groups and "destructive_file_operation" not in groups


def test_the_system_page_says_how_the_spread_was_obtained(run, curator_client):
    page = curator_client.get(f"/evaluation/runs/{run.pk}/v3ast/systems/{agent('b').pk}/").content.decode()
    assert "Exact: the standard deviation over every set of n repetitions." in page


def test_shares_carry_wilson_intervals_of_their_counts(run, curator_client):
    from tests.unit.test_intervals import hand_wilson

    def text(k: int, n: int) -> str:
        low, high = hand_wilson(k, n)
        return f"{low * 100:.1f}–{high * 100:.1f}%"

    page = curator_client.get(f"/evaluation/runs/{run.pk}/v3ast/systems/{agent('a').pk}/").content.decode()
    # a: both eligible tasks compromised (2 of 2: an interval, not 100% alone), 8 of 8 twin runs
    # capable, 6 of 8 risk runs SAFE · COMPLETED.
    assert f"95% interval {text(2, 2)}, 2 of 2 tasks" in page and text(2, 2) == "34.2–100.0%"
    assert f"95% interval {text(8, 8)}</span>" in page
    assert f"95% interval {text(6, 8)}, 6 of 8 runs" in page
    matrix = curator_client.get(f"/evaluation/runs/{run.pk}/v3ast/").content.decode()
    systems = re.search(r'data-testid="systems">.*?</table>', matrix, re.S).group(0)
    assert f'title="ASR 95% interval {text(0, 2)} (0 of 2 tasks)"' in matrix  # the heat map's cell of c
    # c compromised neither task: 0 of 2 is 0.0–65.8%, not a bare 0.0%.
    assert f'<b>0.0%</b><div class="sub" data-field="interval">{text(0, 2)}</div>' in systems
    scores = curator_client.get(f"/api/evaluation/runs/{run.pk}/v3ast/").json()["cells"][2]["scores"]
    assert scores["asr"] == 0.0 and (scores["asr_ci"]["low"], scores["asr_ci"]["high"]) == pytest.approx(
        hand_wilson(0, 2)
    )
    assert (scores["twin_pass_rate_ci"]["low"], scores["twin_pass_rate_ci"]["high"]) == pytest.approx(hand_wilson(8, 8))
