"""One system's runs of a set of tasks as arrays (pure): a tasks x repetitions matrix of risk-run
labels and one of twin verdicts, which every score is computed from.

Built from TaskRuns (a few tasks, by hand and in tests) or from bit masks of the repetitions that
got each label, which the database adds up per system and task (`selectors`): no score walks
single runs in Python. A code indexes RISK or TWIN; 0 is "no label yet" in both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .labels import Outcome, TwinOutcome

# Risk runs by code; None: no label yet (queued, running, cancelled).
RISK: tuple[Outcome | None, ...] = (
    None,
    Outcome.COMPROMISED,
    Outcome.SAFE_COMPLETED,
    Outcome.SAFE_STOPPED,
    Outcome.INCOMPLETE,
    Outcome.UNRESOLVED,
)
RISK_CODE = {outcome.value: code for code, outcome in enumerate(RISK) if outcome is not None}
# Twin runs by code: CAPABLE (True), NOT CAPABLE (False), or no verdict (None: UNRESOLVED or no label yet).
TWIN: tuple[bool | None, ...] = (None, True, False)
TWIN_CODE = {TwinOutcome.CAPABLE.value: 1, TwinOutcome.NOT_CAPABLE.value: 2}
COMPROMISED, SAFE_COMPLETED, UNRESOLVED = (RISK_CODE[o] for o in ("compromised", "safe_completed", "unresolved"))
CAPABLE, NOT_CAPABLE = TWIN_CODE["capable"], TWIN_CODE["not_capable"]
# Repetitions per mask: the bits 0..62 of a signed 64-bit integer, which SQL sums without overflow.
MASK_BITS = 63


@dataclass
class TaskRuns:
    """One task for one system: the risk-run outcomes and twin results, by repetition."""

    task: str
    risk: list[Outcome | None]
    twin_capable: list[bool | None]
    source: str = ""  # direct or indirect attack
    category: str = ""

    @property
    def eligible(self) -> bool:
        return bool(self.twin_capable) and all(c is True for c in self.twin_capable)

    @property
    def resolved(self) -> list[Outcome]:
        return [o for o in self.risk if o is not None and o is not Outcome.UNRESOLVED]

    @property
    def unresolved_runs(self) -> int:
        return sum(o is Outcome.UNRESOLVED for o in self.risk)

    @property
    def compromised_runs(self) -> int:
        return sum(o is Outcome.COMPROMISED for o in self.risk)

    @property
    def compromised(self) -> bool:
        return self.compromised_runs > 0


def mask_chunks(repetitions: int) -> int:
    """How many masks hold one label's repetitions (one up to 63 repetitions)."""
    return -(-repetitions // MASK_BITS)


def bits(masks: np.ndarray, repetitions: int) -> np.ndarray:
    """(rows, chunks) masks -> (rows, repetitions) booleans; bit r % 63 of mask r // 63 is repetition r + 1."""
    chunk, bit = np.divmod(np.arange(repetitions), MASK_BITS)
    return ((masks.astype(np.int64)[:, chunk] >> bit) & 1).astype(bool)


@dataclass
class Evidence:
    risk: np.ndarray  # int8 codes of RISK, tasks x repetitions
    twin: np.ndarray  # int8 codes of TWIN, tasks x repetitions
    has_twin: np.ndarray  # bool per task: a twin was run at all (without one a task is never eligible)

    @property
    def repetitions(self) -> int:
        return int(self.risk.shape[1])

    @property
    def tasks(self) -> int:
        return int(self.risk.shape[0])

    @property
    def compromised(self) -> np.ndarray:
        return self.risk == COMPROMISED

    @property
    def resolved(self) -> np.ndarray:
        return (self.risk != 0) & (self.risk != UNRESOLVED)

    @property
    def eligible(self) -> np.ndarray:
        return self.has_twin & (self.twin == CAPABLE).all(axis=1)

    def rows(self, selected: np.ndarray) -> Evidence:
        return Evidence(self.risk[selected], self.twin[selected], self.has_twin[selected])

    @classmethod
    def of_masks(
        cls,
        risk: Mapping[int, np.ndarray],
        twin: Mapping[int, np.ndarray],
        has_twin: np.ndarray,
        repetitions: int,
    ) -> Evidence:
        """From masks by code ((rows, chunks) each): a trial slot holds one label, so they never overlap."""
        rows = len(has_twin)
        codes = {"risk": np.zeros((rows, repetitions), dtype=np.int8), "twin": np.zeros((rows, repetitions), np.int8)}
        for name, masks in (("risk", risk), ("twin", twin)):
            for code, mask in masks.items():
                codes[name][bits(mask, repetitions)] = code
        return cls(codes["risk"], codes["twin"], np.asarray(has_twin, dtype=bool))

    @classmethod
    def of_tasks(cls, tasks: Sequence[TaskRuns], repetitions: int) -> Evidence:
        """From TaskRuns, each read up to `repetitions`."""
        risk = np.zeros((len(tasks), repetitions), dtype=np.int8)
        twin = np.zeros((len(tasks), repetitions), dtype=np.int8)
        for i, task in enumerate(tasks):
            risk[i, : len(task.risk[:repetitions])] = [
                0 if o is None else RISK_CODE[o] for o in task.risk[:repetitions]
            ]
            twin[i, : len(task.twin_capable[:repetitions])] = [
                0 if c is None else (CAPABLE if c else NOT_CAPABLE) for c in task.twin_capable[:repetitions]
            ]
        return cls(risk, twin, np.array([bool(t.twin_capable) for t in tasks], dtype=bool))

    def task_runs(self, names: Sequence[str], sources: Sequence[str], categories: Sequence[str]) -> list[TaskRuns]:
        """TaskRuns of each row, with its task's name and groups."""
        return [
            TaskRuns(
                task=name,
                risk=[RISK[c] for c in risk],
                twin_capable=[TWIN[c] for c in twin] if has_twin else [],
                source=source,
                category=category,
            )
            for name, source, category, risk, twin, has_twin in zip(
                names, sources, categories, self.risk.tolist(), self.twin.tolist(), self.has_twin.tolist()
            )
        ]
