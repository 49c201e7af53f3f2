"""An agent as a trial or a generation search runs it, fixed when its run is launched: the pin (the
agent row as it was, with the configuration it runs with), its hash, and the runner built from it.

The launch pins the agent, and the worker builds exactly that agent, after checking the pin against
its hash and a harness recipe against its own. What configuration a pin carries is the caller's:
a trial's risk run and a search's target run the agent's own, a twin trial its twin configuration
(`trials.pinning.trial_agent_pin`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from candidates.pipeline.format import canonical_json, sha256_text
from evaluation.models import Agent, AgentKind

from .base import AgentRunner
from .factory import build_runner
from .harness import harness_pin


class PinTampered(ValueError):
    """A pinned agent no longer matches its recorded hash, or its harness recipe this worker's."""


def agent_pin(agent: Agent, config: Mapping[str, Any], references: Mapping[str, str]) -> dict[str, Any]:
    """The agent as it runs with `config`. A reference agent carries the script text it runs, so a
    later edit of the candidate's references cannot change what the trial ran."""
    config = dict(config)
    pinned: dict[str, Any] = {
        "name": agent.name,
        "kind": agent.kind,
        "model": agent.model,
        "harness": agent.harness,
        "config": config,
        "network": agent.network,
        "time_limit": agent.time_limit,
    }
    if agent.kind == AgentKind.REFERENCE:
        script: str | None = config.get("script")
        pinned["references"] = {script: references[script]} if script is not None and references.get(script) else {}
    if agent.kind == AgentKind.HARNESS:
        # The recipe as the launching code knows it; the worker refuses to run another one, and
        # records the runtime's own identity with the system the trial ran on.
        pinned["harness_recipe"] = harness_pin(config)
    return pinned


def agent_pin_sha256(pinned: Mapping[str, Any]) -> str:
    return sha256_text(canonical_json(dict(pinned)))


def pinned_runner(pinned: Mapping[str, Any], sha256: str) -> AgentRunner:
    """The agent exactly as pinned (its configuration, and a reference agent's script), after the pin
    is checked against its hash and a harness recipe against this worker's."""
    if pinned.get("config") is None:
        raise ValueError("the pinned agent configuration is missing")
    if agent_pin_sha256(pinned) != sha256:
        raise PinTampered("the pinned agent configuration does not match its sha256")
    if pinned["kind"] == AgentKind.HARNESS and pinned.get("harness_recipe") != harness_pin(pinned["config"]):
        raise PinTampered(
            f"launched with harness recipe {pinned.get('harness_recipe')}, this worker has {harness_pin(pinned['config'])}"
        )
    # The network mode as pinned: "none" or "model" (False from before the modes existed); a pin
    # asking for the host's network (True) is refused by build_runner, never run without it.
    return build_runner(
        pinned["kind"], pinned["config"], network=pinned.get("network"), references=pinned.get("references") or {}
    )
