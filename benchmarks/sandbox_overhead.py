#!/usr/bin/env python
"""Per-trial overhead of the evaluation harness on each sandbox backend, beside plain pytest on the host.

A trial here is the full protocol of `evaluation.trial.trial_run` with a no-op agent (a reference
script `:`) and two trivial tests: build the sandbox, run the agent, snapshot, and for each test
restore a fresh copy, write the test in and run pytest. The baseline runs the same two test
modules with pytest directly on the host, one process each, as the harness does. Both are
measured in this one run, interleaved, and the ratio is trial time / baseline time.

    python benchmarks/sandbox_overhead.py [--trials 10] [--backends local docker] [--parallel 2]

Goals: local ratio under 2, docker under 4. Needs root, bubblewrap, a Docker engine and the
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
from evaluation.sandbox.registry import get_backend  # noqa: E402
from evaluation.trial import TrialSpec, trial_run  # noqa: E402

TASK_TEST = "def test_task_done():\n    assert 1 + 1 == 2\n"
HARM_TEST = "def test_no_harm_here():\n    assert 'harm' not in 'safe'\n"
GOALS = {"local": 2.0, "docker": 4.0}
# The project's virtualenv carries pytest plugins (django, playwright) that the sandbox's pytest does
# not have; loading them would slow the baseline and flatter the ratio.
HOST_ENV = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
SPEC = TrialSpec(environment={"workdir": "/app"}, instruction="do nothing", task_test=TASK_TEST, harm_test=HARM_TEST,
                 agent_time_limit=60, test_timeout=60)


def host_pytest_seconds(python: str) -> float:
    """The two tests run directly on the host, each in its own pytest process."""
    with tempfile.TemporaryDirectory() as directory:
        for name, source in (("test_task.py", TASK_TEST), ("test_harm.py", HARM_TEST)):
            Path(directory, name).write_text(source)
        started = time.perf_counter()
        for name in ("test_task.py", "test_harm.py"):
            subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", name], cwd=directory,
                           check=True, capture_output=True, env=HOST_ENV)
        return time.perf_counter() - started


def trial_seconds(backend) -> float:
    started = time.perf_counter()
    outcome = trial_run(backend, SPEC, ReferenceAgent(":"), record=lambda step: None)
    elapsed = time.perf_counter() - started
    if (outcome.r_task, outcome.r_harm) != (1, 1):
        raise SystemExit(f"{backend.name}: the trivial tests did not both pass: {outcome}")
    return elapsed


def throughput(backend, trials: int, parallel: int) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        list(pool.map(lambda _: trial_seconds(backend), range(trials)))
    return trials * 60 / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10, help="measured trials per backend (after one warm-up)")
    parser.add_argument("--backends", nargs="+", default=["local", "docker"])
    parser.add_argument("--parallel", type=int, default=2, help="concurrent trials for the throughput figure")
    parser.add_argument("--python", default=sys.executable, help="host interpreter for the baseline")
    args = parser.parse_args()

    print(f"{'backend':8} {'trial s':>9} {'host pytest s':>14} {'ratio':>7} {'goal':>6} "
          f"{'trials/min':>11} {f'trials/min x{args.parallel}':>15}")
    failed = []
    for name in args.backends:
        backend = get_backend(name)
        trial_seconds(backend)  # warm-up: caches, image layers
        host_pytest_seconds(args.python)
        trial_times, host_times = [], []
        for _ in range(args.trials):
            trial_times.append(trial_seconds(backend))
            host_times.append(host_pytest_seconds(args.python))
        trial = statistics.median(trial_times)
        host = statistics.median(host_times)
        ratio = trial / host
        parallel_rate = throughput(backend, max(args.trials, args.parallel * 3), args.parallel)
        goal = GOALS.get(name)
        print(f"{name:8} {trial:9.2f} {host:14.2f} {ratio:7.2f} {f"< {goal:.0f}" if goal else '':>6} "
              f"{60 / trial:11.1f} {parallel_rate:15.1f}")
        if goal and ratio >= goal:
            failed.append(f"{name}: ratio {ratio:.2f} is not under {goal:.0f}")
        backend.cleanup_orphans()
    print("(medians over the measured trials; ratio = trial / host pytest of the same two tests)")
    if failed:
        print("goal missed: " + "; ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
