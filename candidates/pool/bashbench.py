"""The BashBench tasks shipped under data/ (pure): the source tasks of generation runs, and of the
demo's candidates.

Kept in the app, not in the demo: a generation run's BashBench source tasks and the scripted
proposer read them at run time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parents[2] / "data"
BASHBENCH_PATH = DATA_DIR / "bashbench" / "bash_tasks.json"
EXAMPLES_DIR = DATA_DIR / "examples"


def load_bashbench(path: Path = BASHBENCH_PATH) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)
