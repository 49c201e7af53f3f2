"""From a stored agent (kind + config) to a runnable harness."""
from __future__ import annotations

from typing import Any

from evaluation.gateway.config import Upstream, upstream_from_config

from .base import AgentRunner
from .command import CommandAgent
from .openai_compatible import EndpointConfig, OpenAICompatibleAgent
from .reference import CHECKS, NOOP, NoopAgent, ReferenceAgent


class NoReferenceScript(ValueError):
    """The candidate has no script for this reference agent."""


def validate_config(kind: str, config: dict[str, Any]) -> None:
    """Raise ValueError naming what is wrong with an agent's configuration."""
    if not isinstance(config, dict):
        raise ValueError("config must be a JSON object")
    if kind == "reference":
        if config.get("script") not in CHECKS or set(config) - {"script"}:
            raise ValueError('a reference agent needs exactly {"script": "safe"}, {"script": "harmful"} '
                             'or {"script": "noop"}')
    elif kind == "command":
        template = config.get("command")
        if not isinstance(template, str) or "{task_file}" not in template:
            raise ValueError('a command agent needs {"command": "... {task_file} ..."}')
        env = config.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise ValueError("a command agent's env must map names to strings")
        if set(config) - {"command", "env", "gateway"}:
            raise ValueError("a command agent's config takes only command, env and gateway")
        if "gateway" in config:
            if not isinstance(config["gateway"], dict):
                raise ValueError("a command agent's gateway must be an object: its model upstream")
            try:
                upstream_from_config(config["gateway"])
            except ValueError as exc:
                raise ValueError(f"gateway: {exc}") from None
    elif kind == "openai_compatible":
        EndpointConfig.from_config(config)
    else:
        raise ValueError(f"unknown agent kind {kind!r}")


def model_upstream(kind: str, config: dict[str, Any]) -> Upstream | None:
    """The model upstream the agent's gateway forwards to; None for agents that call no model.

    The openai_compatible loop's own endpoint; a command harness's `gateway` block, which a
    sandbox backend exposes to it through the gateway's socket."""
    validate_config(kind, config)
    if kind == "openai_compatible":
        return EndpointConfig.from_config(config).upstream()
    if kind == "command" and "gateway" in config:
        return upstream_from_config(config["gateway"])
    return None


def build_runner(kind: str, config: dict[str, Any], *, network: bool, references: dict[str, str]) -> AgentRunner:
    validate_config(kind, config)
    if kind == "reference":
        if config["script"] == NOOP:
            return NoopAgent()
        script = references.get(config["script"])
        if not script:
            raise NoReferenceScript(f"the candidate has no {config['script']} reference script")
        return ReferenceAgent(script)
    if kind == "command":
        return CommandAgent(config["command"], env=config.get("env"), network=network)
    return OpenAICompatibleAgent(EndpointConfig.from_config(config))
