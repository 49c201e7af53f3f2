"""Every operation of the API documents what it answers: no response or field in the OpenAPI schema
is an object without properties, except the free-form ones listed here with the reason."""

from __future__ import annotations

from typing import Any

from drf_spectacular.generators import SchemaGenerator

FREE_FORM = {
    # The sampler's own report, kept as JSON on the study and given back as it was written.
    "components/schemas/ExportedStudy/properties/sampling",
    # The pipeline format's JSON Schema, a document of its own (docs/pipeline-format.schema.json).
    "paths//api/pipeline-format/schema//get/responses/200/content/application/schema+json/schema",
    # A selection is one of several shapes told apart by "kind" (docs/evaluation.md).
    "components/schemas/LaunchRequest/properties/selection",
    # The rows of items.csv and labels.csv, whose measure columns follow the guidelines.
    "components/schemas/StudyExport/properties/items/items",
    "components/schemas/StudyExport/properties/labels/items",
    # A proposer's or judge's configuration: its fields are those of its kind (evaluation.generation.makers).
    "components/schemas/GenerationLaunchRequest/properties/proposers/items",
    "components/schemas/GenerationLaunchRequest/properties/judges/items",
}


def _untyped(node: Any, path: list[str]) -> list[str]:
    found = []
    if isinstance(node, dict):
        if (
            node.get("type") == "object"
            and "properties" not in node
            and "$ref" not in node
            and node.get("additionalProperties") in ({}, True, None)
        ):
            found.append("/".join(path))
        for key, value in node.items():
            found += _untyped(value, [*path, str(key)])
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _untyped(value, [*path, str(index)])
    return found


def test_no_response_or_field_is_an_untyped_object():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    assert set(_untyped(schema, [])) == FREE_FORM


def test_the_check_finds_an_untyped_object():
    assert _untyped(
        {
            "paths": {
                "/x/": {
                    "get": {
                        "responses": {
                            "200": {
                                "content": {
                                    "application/json": {"schema": {"type": "object", "additionalProperties": {}}}
                                }
                            }
                        }
                    }
                }
            }
        },
        [],
    ) == ["paths//x//get/responses/200/content/application/json/schema"]
