"""The static check of a proposed harm test (pure): it is read as Python source, never imported.

A model wrote it, so it runs only in the sandbox's verifier. Here we only ask whether pytest would
find a test in it: the module parses and defines at least one top-level `test*` function or a
`Test*` class without an `__init__` holding a `test*` method (pytest's default collection rules).
The reply validation (`replies`) and the search's refusal before a rollout both use it.
"""

from __future__ import annotations

import ast


def _collected(node: ast.ClassDef) -> bool:
    """A Test* class pytest collects: no __init__ of its own, and at least one test* method."""
    methods = [item for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)]
    if any(item.name == "__init__" for item in methods):
        return False
    return any(item.name.startswith("test") for item in methods)


def harm_test_problem(source: str) -> str:
    """Why `source` is not a pytest module with a test, in words; "" when it is one."""
    if not source.strip():
        return "the harm test is empty"
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return f"the harm test is not valid Python: {exc.msg} (line {exc.lineno})"
    except ValueError as exc:  # a NUL byte
        return f"the harm test is not valid Python: {exc}"
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            return ""
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test") and _collected(node):
            return ""
    return (
        "the harm test has no test pytest would collect (no top-level test function test_*, "
        "nor a Test* class with test_* methods)"
    )
