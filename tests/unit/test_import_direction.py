"""Imports travel one way (`.importlinter`): annotation and evaluation are built on candidates,
never the reverse, the site package renders no app's data, annotation's labelling side never
reaches its studies side, directly or through the write rules below both, and candidates' packages
import one way. A violation fails the suite, and every contract is shown to fail on a back edge
planted in a copy of the packages."""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(config: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    # lint-imports puts its working directory first on the module path, then PYTHONPATH's.
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(config), "--no-cache", "--no-logo"],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_project_keeps_its_import_contracts():
    result = _lint(ROOT / ".importlinter")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_reverse_import_is_reported(tmp_path):
    # The same checker on a contract the code does break (evaluation is built on candidates), so the
    # test above cannot pass by checking nothing.
    config = tmp_path / "reverse.ini"
    config.write_text(
        "[importlinter]\nroot_packages =\n    candidates\n    evaluation\n\n"
        "[importlinter:contract:reverse]\nname = evaluation may not import candidates\ntype = forbidden\n"
        "source_modules =\n    evaluation\nforbidden_modules =\n    candidates\n"
    )
    result = _lint(config)
    assert result.returncode == 1
    assert "BROKEN" in result.stdout and "evaluation.runs.launch -> candidates.models" in result.stdout


def _contract_section(name: str) -> str:
    """One contract of the project's `.importlinter`, as it stands there."""
    text = (ROOT / ".importlinter").read_text()
    start = text.index(f"[importlinter:contract:{name}]")
    end = text.find("\n[importlinter:", start + 1)
    return text[start : end if end != -1 else len(text)]


# A back edge from each kind of module of the labelling side to a reader of results: the
# annotator's pages, API and serializers alike.
BACK_EDGES = {
    "views": "annotation.studies.measures.statistics",
    "api": "annotation.studies.selectors.results",
    "serializers": "annotation.studies.measures.judges",
}


def _blindness_on_a_copy(tmp_path: Path) -> Path:
    """The project's own blindness contract, over a copy of the annotation app (first on the module
    path, so it shadows the app): the copy to plant back edges in, and the contract's configuration."""
    shutil.copytree(ROOT / "annotation", tmp_path / "annotation", ignore=shutil.ignore_patterns("__pycache__"))
    config = tmp_path / "blind.ini"
    config.write_text(
        "[importlinter]\nroot_packages =\n    veriharm_site\n    candidates\n    annotation\n    evaluation\n\n"
        + _contract_section("the-annotator-reads-are-blind")
    )
    return config


def test_the_labelling_side_may_not_reach_the_studies_side(tmp_path):
    # Kept as the copy stands, broken once the labelling side imports the studies side, naming every
    # back edge. The layout's blindness is checked, not assumed.
    config = _blindness_on_a_copy(tmp_path)
    kept = _lint(config, cwd=tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr

    for module, imported in BACK_EDGES.items():
        path = tmp_path / "annotation" / "labelling" / f"{module}.py"
        path.write_text(path.read_text() + f"\nimport {imported}  # a back edge\n")
    result = _lint(config, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "BROKEN" in result.stdout
    for module, imported in BACK_EDGES.items():
        assert f"annotation.labelling.{module} -> {imported}" in result.stdout, result.stdout


def test_the_labelling_side_may_not_reach_the_studies_side_through_what_it_stands_on(tmp_path):
    # The write rules are below both sides: were they to import a reader of results, every labelling
    # module that refuses or locks would reach it, and blindness breaks on that chain too.
    config = _blindness_on_a_copy(tmp_path)
    path = tmp_path / "annotation" / "write_rules" / "refusals.py"
    path.write_text(path.read_text() + "\nimport annotation.studies.selectors.users  # a back edge\n")
    result = _lint(config, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "annotation.labelling is not allowed to import annotation.studies.selectors.users" in " ".join(
        result.stdout.split()
    ), result.stdout
    assert "annotation.write_rules.refusals -> annotation.studies.selectors.users" in result.stdout, result.stdout


# A back edge between each two neighbouring layers of candidates' packages, and between siblings of
# one layer, which import none of each other: (importer, imported).
CANDIDATES_BACK_EDGES = (
    ("candidates.pipeline.format", "candidates.diffs.diffing"),
    ("candidates.diffs.diffing", "candidates.pool.records"),
    ("candidates.pool.selectors", "candidates.hooks.flags"),
    ("candidates.hooks.panels", "candidates.ranking.selectors"),
    ("candidates.ranking.views", "candidates.curation.queries"),
    ("candidates.curation.selectors", "candidates.importing.ranking"),
    ("candidates.importing.rows", "candidates.services.files"),
    ("candidates.releases.selectors", "candidates.import_jobs.selectors"),
)


def test_candidates_packages_import_one_way(tmp_path):
    # The project's layers contract of candidates on a copy of the app: kept as the copy stands,
    # broken once a package imports one above it or a sibling of its own layer, naming every edge.
    shutil.copytree(ROOT / "candidates", tmp_path / "candidates", ignore=shutil.ignore_patterns("__pycache__"))
    config = tmp_path / "candidates.ini"
    config.write_text(
        "[importlinter]\nroot_packages =\n    candidates\n\n" + _contract_section("candidates-packages-one-way")
    )
    kept = _lint(config, cwd=tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr

    for importer, imported in CANDIDATES_BACK_EDGES:
        path = _module_file(tmp_path, importer)
        path.write_text(path.read_text() + f"\nimport {imported}  # a back edge\n")
    result = _lint(config, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "BROKEN" in result.stdout
    for importer, imported in CANDIDATES_BACK_EDGES:
        assert f"{importer} -> {imported}" in result.stdout, (importer, imported, result.stdout)


def _contracts() -> dict[str, dict[str, list[str]]]:
    """Every contract of the project's `.importlinter`: its id, and each option as a list of lines."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / ".importlinter")
    prefix = "importlinter:contract:"
    return {
        section.removeprefix(prefix): {
            key: [line.strip() for line in value.splitlines() if line.strip()] for key, value in parser[section].items()
        }
        for section in parser.sections()
        if section.startswith(prefix)
    }


def _back_edge(contract: dict[str, list[str]]) -> tuple[str, str]:
    """An import each contract forbids, as (importer, imported): the first source importing the
    first forbidden module, the lowest layer importing the highest, or one independent module
    importing another."""
    kind = contract["type"][0]
    if kind == "forbidden":
        return contract["source_modules"][0], contract["forbidden_modules"][0]
    if kind == "independence":
        return contract["modules"][1], contract["modules"][0]
    assert kind == "layers", kind
    container = contract.get("containers", [""])[0]

    def first(layer: str) -> str:
        name = re.split(r"[|:]", layer)[0].strip()
        return f"{container}.{name}" if container else name

    return first(contract["layers"][-1]), first(contract["layers"][0])


def _module_file(root: Path, module: str) -> Path:
    path = root.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def test_every_contract_breaks_when_its_back_edge_is_added(tmp_path):
    # A copy of the project's packages with one forbidden import planted for each contract: every
    # contract must then report itself broken, naming its planted import, so none of them can pass
    # by checking nothing (a misspelt module, a layer no import reaches).
    config = ROOT / ".importlinter"
    parser = configparser.ConfigParser()
    parser.read(config)
    packages = [line.strip() for line in parser["importlinter"]["root_packages"].splitlines() if line.strip()]
    for package in packages:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__", "migrations"))
    contracts = _contracts()
    planted = {name: _back_edge(contract) for name, contract in contracts.items()}
    for importer, imported in planted.values():
        path = _module_file(tmp_path, importer)
        path.write_text(path.read_text() + f"\nimport {imported}  # a back edge\n")

    result = _lint(config, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"0 kept, {len(contracts)} broken" in result.stdout, result.stdout
    for importer, imported in planted.values():
        assert f"{importer} -> {imported}" in result.stdout, (importer, imported, result.stdout)
