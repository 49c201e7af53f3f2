"""How the suite spends its time across pytest-xdist processes: which tests start first, and when each
process ran out of work (printed after the run, so a tail one process runs alone shows)."""

from __future__ import annotations

import time
from collections import defaultdict

import pytest

# Tests of minutes that touch no test database: handed out first, so that the other process works
# through the short tests beside them. Left where pytest-django puts them (after the database tests,
# as Django orders them: plain, then transactional, then none), the `make run` demo test started when
# only the unit tier was left for the other process, which then waited for it alone for about four
# minutes. Database tests keep pytest-django's order: a transactional test flushes the tables, so no
# plain database test may follow one in the same process.
FIRST_MARKERS = ("demo",)


class SuiteTime:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self.tests: dict[str, int] = defaultdict(int)
        self.busy: dict[str, float] = defaultdict(float)
        self.ended: dict[str, float] = {}

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        # After pytest-django's sort (tryfirst); a stable sort keeps every other test in its order.
        items.sort(key=lambda item: not (_first(item) and not item.get_closest_marker("db")))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        node = getattr(report, "node", None)  # set by pytest-xdist in the controlling process only
        if node is None:
            return
        process = node.gateway.id
        self.busy[process] += report.duration
        if report.when == "teardown":
            self.tests[process] += 1
            self.ended[process] = time.monotonic() - self.started

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if len(self.ended) < 2:
            return
        terminalreporter.section("test processes")
        for process in sorted(self.ended):
            terminalreporter.write_line(
                f"{process}: {self.tests[process]} tests, busy {_minutes(self.busy[process])}, "
                f"its last test ended at {_minutes(self.ended[process])}"
            )


def _first(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(name) for name in FIRST_MARKERS)


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:04.1f} s"
