"""The sandbox's package file stands on the shared layer like its modules do: importing
``evaluation.sandbox`` brings in no backend (the `.importlinter` layers contract checks the modules of
the package; this checks the package's own ``__init__``, which a contract cannot name apart)."""

from __future__ import annotations

import grimp

BACKENDS = ("evaluation.sandbox.bubblewrap", "evaluation.sandbox.docker")


def test_the_sandbox_package_file_reaches_no_backend():
    graph = grimp.build_graph("evaluation", cache_dir=None)
    reached = {
        module
        for backend in BACKENDS
        for module in {backend} | graph.find_descendants(backend)
        if graph.find_shortest_chains(importer="evaluation.sandbox", imported=module, as_packages=False)
    }
    assert reached == set()


def test_only_the_registry_of_the_sandbox_root_reaches_a_backend():
    graph = grimp.build_graph("evaluation", cache_dir=None)
    backend_modules = {m for b in BACKENDS for m in {b} | graph.find_descendants(b)}
    root = {"evaluation.sandbox"} | {
        m for m in graph.find_descendants("evaluation.sandbox") if m not in backend_modules
    }
    reaching = {
        module
        for module in root
        for backend_module in backend_modules
        if graph.find_shortest_chains(importer=module, imported=backend_module, as_packages=False)
    }
    assert reaching == {"evaluation.sandbox.registry"}
