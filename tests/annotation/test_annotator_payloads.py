"""Everything an annotator can receive is pinned by an allow-list, so a new field fails here until
someone has judged that it keeps them blind.

- API: the response fields of every operation an annotator may call (the permission matrix says
  which), read from the OpenAPI schema, must equal the reviewed snapshot in
  `annotator_payloads.json`; and every key of every real response must be in that snapshot too,
  so a field the schema does not describe is caught as well.
- Pages: the template context of each annotator page (its names, one level into its dataclasses,
  and the models reachable from it), every data-* attribute with its values and every form field
  with its type and values must be in the lists below.

The deny checks of test_blindness.py stay as a second net. After judging a change, rewrite the
snapshot with `VERIHARM_UPDATE_ANNOTATOR_PAYLOADS=1 pytest tests/annotation/test_annotator_payloads.py`
(that run fails once, saying so) and commit its diff like code.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.db.models import Model
from rest_framework.test import APIClient

from tests.annotation.test_blindness import blind_setup  # noqa: F401 (a fixture)
from tests.hostile.payloads import api_schema
from tests.test_permission_matrix import ANN, EXPECTED, site_routes

pytestmark = pytest.mark.django_db

SNAPSHOT = Path(__file__).with_name("annotator_payloads.json")
UPDATE = os.environ.get("VERIHARM_UPDATE_ANNOTATOR_PAYLOADS") == "1"

# What each annotator page's template gets, beyond what Django adds to every page (dataclasses one
# level in, lists of dicts by their keys), and the models reachable from it.
PROGRESS = {
    "progress",
    "progress.done",
    "progress.claimed",
    "progress.open_to_you",
    "progress.skipped",
    "progress.flagged",
}
PAGE_CONTEXT: dict[str, set[str]] = {
    "annotation:home": {"studies", "studies[].study", "studies[].progress"},
    "annotation:item": {
        "item",
        "form",
        "criteria",
        "left_html",
        "right_html",
        "harm_test_html",
        "setup_html",
        "claim_expired",
        "revising",
        "item.study",
        "item.token",
        "item.number",
        "item.instruction",
        "item.source_instruction",
        "item.harm_test",
        "item.harm_summary",
        "item.environment",
        "item.diff",
        "item.own",
        # The aligned diff, the annotator's own previous/next items, their keyboard preference.
        "aligned",
        "aligned.rows",
        "neighbours",
        "neighbours.next",
        "neighbours.previous",
        "single_keys",
    }
    | PROGRESS,
    "annotation:done": {"study"} | PROGRESS,
    "annotation:labels": {"study", "labels"} | PROGRESS,
    "annotation:guidelines": {"back", "criteria", "study"} | PROGRESS,
    # Their own skipped items: number, token, when, their own flag and whether a place is left.
    "annotation:skipped-list": {"study", "skipped"}
    | {f"skipped[].{name}" for name in ("number", "token", "skipped_at", "unclear", "reason", "open")}
    | PROGRESS,
}
# Models a template could walk from (an Assignment is the annotator's own label of an item).
CONTEXT_MODELS = {"Study", "Assignment"}
# Every data-* attribute and its values (a pattern), every form field with its type and values.
DATA_ATTRIBUTES = {
    "data-testid": r"[a-z-]+|study-\d+",
    "data-key": r"c[123]",
    "data-index": r"[0-2]",
    "data-closed": r"1",
    "data-view": r"split|unified",
    "data-change": r"|equal|delete|insert|replace",
    "data-single-keys": r"on|off",
}
FORM_FIELDS = {  # name: (input type, values)
    "csrfmiddlewaretoken": ("hidden", r"[A-Za-z0-9]{64}"),
    "seconds_spent": ("hidden", r"|\d+(\.\d+)?"),
    "then": ("hidden", r"next|labels"),
    "single_key_shortcuts": ("hidden", r"on|off"),
    "c1": ("radio", r"yes|no"),
    "c2": ("radio", r"yes|no"),
    "c3": ("radio", r"yes|no"),
    "comment": ("textarea", r""),
}
DJANGO_CONTEXT = {
    "view",
    "csrf_token",
    "request",
    "user",
    "perms",
    "messages",
    "DEFAULT_MESSAGE_LEVELS",
    "can",
    "True",
    "False",
    "None",
    "block",
    "forloop",
    "study_id",
    "token",
    "widget",
}


# --------------------------------------------------------------------------- the schema


def annotator_operations() -> list[tuple[str, str]]:
    """(METHOD, schema path) of every API operation the permission matrix lets annotators call."""
    allowed = {(name, method) for name, method, roles in EXPECTED if ANN in roles}
    return sorted(
        (method, "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route.pattern))
        for route in site_routes()
        if route.is_api
        for method in route.methods
        if (route.name, method) in allowed
    )


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> list[dict[str, Any]]:
    """The alternatives a schema node stands for, references followed."""
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    for key in ("oneOf", "anyOf", "allOf"):
        if key in node:
            return [alt for part in node[key] for alt in _resolve(schema, part)]
    return [node]


def schema_fields(schema: dict[str, Any], node: dict[str, Any], path: str = "") -> set[str]:
    """Every field path a response may hold: `item.diff.left[].kind`; `files{}` is a free-keyed map.
    A free-form object (no properties) is `path{?}`: anything may be in it, so it must be judged."""
    found: set[str] = set()
    for alt in _resolve(schema, node):
        if alt.get("type") == "array" or "items" in alt:
            found |= schema_fields(schema, alt.get("items", {}), f"{path}[]")
        elif alt.get("type") == "object" or "properties" in alt or "additionalProperties" in alt:
            for name, inner in alt.get("properties", {}).items():
                here = f"{path}.{name}" if path else name
                found.add(here)
                found |= schema_fields(schema, inner, here)
            extra = alt.get("additionalProperties")
            if isinstance(extra, dict):
                found.add(f"{path}{{}}")
                found |= schema_fields(schema, extra, f"{path}{{}}")
            elif not alt.get("properties"):
                found.add(f"{path}{{?}}")
    return found


def payload_fields() -> dict[str, list[str]]:
    schema = api_schema()
    out: dict[str, list[str]] = {}
    for method, path in annotator_operations():
        if path in ("/api/schema/", "/api/docs/"):
            continue  # the API's own description, field names only
        operation = schema["paths"][path][method.lower()]
        fields: set[str] = set()
        for code, response in operation.get("responses", {}).items():
            content = response.get("content", {}).get("application/json")
            if code.startswith("2") and content:
                fields |= schema_fields(schema, content["schema"])
        out[f"{method} {path}"] = sorted(fields)
    return out


def test_the_annotator_api_fields_are_the_reviewed_ones():
    current = payload_fields()
    assert len(current) >= 7, "the annotator operations were not found in the schema"
    reviewed = json.loads(SNAPSHOT.read_text())
    if UPDATE and current != reviewed:
        SNAPSHOT.write_text(json.dumps(current, indent=2) + "\n")
        pytest.fail(f"{SNAPSHOT.name} rewritten: review its diff before committing it")
    problems = []
    for operation in sorted(set(current) | set(reviewed)):
        if operation not in reviewed:
            problems.append(f"{operation}: a new annotator operation, not reviewed: {current[operation]}")
        elif operation not in current:
            problems.append(f"{operation}: reviewed, but annotators can no longer call it")
        else:
            new = sorted(set(current[operation]) - set(reviewed[operation]))
            gone = sorted(set(reviewed[operation]) - set(current[operation]))
            if new:
                problems.append(f"{operation}: fields not reviewed for blindness: {new}")
            if gone:
                problems.append(f"{operation}: reviewed fields no longer sent: {gone}")
    assert problems == [], (
        "The annotator-facing API changed; judge each field (no group, Q, rank, judges, provenance, candidate "
        "ids or others' labels), then refresh the snapshot (see this module's docstring):\n" + "\n".join(problems)
    )


def test_no_reviewed_field_is_free_form():
    """A free-form object could carry anything; every annotator field is named."""
    reviewed = json.loads(SNAPSHOT.read_text())
    assert not [(op, f) for op, fields in reviewed.items() for f in fields if "{?}" in f]


# --------------------------------------------------------------------------- real responses


def response_fields(value: Any, allowed: set[str], path: str = "") -> list[str]:
    """Paths in a real response that the reviewed fields do not name."""
    unknown = []
    if isinstance(value, dict):
        free = f"{path}{{}}" in allowed
        for key, inner in value.items():
            here = f"{path}{{}}" if free else (f"{path}.{key}" if path else key)
            if here not in allowed:
                unknown.append(here)
            else:
                unknown += response_fields(inner, allowed, here)
    elif isinstance(value, list):
        for inner in value:
            unknown += response_fields(inner, allowed, f"{path}[]")
    return unknown


def test_every_real_annotator_response_holds_only_reviewed_fields(blind_setup):  # noqa: F811
    study, me, _ = blind_setup
    reviewed = {op: set(fields) for op, fields in json.loads(SNAPSHOT.read_text()).items()}
    client = APIClient()
    client.force_login(me)
    base = "/api/annotation/my/studies/"
    seen: dict[str, int] = {}
    problems: list[str] = []

    def call(method: str, operation_path: str, url: str, **kwargs: Any) -> Any:
        response = client.generic(method, url, **kwargs)
        assert response.status_code == 200, (url, response.content[:300])
        body = response.json()
        operation = f"{method} {operation_path}"
        seen[operation] = seen.get(operation, 0) + 1
        problems.extend(f"{operation}: {path}" for path in response_fields(body, reviewed[operation]))
        return body

    studies = call("GET", base, base)
    assert studies and studies[0]["id"] == study.pk
    item = call("POST", base + "{study_id}/next/", f"{base}{study.pk}/next/")["item"]
    token = item["token"]
    label = json.dumps({"c1": True, "c2": False, "c3": True, "comment": "mine", "seconds_spent": 3})
    for method in ("PUT", "POST"):
        call(
            method,
            base + "{study_id}/items/{token}/label/",
            f"{base}{study.pk}/items/{token}/label/",
            data=label,
            content_type="application/json",
        )
    call("GET", base + "{study_id}/items/{token}/", f"{base}{study.pk}/items/{token}/")
    call("GET", base + "{study_id}/labels/", f"{base}{study.pk}/labels/")
    call("GET", base + "{study_id}/progress/", f"{base}{study.pk}/progress/")
    following = call("POST", base + "{study_id}/next/", f"{base}{study.pk}/next/")["item"]["token"]
    call("POST", base + "{study_id}/items/{token}/skip/", f"{base}{study.pk}/items/{following}/skip/")
    assert call("GET", base + "{study_id}/skipped/", f"{base}{study.pk}/skipped/")[0]["token"] == following
    call("POST", base + "{study_id}/items/{token}/return/", f"{base}{study.pk}/items/{following}/return/")
    assert set(seen) == set(reviewed), "every reviewed operation was called"
    assert problems == [], "fields in real responses that the reviewed snapshot does not name:\n" + "\n".join(problems)


# --------------------------------------------------------------------------- pages


class _Markup(HTMLParser):
    """Every data-* attribute and every form field of a page, with their values."""

    def __init__(self) -> None:
        super().__init__()
        self.data_attributes: list[tuple[str, str]] = []
        self.fields: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        self.data_attributes += [(n, v) for n, v in attributes.items() if n.startswith("data-")]
        if tag in ("input", "select", "textarea") and "name" in attributes:
            kind = attributes.get("type", "text") if tag == "input" else tag
            self.fields.append((attributes["name"], kind, attributes.get("value", "")))


def context_paths(context: dict[str, Any]) -> set[str]:
    paths: set[str] = set()
    for name, value in context.items():
        if name in DJANGO_CONTEXT:
            continue
        paths.add(name)
        for row, here in [(r, f"{name}[]") for r in value] if isinstance(value, list) else [(value, name)]:
            if isinstance(row, dict):
                paths |= {f"{here}.{key}" for key in row}
            elif dataclasses.is_dataclass(row) and not isinstance(row, type):
                paths |= {f"{here}.{f.name}" for f in dataclasses.fields(row)}
    return paths


def context_models(value: Any, depth: int = 0) -> set[str]:
    """Names of the model classes reachable from a context value through dataclasses, dicts and lists."""
    if depth > 3:
        return set()
    if isinstance(value, Model):
        return {type(value).__name__}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {m for f in dataclasses.fields(value) for m in context_models(getattr(value, f.name), depth + 1)}
    if isinstance(value, dict):
        return {m for inner in value.values() for m in context_models(inner, depth + 1)}
    if isinstance(value, (list, tuple)):
        return {m for inner in value for m in context_models(inner, depth + 1)}
    return set()


def page_problems(url: str, name: str, response: Any) -> list[str]:
    problems = []
    names = response.context.keys()  # a ContextList: iterating it gives contexts, not names
    context = {k: response.context[k] for k in names if k not in DJANGO_CONTEXT}
    extra = context_paths(context) - PAGE_CONTEXT[name]
    if extra:
        problems.append(f"{url}: context not reviewed for blindness: {sorted(extra)}")
    models = {m for value in context.values() for m in context_models(value)} - CONTEXT_MODELS
    if models:
        problems.append(f"{url}: models in the context not reviewed for blindness: {sorted(models)}")
    markup = _Markup()
    markup.feed(response.content.decode())
    for attribute, value in markup.data_attributes:
        pattern = DATA_ATTRIBUTES.get(attribute)
        if pattern is None or not re.fullmatch(pattern, value):
            problems.append(f"{url}: {attribute}={value!r} not reviewed")
    for field, kind, value in markup.fields:
        reviewed = FORM_FIELDS.get(field)
        if reviewed is None or reviewed[0] != kind or not re.fullmatch(reviewed[1], value):
            problems.append(f"{url}: form field {field!r} ({kind}, value {value!r}) not reviewed")
    return problems


def test_annotator_pages_hold_only_reviewed_context_attributes_and_fields(blind_setup, client):  # noqa: F811
    study, me, _ = blind_setup
    client.force_login(me)
    claimed = client.post(f"/annotation/s/{study.pk}/next/", follow=True)
    token = claimed.redirect_chain[-1][0].rstrip("/").split("/")[-1]
    saved = client.post(
        f"/annotation/s/{study.pk}/i/{token}/", {"c1": "yes", "c2": "no", "c3": "yes", "then": "labels"}
    )
    assert saved.status_code == 302
    pages = {
        "annotation:home": "/annotation/",
        "annotation:item": f"/annotation/s/{study.pk}/i/{token}/",
        "annotation:done": f"/annotation/s/{study.pk}/done/",
        "annotation:labels": f"/annotation/s/{study.pk}/labels/",
        "annotation:guidelines": f"/annotation/s/{study.pk}/guidelines/",
        "annotation:skipped-list": f"/annotation/s/{study.pk}/set-aside/",
    }
    annotator_pages = {
        name for name, method, roles in EXPECTED if ANN in roles and method == "GET" and name.startswith("annotation:")
    }
    assert set(pages) == annotator_pages, "a new annotator page: add it here and to PAGE_CONTEXT"
    problems: list[str] = []
    for name, url in pages.items():
        response = client.get(url)
        assert response.status_code == 200, url
        problems += page_problems(url, name, response)
    assert problems == [], "\n".join(problems)
