"""The spread of ASR@n against visiting every set of repetitions by brute force (pure)."""

import random
import statistics
from itertools import combinations

import pytest

from evaluation.v3ast import spread as v3ast_spread
from evaluation.v3ast.scoring import (
    Outcome,
    TaskRuns,
    asr_spread,
    subset_asr,
    system_scores,
)

OUTCOMES = [Outcome.COMPROMISED, Outcome.SAFE_COMPLETED, Outcome.INCOMPLETE]
MISSING = [Outcome.UNRESOLVED, None]


def brute_force(tasks: list[TaskRuns], repetitions: int, n: int) -> float | None:
    values = [subset_asr(tasks, chosen) for chosen in combinations(range(repetitions), n)]
    values = [v for v in values if v is not None]
    return statistics.stdev(values) if len(values) >= 2 else None


def random_tasks(rng: random.Random, count: int, repetitions: int, missing: float) -> list[TaskRuns]:
    return [
        TaskRuns(
            task=f"t{i}",
            risk=[rng.choice(MISSING) if rng.random() < missing else rng.choice(OUTCOMES) for _ in range(repetitions)],
            twin_capable=[rng.random() > 0.1 for _ in range(repetitions)],
        )
        for i in range(count)
    ]


@pytest.mark.parametrize("missing", [0.0, 0.3])
def test_the_spread_equals_brute_force_on_small_runs(missing):
    rng = random.Random(7)
    for _ in range(150):
        repetitions = rng.randint(1, 8)
        tasks = random_tasks(rng, rng.randint(0, 8), repetitions, missing)
        for n in range(1, repetitions + 1):
            expected = brute_force(tasks, repetitions, n)
            got = asr_spread(tasks, repetitions, n)
            assert (got is None) == (expected is None), (repetitions, n)
            if expected is not None:
                assert got == pytest.approx(expected, abs=1e-12)


def test_a_finished_run_is_exact_in_closed_form_for_twenty_repetitions():
    rng = random.Random(3)
    tasks = random_tasks(rng, 150, 20, 0.0)
    scores = system_scores(tasks, 20)
    assert {s.method for s in scores.asr_at_n_spread[:-1]} == {"exact"}
    assert scores.spread_note.startswith("Exact")
    # Against brute force where brute force is affordable (n = 2: 190 sets).
    assert scores.asr_at_n_sd[1] == pytest.approx(brute_force(tasks, 20, 2), abs=1e-12)
    assert scores.asr_at_n_sd[0] == pytest.approx(scores.asr_sd_across_repetitions, abs=1e-12)


def test_when_sets_see_different_tasks_and_are_too_many_the_estimate_states_its_method_and_error(monkeypatch):
    monkeypatch.setattr(v3ast_spread, "ENUMERATE_LIMIT", 10)
    rng = random.Random(11)
    tasks = random_tasks(rng, 12, 10, 0.3)
    scores = system_scores(tasks, 10)
    sampled = [(n, s) for n, s in enumerate(scores.asr_at_n_spread, start=1) if s.method == "sampled"]
    assert [n for n, _ in sampled] == [2, 3, 4, 5, 6, 7, 8]
    for n, spread in sampled:
        exact = brute_force(tasks, 10, n)
        assert spread.samples == v3ast_spread.SAMPLES and spread.standard_error > 0
        assert abs(spread.sd - exact) < 5 * spread.standard_error, n
    assert "n = 2–8" in scores.spread_note and "2,000 sets" in scores.spread_note
