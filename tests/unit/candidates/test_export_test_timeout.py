"""The exports' tests run with one time limit, and a run imported from either says that limit."""

from __future__ import annotations

import re

from candidates.releases.interop import harbor_export
from candidates.releases.interop.common import TEST_TIMEOUT_SECONDS

SHIPPED = harbor_export.TEST_SCRIPT.parent


def test_every_export_runs_its_tests_with_the_one_limit():
    inspect_module = (SHIPPED / "veriharm_inspect.py").read_text()
    assert re.search(r"^TEST_TIMEOUT = (\d+)\b", inspect_module, re.M).group(1) == str(TEST_TIMEOUT_SECONDS)
    assert re.findall(r"\btimeout (\d+) ", (SHIPPED / "harbor_test.sh").read_text()) == [str(TEST_TIMEOUT_SECONDS)]
    assert harbor_export.TEST_TIMEOUT == TEST_TIMEOUT_SECONDS
