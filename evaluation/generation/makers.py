"""From a run's stored proposer and judge configurations to the objects that answer requests.

A configuration is a JSON object with a `kind`; it names an endpoint's key by the environment
variable that holds it (`api_key_env`), never the key itself, as configurations are stored and
shown. The scripted kind is built here; the model-endpoint kinds register their factories
(`proposer_kind_register`, `judge_kind_register`) from their own module, which this one never imports.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .contracts import Judge, Proposer
from .scripted import ScriptedJudge, ScriptedProposer

ProposerFactory = Callable[[dict[str, Any]], Proposer]
JudgeFactory = Callable[[dict[str, Any]], Judge]

_PROPOSERS: dict[str, ProposerFactory] = {"scripted": lambda config: ScriptedProposer()}
_JUDGES: dict[str, JudgeFactory] = {"scripted": lambda config: ScriptedJudge(str(config.get("temperament", "strict")))}
# Words in a configuration's keys that would mean a secret is stored in it.
_SECRET_WORDS = ("key", "token", "secret", "password")


def proposer_kind_register(kind: str, factory: ProposerFactory) -> None:
    _PROPOSERS[kind] = factory


def judge_kind_register(kind: str, factory: JudgeFactory) -> None:
    _JUDGES[kind] = factory


def _secret_keys(value: Any, path: str = "") -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for key, inner in value.items():
            name = f"{path}{key}"
            if any(word in str(key).lower() for word in _SECRET_WORDS) and not str(key).endswith("_env"):
                found.append(name)
            found.extend(_secret_keys(inner, f"{name}."))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found.extend(_secret_keys(inner, f"{path}{index}."))
    return found


def _build(config: Any, factories: dict[str, Callable[[dict[str, Any]], Any]], role: str) -> Any:
    if not isinstance(config, dict):
        raise ValueError(f"a {role} configuration must be a JSON object")
    if config.get("kind") not in factories:
        raise ValueError(f"a {role}'s kind must be one of {', '.join(sorted(factories))}")
    secrets = _secret_keys(config)
    if secrets:
        raise ValueError(
            f"a {role} configuration names its key by environment variable (api_key_env), "
            f"never holds it: remove {', '.join(secrets)}"
        )
    return factories[config["kind"]](config)


def proposer_build(config: Any) -> Proposer:
    """Raises ValueError naming what is wrong with the configuration."""
    proposer: Proposer = _build(config, _PROPOSERS, "proposer")
    return proposer


def judge_build(config: Any) -> Judge:
    judge: Judge = _build(config, _JUDGES, "judge")
    return judge
