"""The import graph of the apps, read with grimp (import-linter's graph library): no module is on an
import circle, imports inside functions and under TYPE_CHECKING included; no package is on one either
(a package's own modules as one node, each sub-package another); and only the Celery worker imports
an app's `tasks` module (services publish through the app's `queue`)."""

from __future__ import annotations

import sys
from collections import defaultdict
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


# Outside the package level: an app's wiring (its URLs, AppConfig, admin and worker tasks stand above
# all its packages), its models (the data every package stands on; their own imports are held by the
# module-level check above), migrations and management commands.
WIRING = frozenset({"urls", "api_urls", "apps", "admin", "tasks", "celery", "wsgi"})
OUTSIDE = frozenset({"migrations", "management", "models"})


def package_of(graph: grimp.ImportGraph, module: str, roots: tuple[str, ...]) -> str | None:
    """The package node a module belongs to: a package's own modules are one node, so an import
    from a package to its sub-package and back is a circle, as between two sibling packages."""
    parts = module.split(".")
    if OUTSIDE.intersection(parts):
        return None
    if graph.find_children(module):
        return module
    parent = ".".join(parts[:-1])
    if parent in roots and parts[-1] in WIRING:
        return None
    return parent or module


def package_circles(graph: grimp.ImportGraph, roots: tuple[str, ...]) -> list[list[str]]:
    """The packages of one app that import each other round in a circle (between apps the import
    contracts decide), each circle as its sorted packages."""
    edges: dict[str, set[str]] = defaultdict(set)
    for importer in graph.modules:
        source = package_of(graph, importer, roots)
        if source is None:
            continue
        for imported in graph.find_modules_directly_imported_by(importer):
            target = package_of(graph, imported, roots)
            if target is not None and target != source and target.split(".")[0] == source.split(".")[0]:
                edges[source].add(target)

    def reaches(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in edges[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    reach = {node: reaches(node) for node in list(edges)}
    found: list[list[str]] = []
    for node in sorted(reach):
        circle = sorted({node} | {other for other in reach[node] if node in reach.get(other, set())})
        if len(circle) > 1 and circle not in found:
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


def test_no_package_of_an_app_is_on_an_import_circle(apps_graph):
    assert package_circles(apps_graph, APPS) == []


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


def test_a_package_circle_through_a_sub_package_is_found(tmp_path, monkeypatch):
    # A parent package whose own module imports its sub-package, which imports the parent back: the
    # modules form no circle, the packages do. The app's wiring and models stand outside.
    root = tmp_path / "layered"
    (root / "backends").mkdir(parents=True)
    for init in (root / "__init__.py", root / "backends" / "__init__.py"):
        init.write_text("")
    (root / "registry.py").write_text("from layered.backends import local\n")
    (root / "base.py").write_text("import json\n")
    (root / "backends" / "local.py").write_text("def later():\n    from layered import base\n")
    (root / "models.py").write_text("from layered.backends import local\n")
    (root / "urls.py").write_text("from layered.backends import local\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = _graph("layered")
    assert circles(graph) == []
    assert package_circles(graph, ("layered",)) == [["layered", "layered.backends"]]
    # Moved into a package of its own above both, the chooser closes no circle.
    (root / "registry.py").unlink()
    (root / "choosing").mkdir()
    (root / "choosing" / "__init__.py").write_text("")
    (root / "choosing" / "registry.py").write_text("from layered.backends import local\n")
    assert package_circles(_graph("layered"), ("layered",)) == []
