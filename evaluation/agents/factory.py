"""From a stored agent (kind + config) to a runnable harness."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from evaluation.gateway.config import Upstream, upstream_from_config
from evaluation.sandbox.network import HOST_NETWORK_REFUSED, MODEL, MODES, NONE

from .base import AgentRunner
from .command import CommandAgent
from .harness import DEFAULT_STEP_LIMIT, HarnessAgent, validate_harness_config
from .openai_compatible import EndpointConfig, OpenAICompatibleAgent
from .reference import CHECKS, NOOP, NoopAgent, ReferenceAgent

# A harness's default call cap per step of its step_limit: each step is one model call, and a CLI
# adds its probes, model lists and token counts and retries a failed call several times itself.
HARNESS_CALLS_PER_STEP = 5


class NoReferenceScript(ValueError):
    """The candidate has no script for this reference agent."""


def validate_config(kind: str, config: dict[str, Any]) -> None:
    """Raise ValueError naming what is wrong with an agent's configuration."""
    if not isinstance(config, dict):
        raise ValueError("config must be a JSON object")
    if kind == "reference":
        if config.get("script") not in CHECKS or set(config) - {"script"}:
            raise ValueError(
                'a reference agent needs exactly {"script": "safe"}, {"script": "harmful"} or {"script": "noop"}'
            )
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
    elif kind == "harness":
        validate_harness_config(config)
    elif kind == "openai_compatible":
        EndpointConfig.from_config(config)
    else:
        raise ValueError(f"unknown agent kind {kind!r}")


def network_mode(kind: str, config: dict[str, Any]) -> str:
    """The sandbox network mode an agent runs in: "model" for a harness, or a command with a
    gateway (both reach their model from inside the sandbox), "none" for everything else."""
    validate_config(kind, config)
    return MODEL if kind == "harness" or (kind == "command" and "gateway" in config) else NONE


def check_network(kind: str, config: dict[str, Any], network: Any) -> str:
    """An agent's recorded network mode, checked against what its configuration needs."""
    if network is True or network == "host":
        # Agents made before the modes existed said True for the host's network.
        raise ValueError(f"this agent asks for the host's network, but {HOST_NETWORK_REFUSED}")
    if network is False or network in (None, ""):
        network = NONE
    if network not in MODES:
        raise ValueError(f"network must be one of {', '.join(MODES)}, got {network!r}")
    needed = network_mode(kind, config)
    if network != needed:
        why = (
            "it reaches its model from inside the sandbox through the trial's gateway"
            if needed == MODEL
            else "only a harness or a command with a gateway block reaches a model from the sandbox"
        )
        raise ValueError(f"network must be {needed!r} for this agent ({why}), not {network!r}")
    return network


def model_upstream(kind: str, config: dict[str, Any]) -> Upstream | None:
    """The model upstream the agent's gateway forwards to; None for agents that call no model.

    The openai_compatible loop's own endpoint; a harness's or a command's `gateway` block, which
    a sandbox in network mode "model" reaches through the gateway's socket."""
    validate_config(kind, config)
    if kind == "openai_compatible":
        return EndpointConfig.from_config(config).upstream()
    if kind == "harness":
        return harness_upstream(config)
    if kind == "command" and "gateway" in config:
        return upstream_from_config(config["gateway"])
    return None


def harness_upstream(config: dict[str, Any]) -> Upstream:
    """A harness's upstream with the harness defaults where its gateway block sets none: no retries
    by the gateway (every CLI retries a failed call itself, and the two would multiply unseen; each
    of the harness's attempts is recorded instead), and a call cap of its step_limit times
    HARNESS_CALLS_PER_STEP, so a harness looping on its model ends long before its time limit."""
    block = config["gateway"]
    upstream = upstream_from_config(block)
    if "max_retries" not in block:
        upstream = replace(upstream, max_retries=0)
    if "max_calls" not in block:
        upstream = replace(
            upstream, max_calls=int(config.get("step_limit", DEFAULT_STEP_LIMIT)) * HARNESS_CALLS_PER_STEP
        )
    return upstream


def agent_models(kind: str, config: dict[str, Any]) -> tuple[str, ...]:
    """The model(s) an agent's configuration names, for its gateway's model list."""
    model = config.get("model") if kind in ("openai_compatible", "harness") else None
    return (model,) if isinstance(model, str) and model else ()


def build_runner(kind: str, config: dict[str, Any], *, network: Any, references: dict[str, str]) -> AgentRunner:
    validate_config(kind, config)
    check_network(kind, config, network)
    if kind == "reference":
        if config["script"] == NOOP:
            return NoopAgent()
        script = references.get(config["script"])
        if not script:
            raise NoReferenceScript(f"the candidate has no {config['script']} reference script")
        return ReferenceAgent(script)
    if kind == "command":
        upstream = upstream_from_config(config["gateway"]) if "gateway" in config else None
        return CommandAgent(config["command"], env=config.get("env"), model_api=upstream.api if upstream else None)
    if kind == "harness":
        return HarnessAgent(config)
    return OpenAICompatibleAgent(EndpointConfig.from_config(config))


def agent_runtimes(kind: str, config: Any) -> tuple[str, ...]:
    """The harness runtimes the agent runs in its sandbox (what of the sandbox system it needs beyond
    the tree and the verifier): its harness's, or none. A configuration that is not valid names none:
    it is refused for what it is wrong about, not waited for."""
    if kind != "harness" or not isinstance(config, dict):
        return ()
    try:
        return (validate_harness_config(config).name,)
    except ValueError:
        return ()


def pin_runtimes(pin: Any) -> tuple[str, ...]:
    """`agent_runtimes` of an agent as pinned at launch (a trial's or a search's agent_config)."""
    if not isinstance(pin, dict):
        return ()
    return agent_runtimes(str(pin.get("kind", "")), pin.get("config"))


def permission_mode(kind: str, config: Any) -> str:
    """The harness's own permission mode (what it may do without asking), or "" for an agent that
    runs no harness or whose configuration is not valid."""
    if kind != "harness" or not isinstance(config, dict):
        return ""
    try:
        return validate_harness_config(config).permission_mode
    except ValueError:
        return ""
