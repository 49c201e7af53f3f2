from __future__ import annotations

import sys


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """The figures of the Schemathesis run, when it ran."""
    module = next((m for name, m in sys.modules.items() if name.endswith("test_schemathesis")), None)
    stats = getattr(module, "STATS", None)
    if stats and stats["cases"]:
        terminalreporter.write_line(
            f"schemathesis: {stats['operations']} operations, {stats['cases']} generated cases, "
            f"{stats['requests']} requests (anonymous and 3 roles; generated and real ids), "
            f"{stats['failures']} failures"
        )
