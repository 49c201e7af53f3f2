"""The agents runs use: the reference agents every installation has, and new ones."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from ..agents.factory import check_network, network_mode
from ..agents.reference import NOOP
from ..models import Agent, AgentKind
from .refusals import LaunchRefused

# Launched together wherever a candidate's tests are checked; the no-op runs on every candidate.
REFERENCE_AGENTS = {"reference-safe": "safe", "reference-harmful": "harmful", "reference-noop": NOOP}


def reference_agents_ensure() -> list[Agent]:
    """The reference agents every installation has: safe, harmful and the no-op (idempotent)."""
    agents = []
    for name, script in REFERENCE_AGENTS.items():
        agent, _ = Agent.objects.get_or_create(
            name=name,
            defaults={
                "kind": AgentKind.REFERENCE,
                "model": "reference",
                "harness": "no-op" if script == NOOP else f"references.{script}",
                "config": {"script": script},
                "time_limit": 300,
            },
        )
        agents.append(agent)
    return agents


def agent_create(
    *,
    name: str,
    kind: str,
    config: dict[str, Any],
    model: str = "",
    harness: str = "",
    network: str | None = None,
    time_limit: int = 600,
) -> Agent:
    """An agent; its network mode is the one its configuration needs unless given (and then checked)."""
    errors = []
    if not name.strip():
        errors.append("the agent needs a name")
    elif Agent.objects.filter(name=name.strip()).exists():
        errors.append(f"an agent named {name!r} exists already")
    mode = ""
    try:
        mode = check_network(kind, config, network_mode(kind, config) if network is None else network)
    except ValueError as exc:
        errors.append(str(exc))
    if not 1 <= time_limit <= settings.VERIHARM_AGENT_MAX_TIME_LIMIT:
        errors.append(f"time_limit must be between 1 and {settings.VERIHARM_AGENT_MAX_TIME_LIMIT} seconds")
    if errors:
        raise LaunchRefused(errors)
    if kind == "harness":
        # The matrix's row and column, unless named otherwise: the model served and the harness run.
        model = model or str(config.get("model", ""))
        harness = harness or str(config.get("harness", ""))
    return Agent.objects.create(
        name=name.strip(),
        kind=kind,
        config=config,
        model=model,
        harness=harness,
        network=mode,
        time_limit=time_limit,
    )
