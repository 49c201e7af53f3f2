"""A frozen release as an Inspect AI task: a directory (and its reproducible .tar.gz) holding
`veriharm_inspect.py` (the @task, the environment's setup step, the scorer with TA/HSR/SSR, the
reference solvers), release.json (the release and each item's identity and hashes, which the
samples' metadata carry), release.jsonl (the records the release checksum covers) and one folder
per item: its instruction, both tests, its references, its environment files and setup, and the
compose file that runs it on the project's sandbox image.

The files are a pure function of the release, so the same release always exports the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.template.loader import render_to_string

from ...models import Release
from ..bundle import BundleEntry, BundleMeta, release_entries, release_meta
from ..snapshots import jsonl_bytes, lines_in_id_order
from .common import (
    SANDBOX_IMAGE,
    environment_file_path,
    item_directory,
    item_identity,
    json_bytes,
    sha256_bytes,
    tar_gz,
)

FORMAT = "veriharm-inspect-task"
FORMAT_VERSION = 1
TASK_MODULE = "veriharm_inspect.py"
TASK_SOURCE = Path(__file__).resolve().parent / "shipped" / TASK_MODULE


def _compose(image: str, workdir: str) -> bytes:
    # No network, as the application's sandboxes without a model; the agent's own model calls
    # are Inspect's, made from the host.
    lines = [
        "services:",
        "  default:",
        f"    image: {json_bytes(image).decode().strip()}",
        f"    working_dir: {json_bytes(workdir).decode().strip()}",
        "    network_mode: none",
        "    init: true",
        '    command: ["tail", "-f", "/dev/null"]',
        "",
    ]
    return "\n".join(lines).encode("utf-8")


def _item_files(meta: BundleMeta, entry: BundleEntry) -> tuple[dict[str, bytes], dict[str, Any]]:
    record = entry.record
    environment = record["source_task"].get("environment") or {}
    directory = item_directory(entry)
    files: dict[str, bytes] = {
        "instruction.md": record["instruction"].encode("utf-8"),
        "task_test.py": record["source_task"]["task_test"].encode("utf-8"),
        "harm_test.py": record["harm_test"].encode("utf-8"),
        "compose.yaml": _compose(environment.get("image") or SANDBOX_IMAGE, environment.get("workdir") or "/app"),
    }
    placed = []
    for path in sorted(environment.get("files") or {}):
        files[environment_file_path(path)] = environment["files"][path].encode("utf-8")
        placed.append({"path": path, "export_path": environment_file_path(path)})
    if environment.get("setup"):
        files["environment/setup.sh"] = environment["setup"].encode("utf-8")
    references = {}
    for which in sorted(record.get("references") or {}):
        references[which] = f"references/{which}.sh"
        files[references[which]] = record["references"][which].encode("utf-8")
    item = {
        **item_identity(meta, entry),
        "directory": directory,
        "workdir": environment.get("workdir") or "/app",
        "image": environment.get("image") or SANDBOX_IMAGE,
        "files": placed,
        "setup": "environment/setup.sh" if environment.get("setup") else None,
        "references": references,
    }
    files["item.json"] = json_bytes(item)
    return {f"{directory}/{path}": content for path, content in files.items()}, item


def release_description(meta: BundleMeta) -> dict[str, Any]:
    return {
        "name": meta.name,
        "version": meta.version,
        "description": meta.description,
        "checksum": meta.checksum,
        "frozen_at": meta.frozen_at,
        # What its curator acknowledged freezing it despite (synthetic items, ones humans rejected).
        **({"frozen_despite": meta.frozen_despite} if meta.frozen_despite else {}),
    }


def inspect_files(meta: BundleMeta, entries: Sequence[BundleEntry]) -> dict[str, bytes]:
    """Every file of the export by path inside its root folder, manifest.json included."""
    files: dict[str, bytes] = {"release.jsonl": jsonl_bytes(lines_in_id_order(entries))}
    items = []
    for entry in entries:
        item_files, item = _item_files(meta, entry)
        files.update(item_files)
        items.append({key: value for key, value in item.items() if key not in ("files", "references", "setup")})
    files["release.json"] = json_bytes(
        {"format": FORMAT, "format_version": FORMAT_VERSION, "release": release_description(meta), "items": items}
    )
    files[TASK_MODULE] = TASK_SOURCE.read_bytes()
    files["README.md"] = render_to_string(
        "candidates/interop/inspect_readme.md",
        {"release": meta, "items": items, "module": TASK_MODULE, "root": inspect_root(meta)},
    ).encode("utf-8")
    files["manifest.json"] = json_bytes(
        {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "release": release_description(meta),
            "files": {path: sha256_bytes(content) for path, content in sorted(files.items())},
        }
    )
    return files


def inspect_root(meta: BundleMeta) -> str:
    return f"{meta.name}-{meta.version}-inspect"


def release_inspect_files(release: Release) -> tuple[str, dict[str, bytes]]:
    """(root folder name, files) of a frozen release's Inspect export."""
    meta = release_meta(release)
    return inspect_root(meta), inspect_files(meta, release_entries(release))


def release_inspect_archive(release: Release) -> tuple[str, bytes]:
    """(file name, .tar.gz bytes) of a frozen release's Inspect export."""
    meta = release_meta(release)
    root = inspect_root(meta)
    return f"{root}.tar.gz", tar_gz(root, inspect_files(meta, release_entries(release)), meta.frozen_at)
