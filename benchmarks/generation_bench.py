#!/usr/bin/env python
"""Generation searches: how many a worker finishes per minute, and the pipeline's own time per attempt.

The proposer and the judge are model endpoints played by a loopback HTTP server
(tests/evaluation/chat_server.py) through the engine's gateways, answering with the scripted
catalogue's proposals; the targets are the scripted demo command agents (demo-reckless and
demo-careful) on the catalogue's real BashBench tasks, in real bubblewrap sandboxes (backend
"local"). So each search is the engine's whole path (claim, lease, every step recorded once, the
output imported) with rollouts as short as sandboxes allow: the figures are the pipeline's floor.

Throughput: a `celery worker` process (the shipped command) at --concurrency 1, then 2, runs one
generation run of 2 tasks x 2 agents x --proposers proposers; searches per minute is the run's
searches over the time from its launch to its end.

Orchestration: the same searches run in this process (`engine.search_execute`, no Celery), timing
each attempt that reached a rollout from the start of its proposal to the rollout's record, and
the sandbox time of its no-op check and rollout (`trial_run`). Orchestration = attempt wall time
minus that sandbox time; the goal is under 10% of the attempt.

    python benchmarks/generation_bench.py [--proposers 2] [--concurrency 1 2] [--database-url URL] [--broker-url URL]

--database-url (default postgres://postgres@127.0.0.1:5432/veriharm_genbench, created and migrated
if missing) and --broker-url (default redis://127.0.0.1:6379/12, purged) name its own database and
Redis database, whatever DATABASE_URL and CELERY_BROKER_URL say: nothing else is written. Sandboxes and their state live in a temporary
directory of its own (TMPDIR), so the workers' clean-up never touches other sandboxes. Needs root,
bubblewrap and the sandbox tree (scripts/build_sandbox_image.sh; VERIHARM_SANDBOX_ROOT).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/veriharm_genbench"
DEFAULT_BROKER = "redis://127.0.0.1:6379/12"
KEY_ENV = "VERIHARM_AGENT_KEY_GENBENCH"
TASKS = ["bashbench-489407", "bashbench-261162"]
GOAL_ORCHESTRATION = 0.10
# How the catalogue's searches end: kept (demo-reckless) or out of iterations (demo-careful).
EXPECTED = ("kept", "budget_exhausted")


def _database_ensure(url: str) -> None:
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as connection:
        if not connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            connection.execute(f'CREATE DATABASE "{name}"')


def _responder(body: dict[str, Any]) -> str:
    """The proposer's and the judge's answers: the scripted catalogue's, chosen by the prompt."""
    from evaluation.generation.contracts import PERTURBATION_KINDS, Feedback, ProposalRequest, SeedTask
    from evaluation.generation.scripted import ScriptedProposer
    from tests.evaluation.chat_server import prompt_text
    from tests.evaluation.generation.model_replies import instruction, proposal_reply

    prompt = prompt_text(body)
    if "## Rewritten task" in prompt:
        scores = dict.fromkeys(
            (
                "harm_test_correctness",
                "harm_unintendedness",
                "harm_test_correspondence",
                "harm_feasibility",
                "perturbation_stealth",
            ),
            4,
        )
        return json.dumps({"scores": scores, "rationale": "A plausible unintended harm."})
    task = next(t for t in TASKS if instruction(t)[:60] in prompt)
    feedback: tuple[Feedback, ...] = ()
    if "### Attempt" in prompt:
        last = prompt[prompt.rindex("### Attempt") :]
        refused = "harm test passed (r_harm): not run" in last or "passes without any agent action" in last
        feedback = (Feedback(1, "", "", "", None if refused else 1, None if refused else 0),)
    request = ProposalRequest(SeedTask(task, "", ""), "", 1, 5, PERTURBATION_KINDS, feedback)
    proposal = ScriptedProposer().propose(request).proposal
    assert proposal is not None
    return proposal_reply(proposal)


def _launch(label: str, base_url: str, proposers: int) -> Any:
    from demo.runs import demo_agents_ensure
    from evaluation.generation.launch import generation_launch

    def role(name: str) -> dict[str, Any]:
        return {
            "kind": "model",
            "name": name,
            "api": "openai",
            "route": "chat_completions",
            "base_url": base_url,
            "api_key_env": KEY_ENV,
            "model": "m",
        }

    agents = [a.pk for a in demo_agents_ensure() if a.name in ("demo-reckless", "demo-careful")]
    return generation_launch(
        name=label,
        selection={"kind": "ids", "ids": TASKS},
        agent_ids=agents,
        # Distinct names per run: the launch holds one search per (task, agent, proposer) for good.
        proposers=[role(f"{label} proposer {n}") for n in range(1, proposers + 1)],
        judges=[role(f"{label} judge")],
        budget=3,
        backend="local",
        reference_check=False,
    )


def _wait(run_id: int, timeout: float) -> float:
    from evaluation.generation.models import GenerationRun
    from evaluation.generation.states import RunStatus

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = GenerationRun.objects.get(pk=run_id)
        if run.status != RunStatus.RUNNING and run.finished_at is not None:
            return (run.finished_at - run.created_at).total_seconds()
        time.sleep(0.2)
    raise SystemExit(f"run {run_id} did not finish within {timeout:.0f} s")


def throughput(concurrency: int, base_url: str, proposers: int, env: dict[str, str], logs: Path) -> dict[str, Any]:
    from evaluation.generation.models import GenerationRun

    log = (logs / f"worker-{concurrency}.log").open("wb")
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "veriharm_site",
            "worker",
            "--loglevel=WARNING",
            f"--concurrency={concurrency}",
            "-n",
            f"genbench-{concurrency}-{secrets.token_hex(3)}@%h",
        ],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    try:
        time.sleep(5)  # the worker's start-up is not the searches' time
        run = _launch(f"bench c{concurrency} {secrets.token_hex(3)}", base_url, proposers)
        seconds = _wait(run.pk, 1800)
    finally:
        worker.terminate()
        try:
            worker.wait(60)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    run = GenerationRun.objects.get(pk=run.pk)
    endings: dict[str, int] = defaultdict(int)
    for ending in run.searches.values_list("ending", flat=True):
        endings[ending] += 1
    searches = sum(endings.values())
    unexpected = {k: v for k, v in endings.items() if k not in EXPECTED}
    if unexpected:
        error = run.searches.exclude(ending__in=EXPECTED).values_list("error", flat=True).first()
        raise SystemExit(f"searches ended otherwise than by the method: {unexpected}: {(error or '')[-1000:]}")
    return {"searches": searches, "seconds": seconds, "per_minute": searches / seconds * 60, "endings": dict(endings)}


def orchestration(base_url: str, proposers: int) -> dict[str, Any]:
    """The searches of one run, each in this process, every attempt's time taken apart."""
    from celery import current_app

    from evaluation.generation import engine, steps
    from evaluation.generation.states import StepKind

    original_trial_run, original_propose, original_record = steps.trial_run, steps.propose, engine.step_record
    current: dict[str, Any] = {}
    attempts: list[tuple[float, float]] = []  # (wall, sandbox) per attempt that reached a rollout

    def trial_run(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original_trial_run(*args, **kwargs)
        finally:
            if "started" in current:
                current["sandbox"] += time.perf_counter() - started

    def propose(*args: Any, **kwargs: Any) -> Any:
        current.update(started=time.perf_counter(), sandbox=0.0)
        return original_propose(*args, **kwargs)

    def step_record(claim: Any, expected: Any, fields: dict[str, Any]) -> bool:
        recorded = original_record(claim, expected, fields)
        if recorded and expected.kind == StepKind.ROLLOUT and "started" in current:
            attempts.append((time.perf_counter() - current["started"], current["sandbox"]))
            current.clear()
        elif recorded and expected.kind == StepKind.NOOP_CHECK and fields.get("note"):
            current.clear()  # refused before a rollout: not an attempt of the target
        return recorded

    steps.trial_run, steps.propose, engine.step_record = trial_run, propose, step_record
    try:
        run = _launch(f"bench inline {secrets.token_hex(3)}", base_url, proposers)
        current_app.control.purge()  # the launch published them; this process runs them instead
        for search_id in run.searches.order_by("pk").values_list("pk", flat=True):
            engine.search_execute(search_id, worker="genbench-inline")
    finally:
        steps.trial_run, steps.propose, engine.step_record = original_trial_run, original_propose, original_record
    shares = [(wall - sandbox) / wall for wall, sandbox in attempts]
    return {
        "attempts": len(attempts),
        "wall_median": statistics.median(w for w, _ in attempts),
        "sandbox_median": statistics.median(s for _, s in attempts),
        "orchestration_median": statistics.median(w - s for w, s in attempts),
        "share_median": statistics.median(shares),
        "share_max": max(shares),
    }


def _tear_down(scratch: Path) -> None:
    """The sandboxes a worker or this process left (warm pools) and their mounts, then the directory."""
    from evaluation.sandbox.registry import get_backend

    try:
        get_backend("local").cleanup_orphans()
    except Exception as exc:  # keep tearing down
        print(f"could not clean up the sandboxes: {exc}")
    prefix = f"{scratch}/"
    with open("/proc/mounts") as mounts:
        points = [line.split()[1] for line in mounts if line.split()[1].startswith(prefix)]
    for point in sorted(points, reverse=True):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)
    shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--proposers", type=int, default=2, help="proposers per run (4 searches each)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--database-url", default=DEFAULT_DATABASE)
    parser.add_argument("--broker-url", default=DEFAULT_BROKER)
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="genbench-"))
    os.chmod(scratch, 0o755)  # the sandboxes' own user reaches its tree through it
    tmp = scratch / "tmp"
    tmp.mkdir()
    os.chmod(tmp, 0o1777)
    env = {
        **os.environ,
        "DATABASE_URL": args.database_url,
        "CELERY_BROKER_URL": args.broker_url,
        KEY_ENV: secrets.token_hex(16),
        "VERIHARM_SANDBOX_BACKEND": "local",
        "VERIHARM_SANDBOX_CLEANUP_BACKENDS": "local",
        # The sandboxes' state and the gateways' sockets: this run's own, so no clean-up reaches others'.
        "TMPDIR": str(tmp),
        "PYTHONPATH": str(REPO),
    }
    os.environ.update(env)
    tempfile.tempdir = None
    _database_ensure(env["DATABASE_URL"])
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "veriharm_site.settings.local")
    import django

    django.setup()
    from django.core.management import call_command

    from tests.evaluation.chat_server import ScriptedChat, chat_server
    from veriharm_site.celery import app

    call_command("migrate", verbosity=0)
    # The in-process searches' every model call and import would otherwise interleave with the figures.
    for name in ("httpx", "candidates.importing.postgres"):
        logging.getLogger(name).setLevel(logging.WARNING)
    app.control.purge()
    chat = ScriptedChat([], api_key=env[KEY_ENV], responder=_responder)
    load = os.getloadavg()
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    try:
        with chat_server(chat):
            found = _measure(args, chat, env, scratch)
    finally:
        _tear_down(scratch)
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; model calls served: {len(chat.requests)}")
    return 0 if found["share_median"] < GOAL_ORCHESTRATION else 1


def _measure(args: argparse.Namespace, chat: Any, env: dict[str, str], scratch: Path) -> dict[str, Any]:
    for concurrency in args.concurrency:
        found = throughput(concurrency, chat.base_url, args.proposers, env, scratch)
        print(
            f"concurrency {concurrency}: {found['searches']} searches in {found['seconds']:.1f} s = "
            f"{found['per_minute']:.1f} searches/min ({found['endings']})"
        )
    found = orchestration(chat.base_url, args.proposers)
    print(
        f"per attempt ({found['attempts']} attempts, medians): wall {found['wall_median']:.2f} s, "
        f"sandbox (no-op check + rollout) {found['sandbox_median']:.2f} s, "
        f"orchestration {found['orchestration_median']:.3f} s = {found['share_median']:.1%} "
        f"(max {found['share_max']:.1%}; goal under {GOAL_ORCHESTRATION:.0%})"
    )
    return found


if __name__ == "__main__":
    sys.exit(main())
