"""Each trial runs exactly the inputs pinned at launch, says what they were, and refuses altered ones."""

from __future__ import annotations

import json

import pytest
from celery.contrib.testing.worker import start_worker
from django.db import IntegrityError, connection, transaction

from candidates.curation.revisions import candidate_revise
from candidates.models import Candidate
from candidates.pipeline.format import canonical_json
from candidates.releases.services import release_create, release_freeze
from evaluation.agents.pinning import agent_pin_sha256
from evaluation.models import Agent, AgentKind, Trial, TrialInputs, TrialStatus
from evaluation.models.taxonomy import TrialEnd
from evaluation.runs import selectors as run_selectors
from evaluation.runs.agents import agent_create, reference_agents_ensure
from evaluation.runs.launch import run_launch
from evaluation.runs.refusals import LaunchRefused
from evaluation.trials import execution, pinning
from tests.candidates.curation_support import decide
from tests.evaluation.conftest import wait_for_run
from tests.evaluation.fake_sandbox import FakeBackend, ok
from veriharm_site.celery import app

SAFE_ID = "bb-319395/kimi-k2.5/gpt-5.5"
OTHER_ID = "bb-187101/gpt-5.4-mini/claude-opus-4-7"
EDITED = "EDITED AFTER THE FREEZE: also delete every log file."


def _cat_agent() -> Agent:
    # Prints the task it was given: the transcript then shows which instruction the trial ran.
    return agent_create(
        name="cat-the-task", kind=AgentKind.COMMAND, config={"command": "cat {task_file}"}, model="none", harness="cat"
    )


def _frozen_release(curator):
    decide(SAFE_ID, curator)
    decide(OTHER_ID, curator)
    release = release_create(user=curator, name="pinning", version="1.0")
    return release_freeze(release.pk, user=curator)


def test_launch_pins_inputs_once_per_content_with_hashes(examples_imported):
    agents = reference_agents_ensure()
    run = run_launch(
        selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[a.pk for a in agents], repetitions=2, backend="local"
    )
    trials = list(Trial.objects.filter(run=run).select_related("inputs"))
    assert len(trials) == 6 and len({t.inputs_id for t in trials}) == 1  # one row for one revision's content
    inputs = trials[0].inputs
    candidate = Candidate.objects.select_related("source_task").get(external_id=SAFE_ID)
    assert inputs.instruction == candidate.instruction and inputs.harm_test == candidate.harm_test
    assert inputs.instruction_sha256 == pinning.sha256_text(candidate.instruction)
    assert inputs.task_test_sha256 == pinning.sha256_text(candidate.source_task.task_test)
    assert inputs.environment_sha256 == pinning.sha256_text(canonical_json(candidate.source_task.environment))
    safe = next(t for t in trials if t.agent.name == "reference-safe")
    assert safe.agent_config["references"] == {"safe": candidate.references["safe"]}
    assert safe.agent_config_sha256 == agent_pin_sha256(safe.agent_config)
    assert len(run.inputs_sha256) == 64 and run.release is None


def test_altered_inputs_are_refused_before_anything_runs(examples_imported):
    agents = reference_agents_ensure()
    run = run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[agents[0].pk], backend="local")
    trial = Trial.objects.get(run=run)
    weakened = "def test_x():\n    assert True\n"
    # The database refuses the change (a trigger on PostgreSQL) ...
    with pytest.raises(IntegrityError, match="never change"), transaction.atomic():
        TrialInputs.objects.filter(pk=trial.inputs_id).update(harm_test=weakened)
    # ... and one made past it (a superuser turning triggers off, a doctored dump restored) is still
    # caught by the worker's hash check.
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        TrialInputs.objects.filter(pk=trial.inputs_id).update(harm_test=weakened)
        cursor.execute("SET LOCAL session_replication_role = origin")
    backend = FakeBackend(lambda sandbox, command: ok())
    assert execution.trial_execute(trial.pk, backend_factory=lambda name: backend) == "unresolved"
    trial.refresh_from_db()
    assert "harm test of inputs" in trial.error and "does not match its sha256" in trial.error
    assert trial.end == TrialEnd.INFRASTRUCTURE and backend.log == [] and backend.environments == []


def test_an_altered_agent_configuration_is_refused(examples_imported):
    agents = reference_agents_ensure()
    run = run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[agents[0].pk], backend="local")
    trial = Trial.objects.get(run=run)
    config = dict(trial.agent_config, references={"safe": "rm -rf /app"})
    Trial.objects.filter(pk=trial.pk).update(agent_config=config)
    backend = FakeBackend(lambda sandbox, command: ok())
    assert execution.trial_execute(trial.pk, backend_factory=lambda name: backend) == "unresolved"
    assert "agent configuration does not match its sha256" in Trial.objects.get(pk=trial.pk).error
    assert backend.log == []


def test_a_draft_or_altered_release_cannot_be_evaluated(examples_imported, curator):
    agent = reference_agents_ensure()[0]
    draft = release_create(user=curator, name="draft", version="0.1")
    with pytest.raises(LaunchRefused, match="only a frozen release can be evaluated"):
        run_launch(selection={"kind": "release", "release": draft.pk}, agent_ids=[agent.pk], backend="local")
    assert not Trial.objects.exists()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_release_run_evaluates_the_frozen_records_after_an_edit(
    sandboxes_ready, examples_imported, curator, curator_client
):
    release = _frozen_release(curator)
    records = {item.external_id: json.loads(item.line) for item in release.items.all()}
    app.control.purge()
    run = run_launch(
        selection={"kind": "release", "release": release.pk},
        agent_ids=[_cat_agent().pk],
        backend="local",
        name="frozen",
    )
    # A curator revises the candidate after launch and before any worker picks the trial up.
    candidate = Candidate.objects.get(external_id=SAFE_ID)
    candidate_revise(
        candidate_id=candidate.pk,
        user=curator,
        instruction=candidate.instruction + "\n" + EDITED,
        harm_test=candidate.harm_test,
        reason="wording",
        base_revision=1,
    )
    with start_worker(
        app, pool="solo", concurrency=1, perform_ping_check=False, loglevel="WARNING", shutdown_timeout=30
    ):
        progress = wait_for_run(run, timeout=180)
    assert progress["done"] == 2, progress

    run.refresh_from_db()
    assert run.release_id == release.pk and run.release_checksum == release.checksum
    for trial in Trial.objects.filter(run=run).select_related("inputs", "candidate"):
        record = records[trial.candidate.external_id]
        assert trial.status == TrialStatus.DONE and trial.candidate_revision == 1
        assert trial.inputs.instruction_sha256 == pinning.sha256_text(record["instruction"])
        assert trial.inputs.harm_test_sha256 == pinning.sha256_text(record["harm_test"])
        assert trial.inputs.task_test_sha256 == pinning.sha256_text(record["source_task"]["task_test"])
        assert trial.inputs.environment_sha256 == pinning.sha256_text(
            canonical_json(record["source_task"].get("environment") or {})
        )
        assert record["instruction"].splitlines()[0] in trial.agent_output and EDITED not in trial.agent_output
        assert trial.system_identity.startswith("local")
    edited = Trial.objects.select_related("candidate").get(run=run, candidate__external_id=SAFE_ID)
    assert (
        edited.stale
        and not Trial.objects.select_related("candidate").get(run=run, candidate__external_id=OTHER_ID).stale
    )
    assert run_selectors.run_stale_count(run) == 1

    page = curator_client.get(f"/evaluation/runs/{run.pk}/").content.decode()
    assert release.checksum in page and "1</b> trial of a revision since superseded" in page
    trial_page = curator_client.get(f"/evaluation/trials/{edited.pk}/").content.decode()
    assert edited.inputs.digest in trial_page and "stale: the candidate is now at 2" in trial_page
    api = curator_client.get(f"/api/evaluation/trials/{edited.pk}/").json()
    assert api["inputs"]["instruction_sha256"] == pinning.sha256_text(records[SAFE_ID]["instruction"])
    assert api["stale"] is True and api["system_identity"] == edited.system_identity
    assert curator_client.get(f"/api/evaluation/runs/{run.pk}/").json()["release_checksum"] == release.checksum
