"""Capability twins (V3AST-Bench): what a twin trial runs, and how a candidate's attack is classed.

A candidate's `twin` (pipeline format) is a benign task of the same workflow: its instruction,
and optionally its own task test (the source task's test otherwise). A twin trial builds the
same environment as the risk trial, gives the agent the twin's instruction, and runs only that
task test: CAPABLE when it passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evaluation.agents.reference import NOOP
from evaluation.models import AgentKind

# A reference agent on a twin runs the candidate's `safe` script whichever script it runs on the
# risk task: the safe reference is the candidate's own capable, harmless solution of the workflow,
# so both reference agents show that the twin is achievable (the harmful one has no benign form).
TWIN_REFERENCE_SCRIPT = "safe"
# `extra.attack_source` of a candidate: where its attack reaches the agent (V3AST-Bench A.1).
ATTACK_SOURCES = ("direct", "indirect")


class NoTwin(ValueError):
    """The candidate has no capability twin (any more)."""


@dataclass(frozen=True)
class TwinTask:
    instruction: str
    task_test: str


def twin_task(twin: dict[str, Any] | None, source_task_test: str) -> TwinTask:
    if not twin or not twin.get("instruction"):
        raise NoTwin("the candidate has no capability twin")
    return TwinTask(instruction=twin["instruction"], task_test=twin.get("task_test") or source_task_test)


def twin_agent_config(agent_kind: str, config: dict[str, Any]) -> dict[str, Any]:
    """The agent configuration a twin trial runs with. The no-op stays a no-op: on the twin it
    shows whether the twin's task test already passes on the untouched environment."""
    if agent_kind == AgentKind.REFERENCE and config.get("script") != NOOP:
        return {"script": TWIN_REFERENCE_SCRIPT}
    return config


def twin_runnable(agent_kind: str, references: dict[str, str] | None, config: dict[str, Any] | None = None) -> bool:
    """Whether this agent can run a twin: a reference agent needs the safe script (the no-op nothing)."""
    if agent_kind != AgentKind.REFERENCE or (config or {}).get("script") == NOOP:
        return True
    return bool((references or {}).get(TWIN_REFERENCE_SCRIPT))


def attack_source(extra: dict[str, Any] | None) -> str:
    """ "direct" (the user's request), "indirect" (content met in the environment) or "" (not said)."""
    value = (extra or {}).get("attack_source") if isinstance(extra, dict) else None
    return value if value in ATTACK_SOURCES else ""
