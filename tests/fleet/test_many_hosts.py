"""A run spread over three worker hosts survives losing one whole, with the shipped lease and
sweep settings.

Three "hosts" on this machine (`tests/fleet/namespaces.py`): each a network namespace of its own
reaching PostgreSQL and Redis over its veth link, with its own host name and scratch directory;
host-c has no Docker queue. Trials per minute are measured with 1, 2 and 3 hosts: on two shared
cores the figure shows the coordination works (it does not grow with hosts: they share the cores).
Mid-run host-b is lost (every process SIGKILLed, its link cut) and comes back later. At the end,
with host-a and host-b stopped, host-c re-scores final states host-a wrote (the store is shared).

Its size: VERIHARM_MANY_HOSTS_REPETITIONS (default 40) repetitions of the three reference agents
on one candidate in the main run (120 trials), 8 in each measuring run. Most of the main run is the
wait for the lease and the sweep after the loss (up to 180 s with the shipped settings), which more
trials do not shorten: they only take the two cores from the rest of the suite meanwhile."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
from django.conf import settings
from django.db import connection
from django.db.models import Count, Max, Min

from candidates.curation.revisions import candidate_revise
from candidates.models import Candidate
from evaluation.fleet.selectors import fleet, run_hosts
from evaluation.models import FinalState, Rescore, RescoreStatus, Run, Trial, TrialKind, TrialStatus
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_launch
from tests.conftest import FIGURES
from tests.evaluation.conftest import wait_until
from tests.fleet.namespaces import Host, free_slot
from veriharm_site.broker_messages import waiting_tasks

CANDIDATE = "bb-319395/kimi-k2.5/gpt-5.5"
# Its trials run on host-a alone, and are re-scored at the end by host-c alone.
RESCORED = "bb-187101/gpt-5.4-mini/claude-opus-4-7"
REPETITIONS = int(os.environ.get("VERIHARM_MANY_HOSTS_REPETITIONS", "40"))
MEASURE_REPETITIONS = 8
LEASE = settings.VERIHARM_TRIAL_LEASE_SECONDS  # the shipped 120 s
SWEEP = 60.0  # the shipped sweep interval, which the workers' settings keep
# Past lease + sweep: a sweep may itself wait for the sweeping worker's database, on a busy machine.
TAKEOVER_BOUND = LEASE + SWEEP + 30
# Then the next host to finish the trial in hand claims it (a reference trial takes seconds).
CLAIM_BOUND = TAKEOVER_BOUND + 90
ALL_QUEUES = "sandbox-local,sandbox-docker,default"


def _netns_works() -> bool:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, check=False).returncode == 0


def _env() -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        # The shipped lease, heartbeat and sweep: nothing the test environment set.
        if not key.startswith(("VERIHARM_TRIAL_", "VERIHARM_RECOVERY_", "VERIHARM_WORKER_"))
    }
    return {
        **env,
        "DJANGO_SETTINGS_MODULE": "tests.evaluation.worker_settings",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "VERIHARM_FINAL_STATE_DIR": str(settings.VERIHARM_FINAL_STATE_DIR),
    }


def _host_env(host: Host) -> dict[str, str]:
    db = connection.settings_dict
    broker = urlparse(settings.CELERY_BROKER_URL)
    return {
        **_env(),
        "DATABASE_URL": f"postgres://{db['USER']}@{host.gateway}:5432/{db['NAME']}",
        "CELERY_BROKER_URL": f"redis://{host.gateway}:6379{broker.path}",
    }


def _launch(repetitions: int, agents: list[int], name: str) -> Run:
    return run_launch(
        selection={"kind": "ids", "ids": [CANDIDATE]},
        agent_ids=agents,
        repetitions=repetitions,
        backend="local",
        name=name,
    )


def _unfinished(run: Run) -> int:
    return Trial.objects.filter(run=run, status__in=[TrialStatus.QUEUED, TrialStatus.RUNNING]).count()


def _per_minute(run: Run) -> float:
    span = Trial.objects.filter(run=run).aggregate(first=Min("started_at"), last=Max("finished_at"))
    seconds = max((span["last"] - span["first"]).total_seconds(), 1e-3)
    return Trial.objects.filter(run=run).count() * 60 / seconds


@pytest.mark.many_hosts
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_run_over_three_hosts_survives_losing_one(
    sandboxes_ready, examples_imported, admin_client_, curator, tmp_path, record_property
):
    from veriharm_site.celery import app

    assert os.geteuid() == 0 and _netns_works(), "the many-host test needs root and `ip netns`"
    app.control.purge()
    agents = [a.pk for a in reference_agents_ensure()]
    # Scratch under /tmp itself: pytest's tmp_path is private to root, and sandboxes are not root.
    slot = free_slot()
    hosts = {
        key: Host(f"host-{key}", n, slot, Path(tempfile.mkdtemp(prefix=f"veriharm-fleet-{key}-")), queues)
        for key, n, queues in (("a", 1, ALL_QUEUES), ("b", 2, ALL_QUEUES), ("c", 3, "sandbox-local,default"))
    }  # host-c has no Docker queue
    figures: dict[str, float | int] = {}
    try:
        for host in hosts.values():
            host.create({5432: int(connection.settings_dict["PORT"] or 5432), 6379: 6379})
        for count, key in enumerate("abc", start=1):
            hosts[key].start_worker(_host_env(hosts[key]), tmp_path)
            # A worker's start (Django, Celery, the pool's fork) takes minutes on a loaded machine, as
            # host-b's restart below.
            wait_until(lambda k=key: any(w.host == hosts[k].name for w in fleet().live), 300, f"{key}'s heartbeat")
            if key == "c":
                break
            if key == "a":
                written_on_a = run_launch(
                    selection={"kind": "ids", "ids": [RESCORED]}, agent_ids=agents, backend="local", name="on host-a"
                )
                wait_until(lambda r=written_on_a: _unfinished(r) == 0, 300, "the run on host-a")
            measured = _launch(MEASURE_REPETITIONS, agents, f"{count} host(s)")
            wait_until(lambda r=measured: _unfinished(r) == 0, 600, f"the run on {count} host(s)")
            figures[f"trials/min, {count} host(s)"] = _per_minute(measured)
            assert set(run_hosts(measured)) <= {h.name for h in list(hosts.values())[:count]}

        run = _launch(REPETITIONS, agents, "three hosts")
        total = 3 * REPETITIONS
        b = hosts["b"]
        # Lose host-b in the middle of a trial: it holds one and has its sandbox up. It is frozen
        # (SIGSTOP) before it is seen to hold one, then killed: a trial takes seconds, and on a
        # loaded machine it could otherwise end between that look and the loss, leaving nothing to
        # take over.
        holding = Trial.objects.filter(run=run, status=TrialStatus.RUNNING, worker=b.node)
        deadline = time.monotonic() + 600
        while True:
            wait_until(
                lambda: (
                    Trial.objects.filter(run=run, status=TrialStatus.DONE).count() >= total // 4
                    and holding.exists()
                    and bool(b.sandbox_dirs())
                ),
                max(deadline - time.monotonic(), 1),
                "host-b mid-trial, a quarter of the run done",
                interval=0.05,
            )
            b.freeze()
            if holding.exists():
                break
            b.thaw()
        b.lose()
        lost_at = time.monotonic()
        # Read once it is gone: nothing of host-b changes them any more.
        held = set(holding.values_list("pk", flat=True))
        left_behind = b.sandbox_dirs()
        assert held and left_behind
        republished: dict[int, float] = {}
        taken: dict[int, float] = {}

        def taken_over() -> bool:
            waiting = (waiting_tasks(app) or {}).get("evaluation.trial_execute", set())
            now = time.monotonic() - lost_at
            for pk in held - set(republished):
                if pk in waiting:
                    republished[pk] = now
            rows = Trial.objects.filter(pk__in=held - set(taken)).values_list("pk", "worker", "status")
            for pk, worker, status in rows:
                if worker != b.node or status != TrialStatus.RUNNING:
                    taken[pk] = now
                    republished.setdefault(pk, now)
            return set(taken) == held

        # The sweep publishes the trial again within lease + sweep interval, ahead of any backlog
        # (evaluation.queue.TAKEOVER, tests/evaluation/test_queue_routing.py): the next free host claims it.
        wait_until(taken_over, 1200, "the lost host's trials to be taken over", interval=0.5)
        figures["longest republish after the host loss (s)"] = max(republished.values())
        figures["longest takeover (claim) after the host loss (s)"] = max(taken.values())
        assert max(republished.values()) <= TAKEOVER_BOUND
        assert max(taken.values()) <= CLAIM_BOUND
        silent = {w.host for w in fleet().silent}
        assert b.name in silent, "the lost host shows as silent on the workers page"
        # Nobody else touched its scratch: the other hosts cannot see it, and its sandboxes wait for it.
        assert left_behind and all(path.exists() for path in left_behind)

        b.restore()
        b.start_worker(_host_env(b), tmp_path)
        # Its start-up sweep removes them; on a busy machine the worker takes a while to start.
        wait_until(lambda: not any(path.exists() for path in left_behind), 300, "host-b to remove its leftovers")
        wait_until(lambda: _unfinished(run) == 0, 1200, "the three-host run to finish")
        figures["trials/min, 3 hosts, with the loss"] = _per_minute(run)

        trials = Trial.objects.filter(run=run)
        statuses = dict(trials.values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
        duplicates = (
            FinalState.objects.filter(trial__run=run).values("trial").annotate(n=Count("pk")).filter(n__gt=1).count()
        )
        slots = trials.values("agent", "repetition", "kind").annotate(n=Count("pk")).filter(n__gt=1).count()
        stuck = _unfinished(run)
        figures.update({"trials": trials.count(), "duplicates": duplicates + slots, "stuck": stuck})
        assert trials.count() == total and statuses == {TrialStatus.DONE: total}
        assert duplicates == slots == stuck == 0
        assert set(run_hosts(run)) == {h.name for h in hosts.values()}
        assert trials.filter(pk__in=held, attempts__gte=2).count() == len(held)

        # Kept final states, written by whichever host ran the trial, are served by the web server.
        kept = FinalState.objects.filter(trial__run=run).select_related("trial")
        figures["kept final states"] = kept.count()
        for state in kept[:5]:
            response = admin_client_.get(f"/evaluation/trials/{state.trial_id}/final-state.tar.gz")
            assert response.status_code == 200, (state.trial.worker, response.status_code)

        # A final state host-a wrote, re-scored by host-c with the other hosts gone: the store is shared.
        hosts["a"].stop_worker()
        hosts["b"].stop_worker()
        try:
            # Either stopped worker says so as it stops, or goes silent a minute after it is killed;
            # host-c beats every 15 s, slower on a loaded machine.
            wait_until(lambda: {w.host for w in fleet().live} == {"host-c"}, 300, "host-c alone")
        except AssertionError as timed_out:
            workers = fleet()
            rows = [(w.name, w.state, round(w.heartbeat_age)) for w in workers.live + workers.silent + workers.stopped]
            raise AssertionError(f"{timed_out}; the workers page: {rows}") from None
        written = Trial.objects.filter(run=written_on_a)
        assert written.count() == written.filter(status=TrialStatus.DONE, kind=TrialKind.RISK).count() == 3
        before = {t.pk: (t.r_task, t.r_harm) for t in written}
        assert {
            w.split("@", 1)[1] for w in Trial.objects.filter(run=written_on_a).values_list("worker", flat=True)
        } == {"host-a"}
        rescored = Candidate.objects.get(external_id=RESCORED)
        candidate_revise(
            candidate_id=rescored.pk,
            user=curator,
            instruction=rescored.instruction,
            harm_test=rescored.harm_test + "\n# revised: the same check, so the same verdicts\n",
            reason="a comment, to re-score on another host",
            base_revision=rescored.revision,
        )
        assert admin_client_.post(f"/api/evaluation/candidates/{RESCORED}/rescores/").status_code == 202
        wait_until(
            lambda: not Rescore.objects.filter(trial__run=written_on_a, status=RescoreStatus.QUEUED).exists(),
            300,
            "host-c's re-scores",
        )
        after = {r.trial_id: (r.status, r.r_task, r.r_harm) for r in Rescore.objects.filter(trial__run=written_on_a)}
        assert after == {pk: (RescoreStatus.DONE, *verdict) for pk, verdict in before.items()}
        figures["re-scored on host-c from host-a's final states"] = len(after)
    finally:
        for host in hosts.values():
            host.destroy()
        for log in sorted(tmp_path.glob("host-*.log")):
            print(f"--- {log.name}\n" + log.read_text(errors="replace")[-1500:])
        # Printed at the end of the run (tests/conftest.py): on 2 shared cores the rates show that
        # the hosts coordinate, not speed.
        record_property(FIGURES, figures)
