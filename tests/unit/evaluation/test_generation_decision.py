"""The search's next step from its record, the static check of a harm test, and the output's ids (pure)."""

from __future__ import annotations

import re

import pytest

from evaluation.generation.checks import harm_test_problem
from evaluation.generation.decision import FINISH, Attempt, Done, Next, attempts, next_step
from evaluation.generation.output import candidate_id

JUDGES = ("judge a", "judge b")


def _next(*done: Done, budget: int = 3, cancelled: bool = False) -> Next:
    return next_step(list(done), budget=budget, judges=JUDGES, cancelled=cancelled)


SEED = Done("seed")


def test_a_search_starts_with_its_seed_rollout_then_the_first_proposal():
    assert _next() == Next("seed")
    assert _next(SEED) == Next("proposal", 1)


def test_a_proposal_is_checked_on_the_untouched_environment_before_the_target_runs_it():
    assert _next(SEED, Done("proposal", 1)) == Next("noop_check", 1)
    assert _next(SEED, Done("proposal", 1), Done("noop_check", 1, r_harm=0)) == Next("rollout", 1)


def test_a_refused_proposal_or_a_harm_test_true_untouched_goes_to_the_next_iteration_without_a_rollout():
    assert _next(SEED, Done("proposal", 1, refused=True)) == Next("proposal", 2)
    assert _next(SEED, Done("proposal", 1), Done("noop_check", 1, refused=True, r_harm=1)) == Next("proposal", 2)


def test_the_first_harmful_success_is_judged_by_every_judge_then_kept():
    done = [SEED, Done("proposal", 1), Done("noop_check", 1), Done("rollout", 1, r_task=1, r_harm=0)]
    done += [Done("proposal", 2), Done("noop_check", 2), Done("rollout", 2, r_task=1, r_harm=1)]
    assert _next(*done) == Next("judgement", judge="judge a")
    assert _next(*done, Done("judgement", judge="judge a")) == Next("judgement", judge="judge b")
    judged = [*done, Done("judgement", judge="judge a"), Done("judgement", judge="judge b")]
    assert _next(*judged) == Next(FINISH, ending="kept", kept_iteration=2)
    assert attempts(judged) == [Attempt(1, True, False), Attempt(2, True, True)]


def test_a_budget_of_rollouts_without_success_ends_the_search():
    done = [SEED]
    for i in (1, 2):
        done += [Done("proposal", i), Done("noop_check", i), Done("rollout", i, r_task=1, r_harm=0)]
    assert _next(*done, budget=2) == Next(FINISH, ending="budget_exhausted")
    assert attempts(done) == [Attempt(1, True, False), Attempt(2, True, False)]


@pytest.mark.parametrize(
    ("step", "ending"),
    [
        (Done("proposal", 1, error=True), "proposer_error"),
        (Done("proposal", 1, error=True, budget_spent=True), "usd_budget_spent"),
    ],
)
def test_a_proposer_that_fails_or_may_not_spend_ends_the_search(step, ending):
    assert _next(SEED, step) == Next(FINISH, ending=ending)
    assert attempts([SEED, step]) == []


def test_a_target_that_fails_ends_the_search_without_a_verdict_or_a_further_proposal():
    # A seed or rollout recorded with an error (the target's harness failed, ran into the call cap,
    # or its model never answered) carries no verdict: the search ends there, and says so.
    failed_seed = Done("seed", error=True)
    assert _next(failed_seed) == Next(FINISH, ending="target_error")
    done = [SEED, Done("proposal", 1), Done("noop_check", 1), Done("rollout", 1, error=True)]
    assert _next(*done) == Next(FINISH, ending="target_error")
    # The USD budget speaks first: a rollout stopped by it is that, not the target's failure.
    spent = [SEED, Done("proposal", 1), Done("noop_check", 1), Done("rollout", 1, error=True, budget_spent=True)]
    assert _next(*spent) == Next(FINISH, ending="usd_budget_spent")


def test_a_judge_that_fails_ends_the_search_and_cancel_ends_it_anywhere():
    done = [SEED, Done("proposal", 1), Done("noop_check", 1), Done("rollout", 1, r_task=1, r_harm=1)]
    assert _next(*done, Done("judgement", judge="judge a", error=True)) == Next(FINISH, ending="judge_error")
    assert _next(*done, cancelled=True) == Next(FINISH, ending="cancelled")


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("def test_harm():\n    assert True\n", ""),
        ("class TestHarm:\n    def test_it(self):\n        pass\n", ""),
        ("async def test_harm():\n    pass\n", ""),
        ("", "empty"),
        ("def test_harm(:\n", "not valid Python"),
        ("def check():\n    pass\n", "no top-level test"),
        ("if True:\n    def test_hidden():\n        pass\n", "no top-level test"),
        ("import os\nos.system('rm -rf /')\n", "no top-level test"),
        ("x = 1\0", "not valid Python"),
    ],
)
def test_a_harm_test_must_be_a_pytest_module_read_without_running_it(source, problem):
    found = harm_test_problem(source)
    assert (problem in found) if problem else found == ""


def test_candidate_ids_fit_the_format_and_long_ones_stay_distinct():
    assert candidate_id(7, "bashbench-489407", "demo-reckless", "scripted demo proposer") == (
        "gen-7-bashbench-489407-demo-reckless-scripted-demo-proposer"
    )
    long_a = candidate_id(1, "t", "a" * 300, "p")
    long_b = candidate_id(1, "t", "a" * 299 + "b", "p")
    for found in (long_a, long_b):
        assert re.fullmatch(r"[A-Za-z0-9._:/-]{1,200}", found)
    assert long_a != long_b


def test_a_rollout_stopped_by_the_usd_budget_ends_the_search_without_a_verdict():
    assert _next(Done("seed", budget_spent=True)) == Next(FINISH, ending="usd_budget_spent")
    stopped = [SEED, Done("proposal", 1), Done("noop_check", 1), Done("rollout", 1, budget_spent=True)]
    assert _next(*stopped) == Next(FINISH, ending="usd_budget_spent")
