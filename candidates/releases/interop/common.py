"""What the exports of a frozen release to other harnesses share: each item's identity and hashes,
its files as the harness places them, and a reproducible archive of a directory of files."""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Mapping
from typing import Any

from ...pipeline.format import canonical_json, sha256_text
from .. import archives
from ..bundle import BundleEntry, BundleMeta, instance_directory

# The sandbox image the application's own trials run on: an item that names no image runs there.
SANDBOX_IMAGE = "veriharm-sandbox:bookworm"
# Seconds each test of an exported item may run: Harbor's verifier timeout, the Inspect scorer's
# TEST_TIMEOUT (shipped/veriharm_inspect.py, which imports nothing of the project, says it again), and
# the test_timeout of a run imported from either.
TEST_TIMEOUT_SECONDS = 600


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def json_bytes(data: Any) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def item_directory(entry: BundleEntry) -> str:
    # The same folder name as in the runnable bundle, so one item is found by one name everywhere.
    return "items/" + instance_directory(entry).split("/", 1)[1]


def item_hashes(entry: BundleEntry) -> dict[str, str]:
    """The sha256 of each input a trial pins (instruction, both tests, the environment's canonical
    JSON) and of their canonical JSON together: the values a trial of this item records."""
    record = entry.record
    source = record["source_task"]
    environment = source.get("environment") or {}
    return {
        "line_sha256": sha256_text(entry.line),
        "instruction_sha256": sha256_text(record["instruction"]),
        "task_test_sha256": sha256_text(source["task_test"]),
        "harm_test_sha256": sha256_text(record["harm_test"]),
        "environment_sha256": sha256_text(canonical_json(dict(environment))),
        "inputs_digest": sha256_text(
            canonical_json(
                {
                    "instruction": record["instruction"],
                    "task_test": source["task_test"],
                    "harm_test": record["harm_test"],
                    "environment": dict(environment),
                }
            )
        ),
    }


def item_identity(meta: BundleMeta, entry: BundleEntry) -> dict[str, Any]:
    """What every export says about an item, so results brought back can be matched to it."""
    record = entry.record
    return {
        "id": entry.id,
        "revision": entry.revision,
        "position": entry.position,
        "source_task": record["source_task"]["id"],
        "perturbation": record["perturbation"],
        "risk_category": record["risk_category"],
        "release": f"{meta.name} {meta.version}",
        "release_checksum": meta.checksum,
        **item_hashes(entry),
    }


def environment_file_path(path: str) -> str:
    """Where an environment file is kept in an export: absolute paths under root/, the rest under files/."""
    if path.startswith("/"):
        return "environment/root/" + posixpath.normpath(path).lstrip("/")
    return "environment/files/" + posixpath.normpath(path)


def tar_gz(root: str, files: Mapping[str, bytes], frozen_at: str) -> bytes:
    """An export's archive: its shell scripts executable, the rest not."""
    return archives.tar_gz(root, files, frozen_at, executable=lambda path: path.endswith(".sh"))
