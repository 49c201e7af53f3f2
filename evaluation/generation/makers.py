"""From a run's stored proposer and judge configurations to the objects that answer requests.

A configuration is a JSON object with a `kind`: "scripted" (the demo ones, no model) or "model"
(an endpoint, `endpoints.endpoint_from_config` checks the rest). It names an endpoint's key by the
environment variable that holds it (`api_key_env`), never the key itself, as configurations are
stored and shown.

    name = proposer_name(config)                      # at launch: checked, nothing opened
    proposer = proposer_build(config, ledger=ledger)  # in a search's step; close() it after
"""

from __future__ import annotations

import re
from typing import Any

from evaluation.gateway.ledger import Ledger

from .contracts import Judge, Proposer
from .endpoints import endpoint_from_config
from .model_roles import ModelJudge, ModelProposer
from .scripted import PROPOSER_NAME, ScriptedJudge, ScriptedProposer

KINDS = ("model", "scripted")
# Words in a configuration's keys that would mean a secret is stored in it.
_SECRET_WORDS = ("key", "token", "secret", "password")


def _secret_keys(value: Any, path: str = "") -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for key, inner in value.items():
            name = f"{path}{key}"
            # By whole words: `max_tokens` is a limit, `api_key` or `access_token` a secret.
            words = re.split(r"[^a-z0-9]+", str(key).lower())
            if any(word in words for word in _SECRET_WORDS) and not str(key).endswith("_env"):
                found.append(name)
            found.extend(_secret_keys(inner, f"{name}."))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found.extend(_secret_keys(inner, f"{path}{index}."))
    return found


def _checked(config: Any, role: str) -> dict[str, Any]:
    if not isinstance(config, dict):
        raise ValueError(f"a {role} configuration must be a JSON object")
    if config.get("kind") not in KINDS:
        raise ValueError(f"a {role}'s kind must be one of {', '.join(KINDS)}")
    secrets = _secret_keys(config)
    if secrets:
        raise ValueError(
            f"a {role} configuration names its key by environment variable (api_key_env), "
            f"never holds it: remove {', '.join(secrets)}"
        )
    return config


def _endpoint_config(config: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in config.items() if key != "kind"}


def _scripted_judge(config: dict[str, Any]) -> ScriptedJudge:
    return ScriptedJudge(str(config.get("temperament", "strict")))


def proposer_name(config: Any) -> str:
    """The name a proposer configuration goes by; ValueError naming what is wrong with it."""
    config = _checked(config, "proposer")
    if config["kind"] == "scripted":
        return PROPOSER_NAME
    return endpoint_from_config(_endpoint_config(config)).name


def judge_name(config: Any) -> str:
    config = _checked(config, "judge")
    if config["kind"] == "scripted":
        return _scripted_judge(config).name
    return endpoint_from_config(_endpoint_config(config)).name


def unpriced_model(config: Any) -> str:
    """The model of a checked model-endpoint configuration whose price table has no entry for it
    ("" when priced, or scripted): under a USD budget the gateway refuses every call it cannot count."""
    if config.get("kind") != "model":
        return ""
    endpoint = endpoint_from_config(_endpoint_config(config))
    return "" if endpoint.upstream.price_of(endpoint.model) is not None else endpoint.model


def proposer_build(config: Any, *, ledger: Ledger | None = None) -> Proposer:
    """The proposer, its model calls (if any) charged through `ledger`; close() it after use."""
    config = _checked(config, "proposer")
    if config["kind"] == "scripted":
        return ScriptedProposer()
    return ModelProposer(_endpoint_config(config), ledger=ledger)


def judge_build(config: Any, *, ledger: Ledger | None = None) -> Judge:
    config = _checked(config, "judge")
    if config["kind"] == "scripted":
        return _scripted_judge(config)
    return ModelJudge(_endpoint_config(config), ledger=ledger)
