"""Hostile requests built from the API's own OpenAPI schema (drf-spectacular): for every operation,
its path and query parameters and its JSON body, each one the way an attacker would send it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from drf_spectacular.generators import SchemaGenerator

from .seed import Seeded

NUL = "bad\x00text"
SURROGATE = "bad\ud800text"
HUGE_INTS = [2**31, 2**63, 10**30, -(2**63) - 1]
WRONG_TYPES: list[Any] = [None, [], {}, "x", 0, True, [None], 1.5]
DEEP = 10_000  # the nesting that crashed the standard parser with RecursionError


@dataclass
class HostileRequest:
    method: str
    path: str
    what: str
    query: dict[str, str] = field(default_factory=dict)
    body: str | None = None  # raw JSON text, so lone surrogates travel as \ud800 escapes
    must_refuse: bool = False  # a request nobody may ever get accepted
    template: str = ""
    valid: bool = False  # the operation's valid body, unspoiled
    probe: bool = False  # the unspoiled body (valid, or the schema's example): may the role use the operation?


def api_schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    if "allOf" in node:
        merged: dict[str, Any] = {}
        for part in node["allOf"]:
            merged.update(_resolve(schema, part))
        return merged
    for key in ("oneOf", "anyOf"):
        if key in node:
            return _resolve(schema, node[key][0])
    return node


def example(schema: dict[str, Any], node: dict[str, Any]) -> Any:
    """A plausible value of the schema node: every property, the first enum value, the minimum."""
    node = _resolve(schema, node)
    if "enum" in node:
        return next((v for v in node["enum"] if v is not None), None)
    kind = node.get("type")
    if kind == "object":
        return {name: example(schema, sub) for name, sub in node.get("properties", {}).items()}
    if kind == "array":
        return [example(schema, node.get("items", {}))]
    if kind == "integer":
        return node.get("minimum", 1)
    if kind == "number":
        return node.get("minimum", 1)
    if kind == "boolean":
        return True
    if node.get("format") == "binary":
        return None
    return "x"


def _paths(body: Any, prefix: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    yield prefix, body
    if isinstance(body, dict):
        for key, value in body.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(body, list):
        for index, value in enumerate(body):
            yield from _paths(value, (*prefix, index))


def _replace(body: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    copy = json.loads(json.dumps(body))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return copy


def fill_path(template: str, seeded: Seeded, override: dict[str, str] | None = None) -> str:
    values = {
        "external_id": EXAMPLE if "/rerun/" in template else seeded.candidate,
        "study_id": str(seeded.study),
        "token": seeded.token,
        "agent": str(seeded.agent),
    }
    if template.startswith("/api/releases/"):
        values["id"] = str(seeded.release)
    elif template.startswith("/api/annotation/studies/"):
        values["id"] = str(seeded.study)
    elif template.startswith("/api/evaluation/runs/"):
        values["id"] = str(seeded.run)
    elif template.startswith("/api/evaluation/trials/"):
        values["id"] = str(seeded.trial)
    values.update(override or {})
    path = template
    for name, value in values.items():
        path = path.replace("{" + name + "}", quote(value, safe="/", errors="surrogatepass"))
    return path


def valid_bodies(seeded: Seeded) -> dict[tuple[str, str], dict[str, Any]]:
    """A body each writing operation accepts, so that spoiling one field at a time tests that field."""
    label = {"c1": True, "c2": True, "c3": False, "comment": "ok", "seconds_spent": 3.0}
    return {
        ("POST", "/api/annotation/studies/"): {
            "name": "another study",
            "description": "d",
            "top_k": 4,
            "per_group": 1,
            "stratify_by": "perturbation",
            "seed": 1,
            "annotators_per_item": 1,
            "claim_timeout_minutes": 30,
            "annotators": ["ann"],
        },
        ("PUT", "/api/annotation/my/studies/{study_id}/items/{token}/label/"): label,
        ("POST", "/api/annotation/my/studies/{study_id}/items/{token}/label/"): label,
        ("POST", "/api/decisions/"): {
            "candidate": seeded.candidate,
            "verdict": "reject",
            "reason": "other",
            "note": "n",
            "revision": 1,
            "acknowledge_flags": False,
        },
        ("POST", "/api/review/decisions/bulk/"): {
            "candidates": [seeded.candidate],
            "verdict": "reject",
            "reason": "other",
            "note": "n",
            "acknowledge_flags": False,
        },
        ("POST", "/api/revisions/"): {
            "candidate": seeded.candidate,
            "instruction": "Do it.",
            "harm_test": "assert True",
            "reason": "r",
            "base_revision": 1,
        },
        ("POST", "/api/releases/"): {"name": "second", "version": "2.0", "description": "d"},
        ("PATCH", "/api/releases/{id}/"): {"description": "d"},
        ("POST", "/api/evaluation/runs/"): {
            "selection": {"kind": "ids", "ids": [EXAMPLE]},
            "agents": ["reference-safe"],
            "repetitions": 1,
            "backend": "local",
            "name": "n",
            "test_timeout": 60,
            "budget_usd": "1.5",
        },
        ("POST", "/api/evaluation/runs/{id}/rerun/"): {"backend": "local"},
        ("POST", "/api/evaluation/candidates/{external_id}/rerun/"): {  # on seeded.candidate: see fill_path
            "agents": ["reference-safe"],
            "repetitions": 1,
            "backend": "local",
        },
    }


# A candidate with reference scripts, so the reference agents have something to run.
EXAMPLE = "bb-319395/kimi-k2.5/gpt-5.5"
LABEL_OPERATIONS = {"/api/annotation/my/studies/{study_id}/items/{token}/label/"}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True)  # a lone surrogate travels as the escape \ud800


def hostile_requests(
    schema: dict[str, Any], seeded: Seeded, *, thorough: bool = True, forbidden: set[tuple[str, str]] | None = None
) -> Iterator[HostileRequest]:
    """Every operation with: NUL, a lone surrogate and a huge number in each path and query parameter;
    `?k=abc`-style wrong types; and for JSON bodies NUL, lone surrogates, huge integers, oversized text
    and wrong types in every field, wrong types for the whole body, and deep and malformed JSON.

    Each operation's unspoiled body comes first (`probe`); the caller adds (method, template) to
    `forbidden` when the role was refused it, and that operation's fields are then not walked one by
    one for this role (the request is read lazily, so the set is consulted after the probe's answer)."""
    forbidden = set() if forbidden is None else forbidden
    bodies = valid_bodies(seeded)
    for template, item in schema["paths"].items():
        for method, op in item.items():
            method = method.upper()
            params = op.get("parameters", [])
            path = fill_path(template, seeded)
            for p in (p for p in params if p["in"] == "path"):
                for bad in (NUL, SURROGATE, "9" * 30, "-1"):
                    yield HostileRequest(
                        method, fill_path(template, seeded, {p["name"]: bad}), f"path {p['name']}={bad!r}"
                    )
            for p in (p for p in params if p["in"] == "query"):
                bads = [NUL, SURROGATE, "9" * 30, "x" * 10_000]
                if p["schema"].get("type") in ("integer", "boolean"):
                    bads += ["abc", "-5", "1.5"]
                for bad in bads:
                    yield HostileRequest(
                        method, path, f"query {p['name']}={bad[:20]!r}", query={p["name"]: bad}, must_refuse=bad == NUL
                    )
            yield HostileRequest(method, path, "unknown query with NUL", query={"x\x00": "y"}, must_refuse=True)
            content = op.get("requestBody", {}).get("content", {})
            if method == "GET" or "multipart/form-data" in content and "application/json" not in content:
                continue  # uploads: hostile files from uploads.py (and tests/hostile/test_limits.py)
            body_schema = content.get("application/json", {}).get("schema")
            base = bodies.get((method, template)) or (example(schema, body_schema) if body_schema else {})
            if (method, template) in bodies:
                yield HostileRequest(
                    method, path, "valid body", body=_json(base), template=template, valid=True, probe=True
                )
            elif thorough and body_schema:
                yield HostileRequest(method, path, "example body", body=_json(base), template=template, probe=True)
            takes_body = body_schema is not None  # operations without a body never read one
            yield HostileRequest(method, path, "deep JSON", body="[" * DEEP + "]" * DEEP, must_refuse=takes_body)
            yield HostileRequest(
                method, path, "deep JSON object", body='{"a":' * DEEP + "1" + "}" * DEEP, must_refuse=takes_body
            )
            yield HostileRequest(method, path, "malformed JSON", body='{"a": ', must_refuse=takes_body)
            yield HostileRequest(method, path, "NaN", body='{"a": NaN}', must_refuse=takes_body)
            yield HostileRequest(method, path, "invalid UTF-8", body=b'{"a": "\xff"}'.decode("latin-1"))
            for wrong in WRONG_TYPES if body_schema else []:
                if wrong != {}:
                    yield HostileRequest(method, path, f"body {wrong!r}", body=_json(wrong), must_refuse=True)
            if not thorough or not body_schema or (method, template) in forbidden:
                continue
            for where, value in list(_paths(base))[1:]:
                name = ".".join(map(str, where))
                bads: list[Any] = [NUL, SURROGATE, {"k\x00": 1}]
                if isinstance(value, str) or value is None:
                    bads += ["x" * 200_000, "", "  "]
                if isinstance(value, int) and not isinstance(value, bool):
                    bads += HUGE_INTS
                bads += [w for w in WRONG_TYPES if type(w) is not type(value)]
                for bad in bads:
                    must = bad is NUL or bad is SURROGATE or (isinstance(bad, int) and abs(bad) >= 2**31)
                    yield HostileRequest(
                        method,
                        path,
                        f"body {name}={str(bad)[:20]!r}",
                        body=_json(_replace(base, where, bad)),
                        must_refuse=must,
                    )


def upload_operations(schema: dict[str, Any]) -> set[tuple[str, str]]:
    """(method, path) of every operation whose body is a multipart upload only."""
    return {
        (method.upper(), template)
        for template, item in schema["paths"].items()
        for method, op in item.items()
        if "multipart/form-data" in (content := op.get("requestBody", {}).get("content", {}))
        and "application/json" not in content
    }
