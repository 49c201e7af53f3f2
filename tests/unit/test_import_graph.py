"""The import graph of the apps, read with grimp (import-linter's graph library): no module is on an
import circle, imports inside functions and under TYPE_CHECKING included, and only the Celery worker
imports an app's `tasks` module (services publish through the app's `queue`)."""

from __future__ import annotations

import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = ("veriharm_site", "candidates", "annotation", "evaluation")


def _graph(*packages: str) -> grimp.ImportGraph:
    return grimp.build_graph(*packages, include_external_packages=False, cache_dir=None)


def circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Each import a -> b that comes back to a, as the shortest way round (one per circle)."""
    found: list[list[str]] = []
    seen: set[frozenset[str]] = set()
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is None:
                continue
            circle = [importer, *back]
            if frozenset(circle) not in seen:
                seen.add(frozenset(circle))
                found.append(circle)
    return found


@pytest.fixture(scope="module")
def apps_graph() -> grimp.ImportGraph:
    sys.path.insert(0, str(ROOT))
    try:
        return _graph(*APPS)
    finally:
        sys.path.remove(str(ROOT))


def test_no_module_of_the_apps_is_on_an_import_circle(apps_graph):
    assert circles(apps_graph) == []


@pytest.mark.parametrize("app", ["candidates", "evaluation"])
def test_only_the_worker_imports_an_apps_tasks(apps_graph, app):
    importers = apps_graph.find_modules_that_directly_import(f"{app}.tasks")
    assert sorted(importers) == []


def test_a_circle_through_an_import_inside_a_function_is_found(tmp_path, monkeypatch):
    # The check above on a package that has one, so it cannot pass by reading nothing.
    package = tmp_path / "circular"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "services.py").write_text("from circular import selectors\n")
    (package / "selectors.py").write_text("def later():\n    from circular.services import x\n")
    (package / "alone.py").write_text("import json\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert circles(_graph("circular")) == [["circular.selectors", "circular.services", "circular.selectors"]]
