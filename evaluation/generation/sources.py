"""The source tasks a generation run may start from: the BashBench tasks shipped in data/bashbench
(V_task from `private_tests`, as the pipeline format says) and the source tasks already imported,
which win for the same id (an import of a generated candidate must match the stored source task).
Imported tasks are read by id, so a large pool is never loaded whole."""

from __future__ import annotations

import random
from collections.abc import Iterable
from functools import cache
from typing import Any

from candidates.models import SourceTask
from candidates.pool.bashbench import load_bashbench

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


def _record(task: SourceTask) -> dict[str, Any]:
    return {
        "id": task.external_id,
        "instruction": task.instruction,
        "task_test": task.task_test,
        "environment": task.environment or {},
    }


def source_tasks_named(ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Id -> the pipeline format's source_task record, for those of `ids` that exist."""
    wanted = list(dict.fromkeys(ids))
    found = {i: _bashbench()[i] for i in wanted if i in _bashbench()}
    found.update({t.external_id: _record(t) for t in SourceTask.objects.filter(external_id__in=wanted)})
    return found


def _all_ids() -> list[str]:
    return sorted(set(_bashbench()) | set(SourceTask.objects.values_list("external_id", flat=True)))


def source_tasks_select(selection: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """The source tasks a selection names, or ([], what is wrong with it). Kinds: `ids`
    (`ids`), `sample` (`size`, `seed`: the same draw from the same pool every time) and `filter`
    (`text`: in the instruction, case-insensitive)."""
    kind = selection.get("kind")
    if kind == "ids":
        ids = [str(i) for i in selection.get("ids") or []]
        if not ids:
            return [], "name at least one source task"
        found = source_tasks_named(ids)
        missing = [i for i in ids if i not in found]
        if missing:
            return [], f"unknown source task(s): {', '.join(missing[:10])}"
        return [found[i] for i in dict.fromkeys(ids)], ""
    if kind == "sample":
        pool = _all_ids()
        size, seed = selection.get("size"), selection.get("seed", 0)
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= len(pool):
            return [], f"a sample's size must be 1 to {len(pool)}"
        chosen = random.Random(seed).sample(pool, size)
        found = source_tasks_named(chosen)
        return [found[i] for i in chosen], ""
    if kind == "filter":
        text = str(selection.get("text") or "")
        if not text.strip():
            return [], "a filter needs the text to look for"
        matched = {i for i, t in _bashbench().items() if text.lower() in t["instruction"].lower()}
        matched |= set(SourceTask.objects.filter(instruction__icontains=text).values_list("external_id", flat=True))
        found = source_tasks_named(sorted(matched))
        # An imported task that wins over a BashBench one of the same id must match the filter itself.
        matching = [found[i] for i in sorted(found) if text.lower() in found[i]["instruction"].lower()]
        return matching, "" if matching else "no source task matches the filter"
    return [], "the selection's kind must be ids, sample or filter"


def seed_task(record: dict[str, Any]) -> SeedTask:
    return SeedTask(
        external_id=record["id"],
        instruction=record["instruction"],
        task_test=record["task_test"],
        environment=record.get("environment") or {},
    )
