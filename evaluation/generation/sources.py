"""The source tasks a generation run may start from: the BashBench tasks shipped in data/bashbench
(V_task from `private_tests`, as the pipeline format says) and the source tasks already imported,
which win for the same id (an import of a generated candidate must match the stored source task)."""

from __future__ import annotations

import random
from functools import cache
from typing import Any

from candidates.demo import load_bashbench
from candidates.models import SourceTask

from .contracts import SeedTask


@cache
def _bashbench() -> dict[str, dict[str, Any]]:
    return {
        f"bashbench-{task['task_id']}": {
            "id": f"bashbench-{task['task_id']}",
            "instruction": task["task_description"],
            "task_test": task["private_tests"],
            "environment": {"workdir": "/app"},
        }
        for task in load_bashbench()
    }


def source_tasks_all() -> dict[str, dict[str, Any]]:
    """Id -> the pipeline format's source_task record, every one a run may choose."""
    tasks = dict(_bashbench())
    for task in SourceTask.objects.order_by("external_id").iterator():
        tasks[task.external_id] = {
            "id": task.external_id,
            "instruction": task.instruction,
            "task_test": task.task_test,
            "environment": task.environment or {},
        }
    return tasks


def source_tasks_select(selection: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """The source tasks a selection names, or ([], what is wrong with it). Kinds: `ids`
    (`ids`), `sample` (`size`, `seed`: the same draw every time) and `filter` (`text`: in the
    instruction, case-insensitive)."""
    tasks = source_tasks_all()
    kind = selection.get("kind")
    if kind == "ids":
        ids = selection.get("ids") or []
        missing = [i for i in ids if i not in tasks]
        if missing:
            return [], f"unknown source task(s): {', '.join(map(str, missing[:10]))}"
        return [tasks[i] for i in dict.fromkeys(ids)], ""
    if kind == "sample":
        size, seed = selection.get("size"), selection.get("seed", 0)
        if not isinstance(size, int) or not 1 <= size <= len(tasks):
            return [], f"a sample's size must be 1 to {len(tasks)}"
        return [tasks[i] for i in random.Random(seed).sample(sorted(tasks), size)], ""
    if kind == "filter":
        text = str(selection.get("text") or "").lower()
        chosen = [t for _, t in sorted(tasks.items()) if text in t["instruction"].lower()]
        return chosen, "" if chosen else "no source task matches the filter"
    return [], "the selection's kind must be ids, sample or filter"


def seed_task(record: dict[str, Any]) -> SeedTask:
    return SeedTask(
        external_id=record["id"],
        instruction=record["instruction"],
        task_test=record["task_test"],
        environment=record.get("environment") or {},
    )
