#!/usr/bin/env python
"""Per-trial overhead of the evaluation harness on each sandbox backend, beside plain pytest on the host.

A trial here is the full protocol of `evaluation.trials.protocol.trial_run` with a no-op agent (a reference
script `:`) and two trivial tests: an agent sandbox, the agent's run, a snapshot, and each test on
its own copy of the final state (written in after the agent, run by the verifier runtime). The
baseline runs the same two test modules with pytest directly on the host, one process each, one
after the other. Both are measured in this one run, interleaved, and the ratio is trial time /
baseline time.

The backends are built as the workers build them (`evaluation.trials.execution.default_backend_factory`):
with warm pools of `--pool-size` trials' worth of ready sandboxes (0: none). The ratio is measured
on a warm pool: before each measured trial the pool is refilled, untimed, as it is between the
trials of a worker whose agents take longer than a pool refill (any real agent), and before each
baseline the containers of the trial are removed, untimed. The throughput
figures do not wait: N threads run `trial_run` back to back on one backend whose pools hold N
trials' worth, so refills compete with the trials as in a busy worker process. The latency figure
submits `--queued` trials at once to 2 such threads and reports the 95th percentile of the time
from submission to each trial's first recorded agent step.

    python benchmarks/sandbox_overhead.py [--trials 10] [--backends local docker] [--pool-size 1]

Goals: local ratio at most 1.0, docker at most 2.0. Needs root, bubblewrap, a Docker engine and the
sandbox base (scripts/start_docker.sh, scripts/build_sandbox_image.sh).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from evaluation.agents.reference import ReferenceAgent  # noqa: E402
from evaluation.sandbox.base import Environment  # noqa: E402
from evaluation.sandbox.registry import get_backend  # noqa: E402
from evaluation.trials.protocol import TrialSpec, trial_run  # noqa: E402

TASK_TEST = "def test_task_done():\n    assert 1 + 1 == 2\n"
HARM_TEST = "def test_no_harm_here():\n    assert 'harm' not in 'safe'\n"
GOALS = {"local": 1.0, "docker": 2.0}
# The project's virtualenv carries pytest plugins (django, playwright) that the sandbox's pytest does
# not have; loading them would slow the baseline and flatter the ratio.
HOST_ENV = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
ENVIRONMENT = {"workdir": "/app"}
SPEC = TrialSpec(
    environment=ENVIRONMENT,
    instruction="do nothing",
    task_test=TASK_TEST,
    harm_test=HARM_TEST,
    agent_time_limit=60,
    test_timeout=60,
)


def host_pytest_seconds(python: str) -> float:
    """The two tests run directly on the host, each in its own pytest process."""
    with tempfile.TemporaryDirectory() as directory:
        for name, source in (("test_task.py", TASK_TEST), ("test_harm.py", HARM_TEST)):
            Path(directory, name).write_text(source)
        started = time.perf_counter()
        for name in ("test_task.py", "test_harm.py"):
            subprocess.run(
                [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", name],
                cwd=directory,
                check=True,
                capture_output=True,
                env=HOST_ENV,
            )
        return time.perf_counter() - started


def trial_seconds(backend, record=lambda step: None) -> float:
    started = time.perf_counter()
    outcome = trial_run(backend, SPEC, ReferenceAgent(":"), record=record)
    elapsed = time.perf_counter() - started
    if (outcome.r_task, outcome.r_harm) != (1, 1):
        raise SystemExit(f"{backend.name}: the trivial tests did not both pass: {outcome}")
    return elapsed


def warm(backend) -> None:
    if hasattr(backend, "wait_warm") and not backend.wait_warm(Environment.from_spec(ENVIRONMENT), timeout=300):
        raise SystemExit(f"{backend.name}: the warm pool did not fill in 300 s")


def settle(backend) -> None:
    """Untimed: the engine's work a trial left behind (docker removes test containers in the
    background) is done before the baseline runs, so that it never slows the baseline down."""
    if hasattr(backend, "wait_removed"):
        backend.wait_removed()


def pooled_backend(name: str, pool_size: int):
    return get_backend(name, pool_size=pool_size)


def throughput(name: str, pool_size: int, trials: int, parallel: int) -> float:
    """Trials per minute, `parallel` threads running trials back to back on one backend."""
    backend = pooled_backend(name, pool_size * parallel)
    try:
        warm(backend)
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            list(pool.map(lambda _: trial_seconds(backend), range(trials)))
        return trials * 60 / (time.perf_counter() - started)
    finally:
        release(backend)


def first_step_p95(name: str, pool_size: int, queued: int, parallel: int = 2) -> float:
    """95th percentile of submission -> first recorded agent step, `queued` trials submitted at once."""
    backend = pooled_backend(name, pool_size * parallel)
    try:
        warm(backend)
        submitted = time.perf_counter()
        waits: list[float] = []

        def one(_: int) -> None:
            first: list[float] = []
            trial_seconds(backend, record=lambda step: first or first.append(time.perf_counter()))
            waits.append(first[0] - submitted)

        with ThreadPoolExecutor(max_workers=parallel) as pool:
            list(pool.map(one, range(queued)))
        return statistics.quantiles(waits, n=20)[-1]
    finally:
        release(backend)


def release(backend) -> None:
    if hasattr(backend, "drain_pools"):
        backend.drain_pools()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10, help="measured trials per backend (after one warm-up)")
    parser.add_argument("--backends", nargs="+", default=["local", "docker"])
    parser.add_argument("--pool-size", type=int, default=1, help="trials' worth of sandboxes kept ready (0: none)")
    parser.add_argument("--queued", type=int, default=200, help="trials queued at once for the latency figure")
    parser.add_argument("--python", default=sys.executable, help="host interpreter for the baseline")
    args = parser.parse_args()

    print(
        f"{'backend':8} {'trial s':>8} {'min-max':>11} {'host s':>7} {'ratio':>6} {'goal':>6} "
        f"{'trials/min x1':>14} {'x2':>6} {f'p95 first step, {args.queued} queued':>28}"
    )
    failed = []
    for name in args.backends:
        backend = pooled_backend(name, args.pool_size)
        warm(backend)
        trial_seconds(backend)  # warm-up: caches, image layers
        host_pytest_seconds(args.python)
        trial_times, host_times = [], []
        for _ in range(args.trials):
            warm(backend)
            trial_times.append(trial_seconds(backend))
            settle(backend)
            host_times.append(host_pytest_seconds(args.python))
        release(backend)
        trial = statistics.median(trial_times)
        host = statistics.median(host_times)
        ratio = trial / host
        rates = [throughput(name, args.pool_size, max(args.trials, 3 * parallel), parallel) for parallel in (1, 2)]
        p95 = f"{first_step_p95(name, args.pool_size, args.queued):.1f} s" if args.queued else "-"
        goal = GOALS.get(name)
        print(
            f"{name:8} {trial:8.2f} {min(trial_times):5.2f}-{max(trial_times):<5.2f} {host:7.2f} {ratio:6.2f} "
            f"{f'<= {goal:.1f}' if goal else '':>6} {rates[0]:14.1f} {rates[1]:6.1f} {p95:>28}"
        )
        if goal and ratio > goal:
            failed.append(f"{name}: ratio {ratio:.2f} is over {goal:.1f}")
        backend.cleanup_orphans()
    print(
        f"(medians over {args.trials} trials on a warm pool of {args.pool_size}; ratio = trial / host pytest of the "
        "same two tests; trials/min: threads running trial_run back to back, pools not waited for; p95: "
        "2 threads, from submission to the first recorded agent step)"
    )
    if failed:
        print("goal missed: " + "; ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
