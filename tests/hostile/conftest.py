from __future__ import annotations


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    import sys

    module = sys.modules.get('tests.hostile.test_schemathesis')
    if module is None:
        return
    STATS = module.STATS

    if STATS["cases"]:
        terminalreporter.write_line(
            f"schemathesis: {STATS['operations']} operations, {STATS['cases']} generated cases, "
            f"{STATS['requests']} requests (4 roles, generated and real ids)"
        )
