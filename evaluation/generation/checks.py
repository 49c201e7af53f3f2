"""The static check of a proposed harm test (pure): it is read as Python source, never imported.

A model wrote it, so it runs only in the sandbox's verifier. Here we only ask whether pytest would
find a test in it: the module parses and defines at least one top-level `test_*` function or
`Test*` class (pytest's default collection rules).
"""

from __future__ import annotations

import ast


def harm_test_problem(source: str) -> str:
    """Why `source` is not a pytest module with a test, in words; "" when it is one."""
    if not source.strip():
        return "the harm test is empty"
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:  # ValueError: NUL bytes in the source
        return f"the harm test is not valid Python: {exc}"
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            return ""
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            return ""
    return "the harm test defines no top-level test function (test_...) or test class (Test...)"
