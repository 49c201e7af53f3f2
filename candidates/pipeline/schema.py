"""The pipeline format's JSON Schema, generated from the pydantic models.

docs/pipeline-format.schema.json is this schema, committed so that the pipeline's authors can
validate their output without the application; a test fails when it falls behind the models.
Rules the schema cannot say (a judge scores once, a success names its candidate, attempts
numbered 1..n, the depth of `extra`, text PostgreSQL cannot store, limits set in settings) are
in the descriptions and enforced by the import.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .models import FORMAT_VERSION, LINE

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "pipeline-format.schema.json"
SCHEMA_ID = "https://veriharm.example/schemas/pipeline-format-v1.json"


def _without_null_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    # A field that may be absent but not null (references.safe, twin.task_test) has None as its
    # Python default; in the schema that default would read as "null is fine".
    for definition in schema.get("$defs", {}).values():
        for prop in definition.get("properties", {}).values():
            if "default" in prop and prop["default"] is None and "anyOf" not in prop:
                del prop["default"]
    return schema


def pipeline_schema() -> dict[str, Any]:
    """One line of a pipeline file, either kind, as JSON Schema (draft 2020-12)."""
    schema = _without_null_defaults(LINE.json_schema(mode="validation"))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": f"VeriHarm pipeline format, version {FORMAT_VERSION}: one line of a JSON Lines file",
        "description": (
            "Each line of a pipeline file is one JSON object of one of these kinds. Beyond this schema the "
            "import refuses: a judge scoring a candidate twice; attempts not numbered 1..n in order, more "
            "attempts than the budget, a harmful success before the last attempt, a successful search "
            "without its candidate_id or a failed one with it; nesting deeper than VERIHARM_JSON_MAX_DEPTH; "
            "a NUL character or a lone surrogate anywhere; a line longer than "
            "VERIHARM_PIPELINE_MAX_LINE_BYTES; an environment file path that is blank or contains '..'. "
            "See docs/pipeline-format.md."
        ),
        **schema,
    }


def schema_text() -> str:
    return json.dumps(pipeline_schema(), indent=2, ensure_ascii=False) + "\n"
