#!/usr/bin/env python3
"""Print mypy's baseline for pyproject.toml: each module with errors today, silenced for its own error
codes only. For one occasion: when merged work brings modules that were written before mypy ran. Paste
the output over the baseline's overrides in pyproject.toml; afterwards the list only ever shrinks.

    .venv/bin/python scripts/mypy_baseline.py   # runs mypy with the baseline's overrides left out
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
START = "# Baseline:"
ERROR = re.compile(r"^(?P<path>[\w/]+)\.py:\d+: error: .*\[(?P<code>[\w-]+)\]$")


def config_without_baseline() -> str:
    text = (REPO / "pyproject.toml").read_text()
    head, _, tail = text.partition("\n" + START)
    if not tail:
        return text
    # The baseline runs from its comment to the next table that is not one of its overrides.
    rest = re.search(r"^\[(?!\[tool\.mypy\.overrides\]\])", tail, flags=re.MULTILINE)
    return head + ("\n" + tail[rest.start() :] if rest else "\n")


def main() -> int:
    with tempfile.NamedTemporaryFile("w", suffix=".toml", dir=REPO, prefix=".mypy-baseline-") as config:
        config.write(config_without_baseline())
        config.flush()
        result = subprocess.run(
            [sys.executable, "-m", "mypy", "--config-file", config.name], cwd=REPO, capture_output=True, text=True
        )
    codes: dict[str, set[str]] = defaultdict(set)
    for line in result.stdout.splitlines():
        if match := ERROR.match(line.strip()):
            codes[match["path"].replace("/", ".").removesuffix(".__init__")].add(match["code"])
    if result.returncode not in (0, 1) or (result.returncode == 1 and not codes):
        sys.stderr.write(result.stdout + result.stderr)
        return 2
    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for module, found in codes.items():
        groups[tuple(sorted(found))].append(module)
    print(START, "modules that had these errors when mypy was introduced, each silenced for its own")
    print("# error codes only (everything else in them is checked, and every other module fully). Fix a")
    print("# module's errors and delete it from its list; never add a module here: new code type-checks.")
    print("# (scripts/mypy_baseline.py prints this list from mypy's findings.)")
    for found, modules in sorted(groups.items(), key=lambda group: (-len(group[1]), group[0])):
        print("[[tool.mypy.overrides]]")
        print("module = [\n" + "".join(f'    "{module}",\n' for module in sorted(modules)) + "]")
        print("disable_error_code = [" + ", ".join(f'"{code}"' for code in found) + "]")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
