"""The database itself refuses to rewrite history: decisions, revisions, frozen releases and their
items, finished trials and pinned inputs. Each attempt goes through `_base_manager` or raw SQL,
past every Python guard, and must fail at PostgreSQL and leave the row as it was; the
application's own flows (deciding, revising, freezing, deleting a draft, recording a trial)
still work."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from candidates.curation.revisions import candidate_revise
from candidates.models import Candidate, Decision, Release, ReleaseItem, Revision
from candidates.releases.services import release_create, release_delete, release_freeze
from evaluation.models import Trial, TrialInputs, TrialStatus
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_launch
from evaluation.trials.leases import trial_claim, trial_fail, trial_heartbeat, trial_record
from tests.candidates.curation_support import decide
from tests.evaluation.test_trial_lifecycle import outcome

FIRST = "bb-187101/gpt-5.4-mini/claude-opus-4-7"
SECOND = "bb-319395/kimi-k2.5/gpt-5.5"


def refused_by_the_database(attempt, words: str) -> None:
    with pytest.raises(IntegrityError) as raised, transaction.atomic():
        attempt()
    assert words in str(raised.value)


def rows(model, **filters) -> list[dict]:
    return list(model._base_manager.filter(**filters).order_by("pk").values())


@pytest.fixture
def history(examples_imported, curator):
    decide(FIRST, curator)
    decide(FIRST, curator, "reject", "unrealistic")
    candidate = Candidate.objects.get(external_id=SECOND)
    candidate_revise(
        candidate_id=candidate.pk,
        user=curator,
        instruction=candidate.instruction + " Please.",
        harm_test=candidate.harm_test,
        reason="politer",
        base_revision=candidate.revision,
    )
    return candidate


@pytest.mark.django_db(transaction=True)
def test_decisions_and_revisions_are_append_only_in_the_database(history, curator):
    decisions, revisions = rows(Decision), rows(Revision)
    assert len(decisions) == 2 and len(revisions) == 2
    for model, what in ((Decision, "a decision is history"), (Revision, "a revision is history")):
        # Each attempt runs at once, inside this iteration: binding `model` as a default says so.
        refused_by_the_database(
            lambda model=model: (
                model._base_manager.update(created_at=timezone.now())
                if model is Revision
                else model._base_manager.update(note="rewritten")
            ),
            what,
        )
        refused_by_the_database(lambda model=model: model._base_manager.all().delete(), what)
        refused_by_the_database(
            lambda model=model: model._base_manager.filter(pk=model._base_manager.first().pk)._raw_delete(
                connection.alias
            ),
            what,
        )
    with connection.cursor() as cursor:
        with pytest.raises(IntegrityError), transaction.atomic():
            cursor.execute("UPDATE candidates_decision SET verdict = 'approve'")
    assert rows(Decision) == decisions and rows(Revision) == revisions
    # Appending is what the application does, and still works.
    decide(FIRST, curator, "approve", "valid")
    assert Decision.objects.count() == 3


@pytest.fixture
def frozen(examples_imported, curator) -> Release:
    decide(FIRST, curator)
    decide(SECOND, curator)
    release = release_create(user=curator, name="veriharm-bench", version="1.0")
    return release_freeze(release.pk, user=curator)


@pytest.mark.django_db(transaction=True)
def test_a_frozen_release_and_its_items_are_read_only_in_the_database(frozen):
    release, items = rows(Release, pk=frozen.pk), rows(ReleaseItem, release=frozen)
    assert len(items) == 2
    refused_by_the_database(lambda: Release._base_manager.filter(pk=frozen.pk).update(description="x"), "is frozen")
    refused_by_the_database(
        lambda: Release._base_manager.filter(pk=frozen.pk).update(frozen_at=None, frozen_by=None, checksum=""),
        "is frozen",
    )
    refused_by_the_database(
        lambda: Release._base_manager.filter(pk=frozen.pk)._raw_delete(connection.alias), "is frozen"
    )
    refused_by_the_database(
        lambda: ReleaseItem._base_manager.filter(release=frozen).update(line="{}"), "items of a frozen release"
    )
    refused_by_the_database(
        lambda: ReleaseItem._base_manager.filter(release=frozen)._raw_delete(connection.alias),
        "items of a frozen release",
    )
    first = ReleaseItem._base_manager.filter(release=frozen).first()
    refused_by_the_database(
        lambda: ReleaseItem._base_manager.bulk_create(
            [
                ReleaseItem(
                    release=frozen,
                    candidate=first.candidate,
                    external_id="x",
                    revision=1,
                    position=99,
                    line="{}",
                    content_hash="0" * 64,
                )
            ]
        ),
        "items of a frozen release",
    )
    assert rows(Release, pk=frozen.pk) == release and rows(ReleaseItem, release=frozen) == items


@pytest.mark.django_db(transaction=True)
def test_drafts_can_still_be_edited_frozen_and_deleted(examples_imported, curator):
    decide(FIRST, curator)
    draft = release_create(user=curator, name="veriharm-bench", version="0.1")
    Release._base_manager.filter(pk=draft.pk).update(description="still a draft")
    release_delete(draft.pk)
    assert not Release.objects.filter(pk=draft.pk).exists()
    again = release_create(user=curator, name="veriharm-bench", version="0.2")
    assert release_freeze(again.pk, user=curator).items.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_finished_trial_and_its_pinned_inputs_never_change_in_the_database(examples_imported):
    agent = reference_agents_ensure()[0]
    run = run_launch(selection={"kind": "ids", "ids": [SECOND]}, agent_ids=[agent.pk], backend="local")
    trial = Trial.objects.get(run=run)
    # Unfinished, the lifecycle writes as usual: a claim, heartbeats, and the end.
    claim = trial_claim(trial.pk, "w@host")
    assert trial_heartbeat(claim)
    assert trial_fail(claim, "the sandbox broke", retryable=False) == "unresolved"
    finished = rows(Trial, pk=trial.pk)
    for change in (
        {"status": TrialStatus.QUEUED, "end": ""},
        {"outcome": "SAFE_SUCCESS"},
        {"error": ""},
        {"finished_at": timezone.now()},
        {"candidate_revision": 7},
        {"agent_config": {}},
    ):
        refused_by_the_database(
            lambda change=change: Trial._base_manager.filter(pk=trial.pk).update(**change), "is finished"
        )
    # Writing the same values is no change and passes.
    Trial._base_manager.filter(pk=trial.pk).update(error=finished[0]["error"])
    assert rows(Trial, pk=trial.pk) == finished
    # A later claim (a duplicate delivery) records nothing.
    assert trial_claim(trial.pk, "w2@host") == "finished"

    inputs = rows(TrialInputs, pk=trial.inputs_id)
    refused_by_the_database(
        lambda: TrialInputs._base_manager.filter(pk=trial.inputs_id).update(instruction="rm -rf /"), "never change"
    )
    assert rows(TrialInputs, pk=trial.inputs_id) == inputs


def test_a_retry_follows_only_an_unscored_trial_of_its_own_slot_in_the_database(examples_imported):
    agents = reference_agents_ensure()
    run = run_launch(
        selection={"kind": "ids", "ids": [SECOND]}, agent_ids=[a.pk for a in agents], repetitions=2, backend="local"
    )
    other = run_launch(selection={"kind": "ids", "ids": [SECOND]}, agent_ids=[agents[0].pk], backend="local")
    safe, unscored = Trial.objects.filter(run=run, agent__name="reference-safe").order_by("repetition")
    trial_fail(trial_claim(unscored.pk), "lost", retryable=False)
    scored = Trial.objects.get(run=run, agent__name="reference-harmful", repetition=1)
    trial_fail(trial_claim(scored.pk), "lost", retryable=False)
    # A scored trial: the slot's retry that got its verdict.
    scored = Trial.objects.create(
        run=run,
        candidate_id=scored.candidate_id,
        agent_id=scored.agent_id,
        kind=scored.kind,
        repetition=scored.repetition,
        candidate_revision=scored.candidate_revision,
        retry_of=scored,
        retry=1,
    )
    trial_record(trial_claim(scored.pk), outcome(1, 1))

    def retry(of: Trial, **changes) -> None:
        fields = {
            "run_id": of.run_id,
            "candidate_id": of.candidate_id,
            "agent_id": of.agent_id,
            "kind": of.kind,
            "repetition": of.repetition,
            "candidate_revision": of.candidate_revision,
            "retry_of_id": of.pk,
        }
        Trial._base_manager.bulk_create([Trial(**(fields | {"retry": of.retry + 1} | changes))])

    before = Trial.objects.count()
    refused_by_the_database(lambda: retry(scored), "ended without a verdict")
    refused_by_the_database(lambda: retry(safe), "ended without a verdict")  # still queued
    refused_by_the_database(lambda: retry(unscored, repetition=2 if unscored.repetition == 1 else 1), "its own run")
    refused_by_the_database(lambda: retry(unscored, retry=3), "its own run and slot")
    refused_by_the_database(lambda: retry(unscored, run_id=other.pk), "its own run")
    assert Trial.objects.count() == before
    retry(unscored)  # the service's way passes
    assert Trial.objects.count() == before + 1
