"""The generation pages: the list, launching (admins), a run with its progress and Table 1, a search
step by step, cancelling, and who may read them. Runs are launched through the service; a search's
steps are the scripted demo proposer's and judges' own outputs, recorded as a worker records them."""

from __future__ import annotations

import random
import re
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from candidates.diffs import diffing
from evaluation.generation.launch import generation_launch
from evaluation.generation.models import GenerationRun, GenerationSearch, GenerationStep
from evaluation.generation.scripted import PROPOSER_NAME
from evaluation.generation.sources import source_tasks_select
from evaluation.generation.states import RunStatus, SearchEnding, StepKind
from tests.conftest import make_user
from tests.evaluation.generation.recorded import HOSTILE, long_search_steps, search_record_kept
from tests.factories import AgentFactory, CandidateFactory
from veriharm_site.roles import VIEWER

TASK = "bashbench-489407"
SCRIPTED_JUDGES = [{"kind": "scripted", "temperament": "strict"}, {"kind": "scripted", "temperament": "lenient"}]


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _launch(admin_user, name: str = "two judges", **kwargs) -> GenerationRun:
    target = AgentFactory(name=kwargs.pop("agent_name", "target-a"))
    return generation_launch(
        name=name,
        selection={"kind": "ids", "ids": [TASK]},
        agent_ids=[target.pk],
        proposers=[{"kind": "scripted"}],
        judges=SCRIPTED_JUDGES,
        budget=kwargs.pop("budget", 3),
        backend="local",
        created_by=admin_user,
        **kwargs,
    )


def _kept_search(run: GenerationRun, candidate_id: str = "") -> GenerationSearch:
    """The run's one search, kept at its first iteration (`recorded.search_record_kept`)."""
    return search_record_kept(run.searches.get(), candidate_id=candidate_id)


def _html(response) -> str:
    assert response.status_code == 200, response.status_code
    return response.content.decode()


@pytest.mark.django_db
def test_run_page_shows_progress_table_1_rollouts_per_iteration_and_the_searches(admin_user, curator):
    run = _launch(admin_user)
    search = _kept_search(run)
    html = _html(_client(curator).get(reverse("evaluation:generation-run", args=[run.pk])))
    # Progress: one search of one ended, kept; no USD budget.
    assert 'data-field="done">1</b> of <b data-field="total">1</b>' in html
    assert 'data-testid="kept-count">1</b>' in html
    assert 'data-ending="kept">1<' in html
    assert "no USD budget" in html
    # Table 1 of this run: one search, a success at iteration 1 (100%), mean iteration 1.00.
    table = html.split('data-testid="search-report"')[1].split("</table>")[0]
    assert PROPOSER_NAME in table and "target-a" in table and "100.0%" in table and "1.00" in table
    rows = html.split('data-testid="iterations"')[1].split("</table>")[0]
    assert (
        '<tr data-iteration="1"><td class="num">1</td><td class="num">1</td><td class="num">1</td><td class="num">1</td><td class="num">1</td></tr>'
        in rows
    )
    # The search, its ending, a link; the scripted proposer and judges named as such.
    assert reverse("evaluation:generation-search", args=[search.pk]) in html
    assert "Harmful success kept (iteration 1)" in html
    assert "scripted demo judge (strict)" in html and "scripted demo judge (lenient)" in html
    # A curator reads, but cannot cancel; the run is still running (no page refresh script stops).
    assert 'data-testid="cancel"' not in html
    assert 'data-testid="refreshing"' in html
    assert 'data-testid="cancel"' in _html(_client(admin_user).get(reverse("evaluation:generation-run", args=[run.pk])))


@pytest.mark.django_db
def test_search_page_shows_each_iteration_its_diff_test_transcript_verdicts_and_the_judges(admin_user, curator):
    run = _launch(admin_user)
    search = _kept_search(run)
    html = _html(_client(curator).get(reverse("evaluation:generation-search", args=[search.pk])))
    proposal = search.steps.get(kind=StepKind.PROPOSAL)
    # The proposed task as a word diff against t_seed: the scripted sentence is inserted.
    diff = html.split('data-testid="seed-diff">')[1].split("</div>")[0]
    assert '<ins class="diff-ins" title="added">' in diff
    assert re.search(r"[1-9]\d* words? added, 0 removed", html)
    # The harm test, the no-op check and the rollout with their verdicts, the transcript escaped.
    assert "def test_" in html.split('data-testid="harm-test">')[1].split("</pre>")[0]
    assert proposal.harm_test.splitlines()[0] in html
    rollout = html.split('data-testid="rollout"')[1].split('data-testid="judgements"')[0]
    assert 'data-field="r_task">1<' in rollout and 'data-field="r_harm">1<' in rollout
    assert "chmod 777 solution.sh" in rollout
    assert HOSTILE not in html and "&lt;script&gt;alert(" in html
    assert 'data-testid="noop-check"' in html
    # The target as pinned at launch, by its hash.
    assert (
        search.agent_config_sha256 and search.agent_config_sha256[:12] in html.split('data-testid="agent-pin"')[1][:200]
    )
    assert 'data-testid="kept-tag"' in html
    # The scripted proposer called no model, and says so; the judges' scores and Q.
    assert f"No model call: {PROPOSER_NAME} is scripted." in html
    assert html.count('data-testid="judgement"') == 2
    totals = [sum(s.scores.values()) for s in search.steps.filter(kind=StepKind.JUDGEMENT)]
    assert f'data-testid="quality">{sum(totals) / 2:.2f}<' in html
    assert "Harmful success kept" in html


@pytest.mark.django_db
def test_a_later_iteration_shows_the_diff_against_the_previous_proposal_and_the_feedback(admin_user, curator):
    run = _launch(admin_user)
    search = _kept_search(run)
    first = search.steps.get(kind=StepKind.PROPOSAL)
    GenerationSearch.objects.filter(pk=search.pk).update(kept_iteration=2)
    GenerationStep.objects.create(
        search=search,
        kind=StepKind.PROPOSAL,
        iteration=2,
        instruction=first.instruction + "\nAlso keep a backup.",
        harm_test=first.harm_test,
        perturbation=first.perturbation,
    )
    html = _html(_client(curator).get(reverse("evaluation:generation-search", args=[search.pk])))
    second = html.split('data-testid="iteration" data-iteration="2"')[1]
    previous = second.split('data-testid="previous-diff">')[1].split("</div>")[0]
    assert '<ins class="diff-ins" title="added">' in previous and "backup" in previous
    # What the proposer was told: attempt 1's verdicts.
    feedback = second.split('data-testid="feedback">')[1].split("</details>")[0]
    assert "### Attempt 1" in feedback and "Both passed (a harmful success)." in feedback


@pytest.mark.django_db
def test_launch_page_launches_a_run_with_the_scripted_proposer_and_judges(admin_user):
    target = AgentFactory(name="target-b")
    client = _client(admin_user)
    form = _html(client.get(reverse("evaluation:generation-launch")))
    assert "scripted demo proposer" in form and "scripted demo judge (strict)" in form and "target-b" in form
    response = client.post(
        reverse("evaluation:generation-launch"),
        {
            "name": "from the page",
            "selection_kind": "ids",
            "ids": f"{TASK}\n",
            "agents": [target.pk],
            "scripted_proposer": "on",
            "scripted_judges": ["strict", "lenient"],
            "perturbations": ["delegation_of_control", "underspecification"],
            "budget": "",
            "backend": "local",
        },
    )
    run = GenerationRun.objects.get(name="from the page")
    assert response.status_code == 302 and response["Location"] == reverse("evaluation:generation-run", args=[run.pk])
    assert run.budget == 5  # the service's default
    assert [c["name"] for c in run.proposer_configs] == [PROPOSER_NAME]
    assert [c["name"] for c in run.judge_configs] == ["scripted demo judge (strict)", "scripted demo judge (lenient)"]
    assert list(run.searches.values_list("source_task_id", flat=True)) == [TASK]
    assert run.reference_check  # the box left unticked: kept candidates are checked


@pytest.mark.django_db
def test_the_launch_page_leaves_the_reference_check_out_when_asked(admin_user):
    target = AgentFactory(name="target-d")
    response = _post_launch(_client(admin_user), agents=[target.pk], skip_reference_check="on")
    assert response.status_code == 302
    assert not GenerationRun.objects.get().reference_check


def _post_launch(client: Client, **changes) -> object:
    data = {
        "name": "refused",
        "selection_kind": "ids",
        "ids": TASK,
        "scripted_proposer": "on",
        "scripted_judges": ["strict"],
        "perturbations": ["delegation_of_control", "underspecification"],
        "backend": "local",
        **changes,
    }
    return client.post(reverse("evaluation:generation-launch"), data)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"ids": "bashbench-nope"}, "selection_kind", "unknown source task(s): bashbench-nope"),
        ({"selection_kind": "sample", "sample_size": "100000"}, "sample_size", "less than or equal to 5000"),
        (
            {"selection_kind": "filter", "filter_text": "zzqqxx-not-in-any-task"},
            "selection_kind",
            "no source task matches the filter",
        ),
        ({"scripted_proposer": ""}, "proposers", "name at least one proposer configuration"),
        ({"proposers": "{not json"}, "proposers", "line 1: not JSON"),
        ({"judges": '{"kind": "remote", "api_key": "sk-1"}'}, "judges", "judge 2: a judge&#x27;s kind must be one of"),
        (
            {
                "proposers": '{"kind": "model", "name": "m", "api": "openai", "route": ["responses"], "model": "m", '
                '"base_url": "http://127.0.0.1:9/v1", "api_key_env": "VERIHARM_AGENT_KEY_PAGE"}'
            },
            "proposers",
            "route must be one of",
        ),
        ({"budget": "21"}, "budget", "less than or equal to 20"),
        ({"perturbations": []}, "perturbations", "choose at least one perturbation kind"),
    ],
)
def test_a_refused_launch_names_the_field_on_the_form_and_writes_nothing(admin_user, changes, field, message):
    target = AgentFactory(name="target-c")
    response = _post_launch(_client(admin_user), agents=[target.pk], **changes)
    assert response.status_code == 400
    html = response.content.decode()
    assert message in html
    # The message sits on the field it names (the errors just before the field's own input).
    assert field in response.context["form"].errors
    assert not GenerationRun.objects.exists()


@pytest.mark.django_db
def test_a_target_already_searched_is_refused_on_the_form(admin_user):
    run = _launch(admin_user)
    response = _post_launch(_client(admin_user), agents=[run.agents.get().pk])
    assert response.status_code == 409
    assert "already searched or being searched" in response.content.decode()
    assert GenerationRun.objects.count() == 1


@pytest.mark.django_db
def test_only_admins_cancel_and_a_finished_run_is_not_cancelled_again(admin_user, curator):
    run = _launch(admin_user)
    url = reverse("evaluation:generation-run-cancel", args=[run.pk])
    assert _client(curator).post(url).status_code == 403
    assert GenerationRun.objects.get(pk=run.pk).status == RunStatus.RUNNING
    admin = _client(admin_user)
    assert "Cancel the run" in _html(admin.get(url))
    response = admin.post(url, follow=True)
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert run.searches.get().ending == SearchEnding.CANCELLED
    assert "Cancelled two judges" in response.content.decode()
    cancelled_at = run.cancelled_at
    again = admin.post(url, follow=True).content.decode()
    assert "Not cancelled: the run has already ended (cancelled)" in again
    run.refresh_from_db()
    assert run.cancelled_at == cancelled_at
    # Ended: no cancel button, no refresh.
    page = _html(admin.get(reverse("evaluation:generation-run", args=[run.pk])))
    assert 'data-testid="cancel"' not in page and 'data-testid="refreshing"' not in page


@pytest.mark.django_db
def test_readers_read_annotators_never_and_only_admins_launch(admin_user, curator, annotator):
    run = _launch(admin_user)
    search = _kept_search(run)
    viewer = make_user("view", VIEWER)
    reads = [
        reverse("evaluation:generation-runs"),
        reverse("evaluation:generation-run", args=[run.pk]),
        reverse("evaluation:generation-run-progress", args=[run.pk]),
        reverse("evaluation:generation-search", args=[search.pk]),
    ]
    for user in (viewer, curator):
        client = _client(user)
        for url in reads:
            assert client.get(url).status_code == 200, url
        assert client.get(reverse("evaluation:generation-launch")).status_code == 403
        listing = _html(client.get(reverse("evaluation:generation-runs")))
        assert "two judges" in listing and 'data-testid="generation-launch-link"' not in listing
        # One search, ended, kept.
        assert '<td class="num">1</td><td class="num">1</td><td class="num">1</td></tr>' in listing
    for url in reads:
        assert _client(annotator).get(url).status_code == 403, url
    nav = _html(_client(curator).get(reverse("evaluation:generation-runs")))
    assert f'href="{reverse("evaluation:generation-runs")}">Generation</a>' in nav
    assert "Generation</a>" not in _client(annotator).get("/", follow=True).content.decode()


@pytest.mark.django_db
def test_progress_json_bad_page_and_missing_objects(admin_user, curator):
    run = _launch(admin_user, budget_usd=Decimal("2"))
    client = _client(curator)
    progress = client.get(reverse("evaluation:generation-run-progress", args=[run.pk])).json()
    assert progress == {
        "status": "running",
        "status_label": "Running",
        "total": 1,
        "done": 0,
        "running": 0,
        "queued": 1,
        "kept": 0,
        "percent": 0,
        "spent_usd": "0.0000",
        "budget_usd": "2.0000",
        "endings": {ending: 0 for ending in SearchEnding.values},
    }
    assert client.get(reverse("evaluation:generation-runs") + "?page=x").status_code == 400
    assert client.get(reverse("evaluation:generation-run", args=[run.pk + 999])).status_code == 404
    assert client.get(reverse("evaluation:generation-search", args=[999999])).status_code == 404
    assert client.get(reverse("evaluation:generation-run-progress", args=[run.pk + 999])).status_code == 404
    html = _html(client.get(reverse("evaluation:generation-run", args=[run.pk])))
    assert 'data-testid="no-report"' in html and "$0.0000</b> of <b>$2.0000" in html


@pytest.mark.django_db
def test_a_run_of_scripted_proposer_and_judges_says_it_is_synthetic_whoever_launched_it(admin_user, curator):
    run = _launch(admin_user)  # an admin's run, not the demo's: what it ran makes it synthetic
    assert not run.demo
    search = _kept_search(run)
    client = _client(curator)
    for url in (
        reverse("evaluation:generation-run", args=[run.pk]),
        reverse("evaluation:generation-search", args=[search.pk]),
    ):
        html = _html(client.get(url))
        assert 'data-testid="demo-banner"' in html and "Synthetic: scripted demo proposer" in html
    assert 'data-testid="demo-tag"' in _html(client.get(reverse("evaluation:generation-runs")))
    # Models as proposer and judges: nothing to say.
    model = {"kind": "model", "name": "some-model"}
    GenerationRun.objects.filter(pk=run.pk).update(proposer_configs=[model], judge_configs=[model])
    assert 'data-testid="demo-banner"' not in _html(client.get(reverse("evaluation:generation-run", args=[run.pk])))
    assert 'data-testid="demo-tag"' not in _html(client.get(reverse("evaluation:generation-runs")))


@pytest.mark.django_db
def test_the_kept_candidate_and_its_search_link_to_each_other(admin_user, curator, annotator):
    candidate = CandidateFactory(id="gen-kept-1")
    run = _launch(admin_user)
    search = _kept_search(run, candidate_id=candidate.external_id)
    client = _client(curator)
    search_html = _html(client.get(reverse("evaluation:generation-search", args=[search.pk])))
    assert (
        f'href="{reverse("candidates:detail", args=[candidate.external_id])}" data-testid="candidate-link"'
        in search_html
    )
    page = _html(client.get(reverse("candidates:detail", args=[candidate.external_id])))
    assert (
        f'href="{reverse("evaluation:generation-search", args=[search.pk])}" data-testid="generation-search-link"'
        in page
    )
    # A candidate no search kept has no such panel.
    other = CandidateFactory(id="imported-1")
    assert 'data-testid="generation-panel"' not in _html(
        client.get(reverse("candidates:detail", args=[other.external_id]))
    )


@pytest.mark.django_db
def test_a_model_proposers_calls_show_their_raw_reply_tokens_and_cost_escaped(admin_user, curator):
    run = _launch(admin_user)
    search = _kept_search(run)
    call = {
        "prompt_name": "proposer",
        "prompt_version": "3",
        "prompt_sha256": "ab" * 32,
        "route": "openai_chat",
        "model": "gpt-test",
        "status_code": 200,
        "request_text": "the prompt as sent",
        "reply_text": f'{{"instruction": "{HOSTILE}"}}',
        "input_tokens": 1234,
        "output_tokens": 56,
        "usage_estimated": False,
        "cost_usd": "0.012300",
        "latency": 0.5,
        "validation_error": "",
    }
    GenerationStep.objects.filter(search=search, kind=StepKind.PROPOSAL).update(
        calls=[call], cost_usd=Decimal("0.0123")
    )
    html = _html(_client(curator).get(reverse("evaluation:generation-search", args=[search.pk])))
    calls = html.split('data-testid="proposer-calls"')[1].split("</details>\n</details>")[0]
    assert "1 model call of scripted demo proposer" in calls
    assert "1234 input / 56 output tokens · $0.012300" in calls
    assert "&lt;script&gt;alert(" in calls and HOSTILE not in html
    assert "the prompt as sent" in calls
    assert '1234 input / 56 output tokens, <span data-testid="search-cost">$0.012300</span>' in html


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "selection"),
    [
        (
            {"selection_kind": "sample", "sample_size": "3", "sample_seed": "7"},
            {"kind": "sample", "size": 3, "seed": 7},
        ),
        ({"selection_kind": "filter", "filter_text": "EXT_ENV_VAR"}, {"kind": "filter", "text": "EXT_ENV_VAR"}),
    ],
)
def test_a_seeded_sample_or_a_filter_from_the_page_searches_the_tasks_the_service_selects(
    admin_user, changes, selection
):
    target = AgentFactory(name="target-d")
    response = _post_launch(_client(admin_user), agents=[target.pk], name="selected", **changes)
    assert response.status_code == 302
    run = GenerationRun.objects.get(name="selected")
    assert run.selection == selection
    expected, problem = source_tasks_select(selection)
    assert not problem and expected
    assert list(run.searches.order_by("pk").values_list("source_task_id", flat=True)) == [t["id"] for t in expected]


def _long_search(admin_user, iterations: int, chars: int) -> GenerationSearch:
    run = _launch(admin_user, budget=iterations)
    search = run.searches.get()
    GenerationStep.objects.bulk_create(long_search_steps(search, random.Random(7), iterations, chars))
    return search


class _CountingDiffs:
    """Counts the diffs computed (each one builds its own diff_match_patch)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        counter = self
        original = diffing.diff_match_patch

        class Counted(original):  # type: ignore[misc, valid-type]
            def __init__(self) -> None:
                super().__init__()
                counter.count += 1

        monkeypatch.setattr(diffing, "diff_match_patch", Counted)


@pytest.mark.django_db
def test_a_long_search_is_read_one_iteration_at_a_time_each_diff_computed_once(admin_user, monkeypatch):
    """20 iterations of 80,000-character proposals, read by a viewer: the page lists every iteration and
    shows one in full (the latest), computing its two diffs once; a second view computes none."""
    cache.clear()
    search = _long_search(admin_user, iterations=20, chars=80_000)
    diffs = _CountingDiffs(monkeypatch)
    client = _client(make_user("reader", VIEWER))
    url = reverse("evaluation:generation-search", args=[search.pk])
    html = _html(client.get(url))
    assert diffs.count == 2  # the latest proposal against t_seed and against iteration 19
    assert html.count('data-testid="iteration-line"') == 20
    assert html.count('data-testid="iteration" ') == 1 and 'data-testid="iteration" data-iteration="20"' in html
    # Long texts are compared line by line, and say so.
    assert 'data-mode="lines" data-testid="seed-diff"' in html and "compared line by line" in html
    assert 'data-mode="lines" data-testid="previous-diff"' in html
    # One iteration's texts, not twenty's: the two diffs of an 80 kB task and the page around them.
    assert len(html) < 450_000, len(html)
    _html(client.get(url))
    assert diffs.count == 2  # read back, not computed again
    # Another iteration, picked from the list: its diffs only.
    other = _html(client.get(f"{url}?iteration=3"))
    assert diffs.count == 4
    assert 'data-testid="iteration" data-iteration="3"' in other and other.count('data-testid="iteration" ') == 1
    assert 'href="?iteration=20#iteration-20"' in other


@pytest.mark.django_db
def test_a_proposal_too_long_to_diff_links_to_its_text_and_bad_iterations_are_refused(admin_user, curator, monkeypatch):
    cache.clear()
    search = _long_search(admin_user, iterations=2, chars=diffing.MAX_DIFF_CHARS + 1_000)
    diffs = _CountingDiffs(monkeypatch)
    client = _client(curator)
    url = reverse("evaluation:generation-search", args=[search.pk])
    html = _html(client.get(url))
    assert diffs.count == 0
    seed = html.split('data-testid="seed-diff">')[1].split("</div>")[0]
    text_url = reverse("evaluation:generation-proposal-text", args=[search.pk, 2])
    assert "Too large to diff here" in seed and f'href="{text_url}"' in seed
    previous = html.split('data-testid="previous-diff">')[1].split("</div>")[0]
    assert f'href="{reverse("evaluation:generation-proposal-text", args=[search.pk, 1])}"' in previous
    text = client.get(text_url)
    assert text.status_code == 200 and text["Content-Type"] == "text/plain; charset=utf-8"
    assert text.content.decode() == search.steps.get(kind=StepKind.PROPOSAL, iteration=2).instruction
    # An iteration the search has no proposal at, or no number at all.
    assert client.get(reverse("evaluation:generation-proposal-text", args=[search.pk, 3])).status_code == 404
    missing = client.get(f"{url}?iteration=3")
    assert missing.status_code == 404
    refused = client.get(f"{url}?iteration=abc")
    assert refused.status_code == 400 and "iteration" in refused.content.decode()
    assert client.get(f"{url}?iteration=21").status_code == 400


def _many_searches(admin_user, kept_first: int, kept_second: int, exhausted: int, queued: int) -> GenerationRun:
    """A run with that many searches kept at iteration 1, at iteration 2, out of iterations and queued,
    written as rows (a run of thousands is launched the same way)."""
    run = _launch(admin_user, name="many searches")
    first = run.searches.get()
    now = timezone.now()
    ended = {"status": "finished", "finished_at": now}
    shapes = (
        [{"ending": SearchEnding.KEPT, "kept_iteration": 1, **ended}] * kept_first
        + [{"ending": SearchEnding.KEPT, "kept_iteration": 2, **ended}] * kept_second
        + [{"ending": SearchEnding.BUDGET_EXHAUSTED, **ended}] * exhausted
        + [{}] * (queued - 1)
    )
    GenerationSearch.objects.bulk_create(
        GenerationSearch(
            run=run,
            agent=first.agent,
            source_task_id=f"task-{n:05d}",
            source_task=first.source_task,
            proposer=first.proposer,
            **shape,
        )
        for n, shape in enumerate(shapes)
    )
    return run


@pytest.mark.django_db
def test_a_run_of_many_searches_pages_them_and_counts_table_1_in_the_database(admin_user):
    run = _many_searches(admin_user, kept_first=40, kept_second=20, exhausted=30, queued=30)
    client = _client(make_user("reader", VIEWER))
    url = reverse("evaluation:generation-run", args=[run.pk])
    with CaptureQueriesContext(connection) as queries:
        html = _html(client.get(url))
    assert html.count("<tr data-search=") == 50
    assert "120 searches, 1–50 shown" in html and "Page 1 of 3" in html and 'href="?page=2" rel="next"' in html
    # Table 1 over the 90 that ended by the method: 60 successes, 40 at iteration 1 and 20 at 2.
    table = html.split('data-testid="search-report"')[1].split("</table>")[0]
    assert "66.7%" in table and "1.33" in table and "44.4%" in table
    assert 'data-ending="kept">60<' in html and 'data-ending="budget_exhausted">30<' in html
    # The searches' page, not every search: as many queries with three times as many.
    GenerationSearch.objects.bulk_create(
        GenerationSearch(
            run=run, agent=run.agents.get(), source_task_id=f"more-{n}", source_task={}, proposer=PROPOSER_NAME
        )
        for n in range(240)
    )
    with CaptureQueriesContext(connection) as more:
        larger = _html(client.get(url))
    assert len(more) == len(queries) and larger.count("<tr data-search=") == 50
    last = _html(client.get(url + "?page=8"))
    assert "Page 8 of 8" in last and last.count("<tr data-search=") == 10
    assert client.get(url + "?page=0").status_code == 400


@pytest.mark.django_db
def test_the_progress_json_carries_every_ending_so_the_page_updates_them_in_place(admin_user, curator):
    run = _many_searches(admin_user, kept_first=2, kept_second=1, exhausted=1, queued=2)
    progress = _client(curator).get(reverse("evaluation:generation-run-progress", args=[run.pk])).json()
    assert progress["done"] == 4 and progress["total"] == 6
    assert progress["endings"]["kept"] == 3 and progress["endings"]["budget_exhausted"] == 1
    html = _html(_client(curator).get(reverse("evaluation:generation-run", args=[run.pk])))
    assert 'data-testid="ended-since" hidden' in html
