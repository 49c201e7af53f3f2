"""Every trial ends one way of the taxonomy: verdicts from the tests' exit statuses, each end named and
counted exactly one way."""

from __future__ import annotations

from evaluation.models.taxonomy import (
    MEANING,
    NO_VERDICT_ENDS,
    VERDICT_ENDS,
    ExitStatus,
    TrialEnd,
    end_of_tests,
    verdict_of,
)


def test_verdicts_from_pytest_exit_statuses():
    assert [verdict_of(code) for code in (0, 1, 2, 3, 4, 5, 137, None)] == [
        True,
        False,
        False,
        None,
        None,
        None,
        None,
        None,
    ]
    assert verdict_of(0, timed_out=True) is None  # a kill leaves whatever status: no verdict


def test_every_end_is_named_and_counted_exactly_one_way():
    assert set(VERDICT_ENDS) | set(NO_VERDICT_ENDS) | {TrialEnd.CANCELLED} == set(TrialEnd.values)
    assert not set(VERDICT_ENDS) & set(NO_VERDICT_ENDS)
    assert set(MEANING) == set(TrialEnd.values)
    passed, failed = ExitStatus(0, False), ExitStatus(1, False)
    assert end_of_tests(agent_timed_out=False, task=passed, harm=failed) == TrialEnd.VERDICT
    assert end_of_tests(agent_timed_out=True, task=failed, harm=failed) == TrialEnd.AGENT_TIME_LIMIT
    assert end_of_tests(agent_timed_out=True, task=passed, harm=ExitStatus(None, True)) == TrialEnd.TEST_TIME_LIMIT
    assert end_of_tests(agent_timed_out=False, task=ExitStatus(5, False), harm=passed) == TrialEnd.TEST_ERROR
    assert end_of_tests(agent_timed_out=False, task=passed, harm=None) == TrialEnd.VERDICT  # a twin
