"""Synthetic figures of generation runs: those no model produced, named once for the run's and its
searches' pages and for the candidates it keeps.

A generation run is synthetic when its proposer or any of its judges is scripted (a configuration of
kind "scripted": `makers`); the candidates it keeps are then synthetic too (`candidates.pool.synthetic`,
marked as they are stored by `recording`). Read from what produced the figures, never from who
launched the run. An evaluation run's rule is `evaluation.provenance.synthetic`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .models import GenerationRun


def scripted_names(configs: Iterable[Mapping[str, Any]]) -> list[str]:
    """The names of the scripted ones among these proposer or judge configurations."""
    return [str(c.get("name") or "scripted") for c in configs if c.get("kind") == "scripted"]


def generation_scripted(run: GenerationRun) -> list[str]:
    """The run's scripted proposers and judges, by name; empty when models did all of it."""
    return scripted_names(run.proposer_configs) + scripted_names(run.judge_configs)


def generation_synthetic_text(run: GenerationRun) -> str:
    """What a generation run's pages say of figures no model produced; "" when models produced them."""
    scripted = generation_scripted(run)
    if not scripted:
        return ""
    return (
        f"Synthetic: {', '.join(scripted)} called no model, so the proposals, judge scores and Q of this run's "
        "kept candidates are not a model's; the candidates are marked synthetic wherever they are shown."
    )
