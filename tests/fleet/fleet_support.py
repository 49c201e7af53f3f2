"""Rows a fleet test starts from: heartbeats as workers write them, trials as workers leave them."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from candidates.models import Candidate
from evaluation.fleet.models import WorkerHeartbeat
from evaluation.models import Run, Trial, TrialStatus
from evaluation.models.taxonomy import TrialEnd
from evaluation.runs.agents import reference_agents_ensure
from tests.candidates.curation_support import import_lines
from tests.factories import CandidateLineFactory


def no_other_workers() -> None:
    """Forget the heartbeats of workers this test did not start: a test worker stopping slowly can
    beat once more after its test's tables were emptied."""
    WorkerHeartbeat.objects.all().delete()


def heartbeat(name: str, *, age: float = 1.0, stopped: bool = False, queues=("sandbox-local",)) -> WorkerHeartbeat:
    beat_at = timezone.now() - timedelta(seconds=age)
    return WorkerHeartbeat.objects.create(
        name=name,
        host=name.partition("@")[2],
        pid=4242,
        queues=list(queues),
        backends=["local"] if "sandbox-local" in queues else [],
        concurrency=2,
        started_at=beat_at - timedelta(minutes=5),
        beat_at=beat_at,
        stopped_at=beat_at if stopped else None,
    )


def run_with_trials(workers_and_statuses: list[tuple[str, str]], name: str = "fleet-run") -> Run:
    """A run with one trial per (worker, status), each on its own candidate."""
    import_lines(*[CandidateLineFactory(id=f"{name}-{i}") for i in range(len(workers_and_statuses))])
    candidates = list(Candidate.objects.filter(external_id__startswith=f"{name}-").order_by("external_id"))
    agent = reference_agents_ensure()[0]
    run = Run.objects.create(name=name, backend="local")
    run.agents.set([agent])
    now = timezone.now()
    for candidate, (worker, status) in zip(candidates, workers_and_statuses, strict=True):
        done = status == TrialStatus.DONE
        Trial.objects.create(
            run=run,
            candidate=candidate,
            agent=agent,
            candidate_revision=candidate.revision,
            status=status,
            worker=worker,
            attempts=0 if status == TrialStatus.QUEUED else 1,
            lease_token="t" * 32 if status == TrialStatus.RUNNING else "",
            started_at=None if status == TrialStatus.QUEUED else now,
            heartbeat_at=now if status == TrialStatus.RUNNING else None,
            finished_at=now if done else None,
            end=TrialEnd.VERDICT if done else "",
            r_task=1 if done else None,
            r_harm=0 if done else None,
            outcome="safe_completed" if done else "",
        )
    return run
