"""A bundle's manifest.json as a typed model: what `bundle.bundle_files` writes, each field strict
and bounded (the release's name and version by their patterns, positions and revisions by their
columns, every sha256 as 64 hex digits), so a manifest spoiled in any field is refused naming it."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

SHA256 = r"^[0-9a-f]{64}$"
MAX_ENTRIES = 10_000  # instances and files: a bundle holds at most MAX_MEMBERS files
Count = Annotated[int, Field(ge=1, le=2**31 - 1)]  # positions and revisions: integer columns


def _moment(value: str) -> str:
    datetime.fromisoformat(value)  # a ValueError is the field's error
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)


class ManifestRelease(_Strict):
    name: Annotated[str, Field(max_length=100)]
    version: Annotated[str, Field(max_length=50)]
    description: Annotated[str, Field(max_length=100_000)] = ""
    checksum: Annotated[str, Field(pattern=SHA256)]
    frozen_at: Annotated[str, Field(max_length=50), AfterValidator(_moment)]
    previous: Annotated[str, Field(max_length=200)] | None = None
    instances: Annotated[int, Field(ge=0, le=MAX_ENTRIES)]
    frozen_despite: Annotated[str, Field(max_length=1_000_000)] = ""


class ManifestInstance(_Strict):
    id: Annotated[str, Field(max_length=200)]
    revision: Count
    position: Count
    directory: Annotated[str, Field(max_length=300)]


class Manifest(_Strict):
    format: str
    format_version: int
    pipeline_format_version: Annotated[int, Field(ge=1, le=1000)]
    release: ManifestRelease
    changelog: dict[str, Any]
    instances: Annotated[list[ManifestInstance], Field(max_length=MAX_ENTRIES)]
    files: Annotated[
        dict[Annotated[str, Field(max_length=1000)], Annotated[str, Field(pattern=SHA256)]],
        Field(max_length=MAX_ENTRIES),
    ]


class ManifestHead(BaseModel):
    """The format and its version alone, read first: another file's manifest is named as such."""

    model_config = ConfigDict(extra="ignore")
    format: Any = None
    format_version: Any = None


def manifest_problems(error: ValidationError, file: str) -> list[str]:
    """`<file>: <field>: <what is wrong>` per problem, never echoing the value."""
    found = []
    for detail in error.errors(include_url=False, include_input=False)[:20]:
        field = ".".join(str(part) for part in detail["loc"])
        found.append(f"{file}: {field}: {detail['msg']}" if field else f"{file}: {detail['msg']}")
    return found
