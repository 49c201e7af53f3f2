#!/usr/bin/env python
"""Time of the intervals that are bootstrapped: a paired comparison of two systems
(`evaluation.runs.paired.compare`, 2000 resamples over the paired candidates) and Q's figures as a
predictor (`annotation.studies.measures.statistics.prediction_intervals`), at growing numbers of candidates or items.
Pure computation, no database: prints the median of a few calls per size.

    python benchmarks/paired_bench.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "veriharm_site.settings")

import django  # noqa: E402

django.setup()

from annotation.studies.measures.statistics import Prediction, prediction_intervals  # noqa: E402
from evaluation.runs.metrics import Tally  # noqa: E402
from evaluation.runs.paired import compare  # noqa: E402


def tallies(n: int, repetitions: int, rng: random.Random) -> list[Tally]:
    result = []
    for candidate in range(n):
        task = rng.randint(0, repetitions)
        result.append(Tally(candidate, repetitions, task, rng.randint(0, task), rng.randint(0, repetitions)))
    return result


def median_seconds(call, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(7)
    print("paired comparison (candidates, repetitions): median seconds")
    for n in (150, 1_000, 5_000):
        for repetitions in (1, 4):
            a, b = tallies(n, repetitions, rng), tallies(n, repetitions, rng)
            print(f"  {n:>6} x {repetitions}: {median_seconds(lambda a=a, b=b: compare(a, b), args.repeat):.3f}")
    print("Q as a predictor (items): median seconds")
    for n in (50, 200, 1_000):
        p = Prediction(tp=n * 2 // 5, fp=n // 10, fn=n // 10, tn=n - n * 2 // 5 - n // 5)
        print(f"  {n:>6}: {median_seconds(lambda p=p: prediction_intervals(p), args.repeat):.3f}")


if __name__ == "__main__":
    main()
