"""Each backend's sandboxes, snapshots and backend are used through the base classes' interface
(evaluation.sandbox.base): a method a backend overrides takes exactly the base's parameters, so a
caller written against the base never passes what a backend does not take, or misses what it needs."""

from __future__ import annotations

import inspect

import pytest

from evaluation.sandbox.base import CommandSandbox, SandboxBackend, Snapshot
from evaluation.sandbox.bubblewrap import BubblewrapBackend, LocalSandbox, LocalSnapshot
from evaluation.sandbox.docker import DockerBackend, DockerSandbox, DockerSnapshot

PAIRS = [
    (DockerSandbox, CommandSandbox),
    (LocalSandbox, CommandSandbox),
    (DockerSnapshot, Snapshot),
    (LocalSnapshot, Snapshot),
    (DockerBackend, SandboxBackend),
    (BubblewrapBackend, SandboxBackend),
]


def _overrides(cls: type, base: type) -> list[tuple[str, inspect.Signature, inspect.Signature]]:
    found = []
    for name, member in vars(cls).items():
        if name.startswith("__") or not inspect.isfunction(member):
            continue
        inherited = next((vars(b)[name] for b in base.__mro__ if name in vars(b)), None)
        if inspect.isfunction(inherited):
            found.append((name, inspect.signature(member, eval_str=True), inspect.signature(inherited, eval_str=True)))
    return found


@pytest.mark.parametrize(("cls", "base"), PAIRS, ids=[cls.__name__ for cls, _ in PAIRS])
def test_an_overriding_method_takes_the_base_parameters(cls: type, base: type) -> None:
    overrides = _overrides(cls, base)
    assert overrides, f"{cls.__name__} overrides nothing of {base.__name__}"
    for name, own, inherited in overrides:
        assert list(own.parameters.values()) == list(inherited.parameters.values()), (
            f"{cls.__name__}.{name}{own} differs from {base.__name__}.{name}{inherited}"
        )


def test_both_sandboxes_override_the_primitive() -> None:
    assert "_run" in vars(DockerSandbox) and "_run" in vars(LocalSandbox)
