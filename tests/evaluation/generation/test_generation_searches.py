"""Generation searches end to end: a real Celery worker, real bubblewrap sandboxes, the scripted demo
proposer and judges, the scripted demo agents as targets (evaluation.generation.scripted says
which search goes which way)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import transaction

from candidates.curation.search_report import search_report
from candidates.curation.selectors import search_rows
from candidates.models import Candidate, Search
from candidates.pipeline import format as fmt
from candidates.pool.synthetic import synthetic_count, synthetic_ids
from candidates.services import candidate_import_lines
from demo.runs import demo_agents_ensure
from evaluation.agents.pinning import agent_pin_sha256
from evaluation.generation import recording
from evaluation.generation.contracts import ProposalRequest, ProposalResult
from evaluation.generation.launch import generation_cancel, generation_launch
from evaluation.generation.models import GenerationRun, GenerationSearch
from evaluation.generation.scripted import PROPOSER_NAME, ScriptedProposer
from evaluation.generation.states import RunStatus, SearchEnding, StepKind
from evaluation.generation.steps import PASSES_UNTOUCHED
from evaluation.models import Agent, AgentKind, Trial
from evaluation.provenance.synthetic import run_synthetic_text
from tests.evaluation.chat_server import ScriptedChat, chat_server
from tests.evaluation.conftest import wait_until
from veriharm_site.refusals import Conflict

KEY_ENV = "VERIHARM_AGENT_KEY_GENERATION"
SCRIPTED_JUDGES = [{"kind": "scripted", "temperament": "strict"}, {"kind": "scripted", "temperament": "lenient"}]


@pytest.fixture
def proposer_requests(monkeypatch) -> list[ProposalRequest]:
    """Every request the scripted proposer got, as the worker thread (same process) asked it."""
    requests: list[ProposalRequest] = []
    original = ScriptedProposer.propose

    def propose(self: ScriptedProposer, request: ProposalRequest) -> ProposalResult:
        requests.append(request)
        return original(self, request)

    monkeypatch.setattr(ScriptedProposer, "propose", propose)
    return requests


def _agent(name: str) -> int:
    return next(a.pk for a in demo_agents_ensure() if a.name == name)


def _finished(run: GenerationRun, timeout: float = 300) -> GenerationRun:
    wait_until(lambda: GenerationRun.objects.get(pk=run.pk).status != RunStatus.RUNNING, timeout, f"run {run.name}")
    return GenerationRun.objects.get(pk=run.pk)


def _kinds(search: GenerationSearch) -> list[tuple[str, int]]:
    return [(s.kind, s.iteration) for s in search.steps.exclude(kind=StepKind.JUDGEMENT).order_by("iteration", "pk")]


@pytest.mark.django_db(transaction=True)
def test_searches_keep_a_first_or_third_iteration_success_and_store_it_as_an_import(
    sandboxes_ready, celery_worker_thread, proposer_requests
):
    run = generation_launch(
        name="reckless, two tasks",
        selection={"kind": "ids", "ids": ["bashbench-489407", "bashbench-261162"]},
        agent_ids=[_agent("demo-reckless")],
        proposers=[{"kind": "scripted"}],
        judges=SCRIPTED_JUDGES,
        budget=3,
        backend="local",
    )
    run = _finished(run)
    assert run.status == RunStatus.FINISHED
    first = run.searches.get(source_task_id="bashbench-489407")
    third = run.searches.get(source_task_id="bashbench-261162")

    # The permissions task: kept at once, after the seed rollout, one check and one rollout.
    assert (first.ending, first.kept_iteration) == (SearchEnding.KEPT, 1)
    assert _kinds(first) == [("seed", 0), ("proposal", 1), ("noop_check", 1), ("rollout", 1)]
    assert "verifier sha256:" in first.steps.get(kind=StepKind.ROLLOUT).system_identity
    # The start-up file task: the first harm test passes untouched and is fed back, never run.
    assert (third.ending, third.kept_iteration) == (SearchEnding.KEPT, 3)
    assert _kinds(third) == [
        ("seed", 0),
        ("proposal", 1),
        ("noop_check", 1),
        ("proposal", 2),
        ("noop_check", 2),
        ("rollout", 2),
        ("proposal", 3),
        ("noop_check", 3),
        ("rollout", 3),
    ]
    check = third.steps.get(kind=StepKind.NOOP_CHECK, iteration=1)
    assert (check.r_harm, check.note) == (1, PASSES_UNTOUCHED)
    missed = third.steps.get(kind=StepKind.ROLLOUT, iteration=2)
    assert (missed.r_task, missed.r_harm) == (1, 0) and "solution.sh" in missed.transcript
    # The third request carried both earlier attempts: the refused one with its note, and
    # iteration 2's proposal, its transcript and (r_task, r_harm).
    asked = [r for r in proposer_requests if r.seed.external_id == "bashbench-261162"]
    assert [r.iteration for r in asked] == [1, 2, 3]
    assert [f.iteration for f in asked[2].feedback] == [1, 2]
    refused, second = asked[2].feedback
    assert refused.note == PASSES_UNTOUCHED and refused.r_task is None
    proposal_2 = third.steps.get(kind=StepKind.PROPOSAL, iteration=2)
    assert (second.instruction, second.harm_test) == (proposal_2.instruction, proposal_2.harm_test)
    assert (second.transcript, second.r_task, second.r_harm) == (missed.transcript, 1, 0)
    assert asked[0].seed_transcript and asked[0].feedback == ()

    # Stored as an import stores the pipeline's output: candidates with provenance and judges, ranked.
    for search, iteration in ((first, 1), (third, 3)):
        candidate = Candidate.objects.get(external_id=search.candidate_external_id)
        assert search.candidate_external_id.startswith(f"gen-{run.pk}-{search.source_task_id}-demo-reckless-")
        assert candidate.source_task.external_id == search.source_task_id
        assert (candidate.target_agent, candidate.proposer, candidate.iteration) == (
            "demo-reckless",
            PROPOSER_NAME,
            iteration,
        )
        judges = sorted(candidate.judgements.values_list("judge", flat=True))
        assert judges == ["scripted demo judge (lenient)", "scripted demo judge (strict)"]
        sums = [sum(j.scores.values()) for j in search.steps.filter(kind=StepKind.JUDGEMENT)]
        assert candidate.quality == pytest.approx(sum(sums) / 2) and candidate.rank is not None
        assert candidate.references["harmful"] and candidate.references["safe"]
        # No model proposed or judged it, though no demo launched the run: it is marked synthetic.
        assert candidate.pk in synthetic_ids([candidate.pk])
    assert synthetic_count() == 2 and "Synthetic:" in run_synthetic_text(run.reference_run)
    # The kept candidates' reference check: the safe, harmful and no-op references of each, launched.
    checked = Trial.objects.filter(run=run.reference_run)
    assert sorted(set(checked.values_list("candidate__external_id", flat=True))) == sorted(
        [first.candidate_external_id, third.candidate_external_id]
    )
    assert sorted(set(checked.values_list("agent__name", flat=True))) == [
        "reference-harmful",
        "reference-noop",
        "reference-safe",
    ]
    # Table 1: two searches of demo-reckless, first successes at iterations 1 and 3.
    report = search_report(search_rows())
    row = next(r for b in report.blocks for r in b.rows if r.target_agent == "demo-reckless")
    assert (row.searches, row.successes, row.iteration_counts) == (2, 2, (1, 0, 1))

    # Recording the end again imports identical lines: nothing changes.
    lines = [(fmt.Location("again", n), json.dumps(line)) for n, line in enumerate(recording.pipeline_lines(third), 1)]
    summary = candidate_import_lines(lines)
    assert (summary.created, summary.unchanged, summary.searches_created, summary.searches_unchanged) == (0, 1, 0, 1)


@pytest.mark.django_db(transaction=True)
def test_a_search_without_success_spends_its_budget_and_errors_or_a_spent_usd_budget_end_searches(
    sandboxes_ready, celery_worker_thread, tmp_path
):
    nothing_to_spend = generation_launch(
        name="no money",
        selection={"kind": "ids", "ids": ["bashbench-261162"]},
        agent_ids=[_agent("demo-careful")],
        proposers=[{"kind": "scripted"}],
        judges=SCRIPTED_JUDGES,
        budget_usd="0",
        backend="local",
    )
    run = generation_launch(
        name="careful",
        selection={"kind": "ids", "ids": ["bashbench-489407", "bashbench-522703"]},
        agent_ids=[_agent("demo-careful")],
        proposers=[{"kind": "scripted"}],
        judges=SCRIPTED_JUDGES,
        budget=2,
        backend="local",
    )
    run = _finished(run)
    assert run.status == RunStatus.FINISHED and run.reference_run is None  # nothing kept, nothing to check
    spent = run.searches.get(source_task_id="bashbench-489407")
    assert (spent.ending, spent.kept_iteration, spent.candidate_external_id) == (
        SearchEnding.BUDGET_EXHAUSTED,
        None,
        "",
    )
    rollouts = spent.steps.filter(kind=StepKind.ROLLOUT).order_by("iteration")
    assert [(r.iteration, r.r_task, r.r_harm) for r in rollouts] == [(1, 1, 0), (2, 1, 0)]
    assert not spent.steps.filter(kind=StepKind.JUDGEMENT).exists()
    record = Search.objects.get(source_task_external_id="bashbench-489407", target_agent="demo-careful")
    assert (record.proposer, record.budget, record.succeeded, record.candidate_id) == (PROPOSER_NAME, 2, False, None)
    assert list(record.attempts.order_by("iteration").values_list("task_passed", "harm_detected")) == [
        (True, False),
        (True, False),
    ]
    assert not Candidate.objects.filter(external_id__startswith=f"gen-{run.pk}-").exists()

    error = run.searches.get(source_task_id="bashbench-522703")
    assert error.ending == SearchEnding.PROPOSER_ERROR
    assert "no proposal for the task bashbench-522703" in error.steps.get(kind=StepKind.PROPOSAL).error
    assert not Search.objects.filter(source_task_external_id="bashbench-522703").exists()

    # A run that may spend nothing asks no proposer and says its budget is spent.
    nothing_to_spend = _finished(nothing_to_spend)
    assert nothing_to_spend.status == RunStatus.BUDGET_SPENT
    poor = nothing_to_spend.searches.get()
    assert poor.ending == SearchEnding.USD_BUDGET_SPENT
    assert "USD budget of $0" in poor.steps.get(kind=StepKind.PROPOSAL).error

    # The export holds the generated search and re-imports as a no-op.
    exported = tmp_path / "export.jsonl"
    call_command("export_pipeline", output=str(exported))
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert any(line["kind"] == "search" and line["target_agent"] == "demo-careful" for line in lines)
    summary = candidate_import_lines(fmt.iter_lines(exported.read_text().splitlines(), "export.jsonl"))
    assert summary.searches_created == 0 and summary.searches_unchanged == 1 and summary.created == 0


@pytest.mark.django_db(transaction=True)
def test_a_search_in_docker_sandboxes_runs_its_target_as_pinned_at_launch(sandboxes_ready, celery_worker_thread):
    reckless, careful = Agent.objects.get(pk=_agent("demo-reckless")), Agent.objects.get(pk=_agent("demo-careful"))
    with transaction.atomic():  # published on commit: the worker starts after the edit below
        run = generation_launch(
            name="reckless in docker",
            selection={"kind": "ids", "ids": ["bashbench-489407"]},
            agent_ids=[reckless.pk],
            proposers=[{"kind": "scripted"}],
            judges=SCRIPTED_JUDGES,
            budget=1,
            backend="docker",
            reference_check=False,
        )
        # The agent edited after the launch: it would now solve safely and the search would end unkept.
        Agent.objects.filter(pk=reckless.pk).update(config=careful.config)
    run = _finished(run)
    search = run.searches.get()
    assert search.agent_config["config"] == reckless.config != careful.config
    assert search.agent_config_sha256 == agent_pin_sha256(search.agent_config)
    assert (run.status, search.ending, search.kept_iteration) == (RunStatus.FINISHED, SearchEnding.KEPT, 1)
    assert _kinds(search) == [("seed", 0), ("proposal", 1), ("noop_check", 1), ("rollout", 1)]
    verdicts = {s.kind: (s.r_task, s.r_harm) for s in search.steps.exclude(kind=StepKind.PROPOSAL)}
    assert verdicts == {
        StepKind.SEED: (1, None),  # no harm test yet: only V_task runs on t_seed
        StepKind.NOOP_CHECK: (0, 0),
        StepKind.ROLLOUT: (1, 1),
        StepKind.JUDGEMENT: (None, None),
    }
    ran = search.steps.exclude(kind__in=[StepKind.PROPOSAL, StepKind.JUDGEMENT])
    assert all(len(s.inputs_sha256) == 64 and s.system_identity.startswith("docker image sha256:") for s in ran)
    assert Candidate.objects.get(external_id=search.candidate_external_id).rank is not None


@pytest.mark.django_db(transaction=True)
def test_a_search_whose_pinned_target_was_altered_ends_at_once_without_running_it(
    sandboxes_ready, celery_worker_thread
):
    with transaction.atomic():  # published on commit: the worker starts after the edit below
        run = generation_launch(
            name="altered pin",
            selection={"kind": "ids", "ids": ["bashbench-489407"]},
            agent_ids=[_agent("demo-reckless")],
            proposers=[{"kind": "scripted"}],
            judges=SCRIPTED_JUDGES,
            budget=3,
            backend="local",
            reference_check=False,
        )
        search = run.searches.get()
        altered = {**search.agent_config, "time_limit": 1}
        GenerationSearch.objects.filter(pk=search.pk).update(agent_config=altered)
    run = _finished(run)
    search = run.searches.get()
    # Refused as a trial with altered inputs is: once, saying why, and nothing ran in a sandbox.
    assert (search.ending, search.failures) == (SearchEnding.INFRASTRUCTURE, 1)
    assert "cannot start: the pinned agent configuration does not match its sha256" in search.error
    assert "Traceback" not in search.error and not search.steps.exists()


@pytest.mark.django_db(transaction=True)
def test_cancel_stops_a_search_between_steps(sandboxes_ready, celery_worker_thread):
    run = generation_launch(
        name="to cancel",
        selection={"kind": "ids", "ids": ["bashbench-489407"]},
        agent_ids=[_agent("demo-careful")],
        proposers=[{"kind": "scripted"}],
        judges=SCRIPTED_JUDGES,
        budget=5,
        backend="local",
    )
    search = run.searches.get()
    wait_until(lambda: search.steps.filter(kind=StepKind.PROPOSAL).exists(), 120, "the first proposal")
    generation_cancel(run.pk)
    wait_until(lambda: GenerationSearch.objects.get(pk=search.pk).ending != "", 120, "the search to stop")
    search.refresh_from_db()
    assert search.ending == SearchEnding.CANCELLED
    run.refresh_from_db()
    # Nothing was recorded after the cancel, and the search never reached its budget.
    assert not search.steps.filter(created_at__gt=run.cancelled_at).exists()
    assert search.steps.filter(kind=StepKind.PROPOSAL).count() < 5
    assert run.status == RunStatus.CANCELLED and run.spent_usd == Decimal(0)
    steps = search.steps.count()
    with pytest.raises(Conflict, match="already ended"):
        generation_cancel(run.pk)
    assert search.steps.count() == steps and GenerationRun.objects.get(pk=run.pk).status == RunStatus.CANCELLED


@pytest.mark.django_db(transaction=True)
def test_a_model_calling_target_reaches_its_model_through_the_gateway_charged_to_the_usd_budget(
    sandboxes_ready, celery_worker_thread, monkeypatch
):
    monkeypatch.setenv(KEY_ENV, "sk-generation-key")
    # Two calls in the seed rollout at 0.006 USD each (1000 input, 200 output tokens at 3 and 15 USD
    # per million) spend the run's 0.01 USD: the proposer is never asked.
    chat = ScriptedChat([["ls"], "Done."], api_key="sk-generation-key", usage=(1000, 200))
    with chat_server(chat):
        agent = Agent.objects.create(
            name="priced-target",
            kind=AgentKind.OPENAI_COMPATIBLE,
            model="scripted-1",
            config={
                "base_url": chat.base_url,
                "model": "scripted-1",
                "api_key_env": KEY_ENV,
                "prices": {"scripted-1": {"input": 3, "output": 15}},
            },
            time_limit=120,
        )
        run = generation_launch(
            name="priced",
            selection={"kind": "ids", "ids": ["bashbench-489407"]},
            agent_ids=[agent.pk],
            proposers=[{"kind": "scripted"}],
            judges=SCRIPTED_JUDGES,
            budget_usd="0.01",
            backend="local",
        )
        run = _finished(run)
    search = run.searches.get()
    seed = search.steps.get(kind=StepKind.SEED)
    assert [s["kind"] for s in seed.steps] == ["message", "command", "message"] and "$ ls" in seed.transcript
    calls = list(search.model_calls.values_list("step_kind", "input_tokens", "output_tokens", "cost_usd"))
    assert calls == [("seed", 1000, 200, Decimal("0.006"))] * 2
    assert run.spent_usd == Decimal("0.012") and run.status == RunStatus.BUDGET_SPENT
    assert search.ending == SearchEnding.USD_BUDGET_SPENT
    assert search.steps.get(kind=StepKind.PROPOSAL).budget_spent
