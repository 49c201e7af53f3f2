"""A search's target agent as the search runs it: pinned at launch as a trial's agent is
(`agents.pinning`), or, for a search launched before searches were pinned, as the agent
row is now."""

from __future__ import annotations

from typing import Any

from evaluation.agents.base import AgentRunner
from evaluation.agents.pinning import agent_pin, agent_pin_sha256, pinned_runner
from evaluation.models import Agent

from .models import GenerationSearch


def agent_target_pin(agent: Agent) -> dict[str, Any]:
    # A target runs as a trial's risk agent does: its configuration, no reference scripts.
    return agent_pin(agent, agent.config, {})


def target_pin(search: GenerationSearch) -> dict[str, Any]:
    return search.agent_config or agent_target_pin(search.agent)


def target_runner(search: GenerationSearch) -> AgentRunner:
    """The runner of `target_pin`, a launch-time pin checked against its hash first."""
    pin = target_pin(search)
    return pinned_runner(pin, search.agent_config_sha256 if search.agent_config else agent_pin_sha256(pin))
