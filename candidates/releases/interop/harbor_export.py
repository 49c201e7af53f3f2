"""A frozen release as a Harbor dataset: one task directory per item and a dataset manifest.

Each task holds `task.toml` (timeouts, resources, Harbor's default network, the item's identity
and hashes as metadata), `instruction.md` (t~), `environment/Dockerfile` on the project's sandbox
image with the item's files and setup, `tests/` (both hidden tests and `test.sh`, which Harbor
copies in only when the agent is done) and `solution/solve.sh` (the safe reference, for Harbor's
oracle agent). `test.sh` runs each test in a clean environment on the final state restored from a
snapshot and, when both ran, writes their results as Harbor's reward, `{"task": r_task, "harm": r_harm}`.

The network is Harbor's default, "public". The tasks need none (the image is built from the
sandbox image, the setup runs at build time, the tests run offline), but Harbor's agents install
themselves and call their model from inside the sandbox, and Harbor's docker environment enforces
any other mode ("no-network", "allowlist") only through its egress-control sidecar, whose images
come from Docker Hub: where that cannot start, `harbor run -e docker` refuses the task outright.

The verifier shares the agent's sandbox: Harbor's copy into a separate verifier container clears
group and other write bits, so a harm test about file modes (one of the shared examples) would
not see the state the agent left; `task.toml` says so beside the one lint rule it turns off.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.template.loader import render_to_string

from ...models import Release
from ..bundle import BundleEntry, BundleMeta, release_entries, release_meta
from ..snapshots import jsonl_bytes, lines_in_id_order
from .common import (
    SANDBOX_IMAGE,
    TEST_TIMEOUT_SECONDS,
    environment_file_path,
    item_identity,
    json_bytes,
    sha256_bytes,
    tar_gz,
)

FORMAT = "veriharm-harbor-dataset"
ORG = "veriharm"
TEST_SCRIPT = Path(__file__).resolve().parent / "shipped" / "harbor_test.sh"
AGENT_TIMEOUT = 600.0
TEST_TIMEOUT = float(TEST_TIMEOUT_SECONDS)


def _toml_string(value: str) -> str:
    # A JSON string is a TOML basic string for every character JSON escapes the same way.
    return json.dumps(value, ensure_ascii=False)


def task_name(meta: BundleMeta, entry: BundleEntry) -> str:
    return f"{ORG}/{meta.name}-{entry.position:04d}"


def task_folder(entry: BundleEntry) -> str:
    return f"{entry.position:04d}"


def _task_toml(meta: BundleMeta, entry: BundleEntry) -> bytes:
    identity = item_identity(meta, entry)
    metadata = "\n".join(f"{key} = {_toml_string(str(value))}" for key, value in sorted(identity.items()))
    record = entry.record
    lines = [
        'schema_version = "1.4"',
        "",
        "[task]",
        f"name = {_toml_string(task_name(meta, entry))}",
        f"version = {_toml_string(meta.version)}",
        f"description = {_toml_string(record['risk_category'] + ' / ' + record['perturbation'] + ': ' + entry.id)}",
        "",
        "[metadata]",
        metadata,
        "",
        "[metadata.harbor.lint]",
        "# The verifier shares the agent's sandbox on purpose: a separate verifier container gets the",
        "# final state through Harbor's artifact copy, which clears group and other write bits, and a",
        "# harm test may be about exactly those (a world-writable script).",
        'ignore = ["shared-verifier"]',
        "",
        "[verifier]",
        f"timeout_sec = {TEST_TIMEOUT}",
        'environment_mode = "shared"',
        "",
        "[agent]",
        f"timeout_sec = {AGENT_TIMEOUT}",
        "",
        "[environment]",
        "build_timeout_sec = 600.0",
        "cpus = 1",
        "memory_mb = 2048",
        # Public, Harbor's default: its agents call their model from inside the sandbox, and its
        # docker environment refuses "no-network" where its egress-control sidecar cannot start.
        'network_mode = "public"',
        "",
    ]
    return "\n".join(lines).encode("utf-8")


def _dockerfile(environment: dict[str, Any], has_files: bool, has_root: bool) -> bytes:
    workdir = environment.get("workdir") or "/app"
    lines = [f"FROM {environment.get('image') or SANDBOX_IMAGE}", f"WORKDIR {workdir}"]
    if has_root:
        lines.append("COPY root/ /")
    if has_files:
        lines.append(f"COPY files/ {workdir}/")
    if environment.get("setup"):
        lines += [
            "COPY setup.sh /tmp/veriharm-setup.sh",
            "RUN bash /tmp/veriharm-setup.sh && rm /tmp/veriharm-setup.sh",
        ]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _task_files(meta: BundleMeta, entry: BundleEntry) -> dict[str, bytes]:
    record = entry.record
    environment = record["source_task"].get("environment") or {}
    files: dict[str, bytes] = {
        "task.toml": _task_toml(meta, entry),
        "instruction.md": record["instruction"].encode("utf-8"),
        "tests/test.sh": TEST_SCRIPT.read_bytes(),
        "tests/task_test.py": record["source_task"]["task_test"].encode("utf-8"),
        "tests/harm_test.py": record["harm_test"].encode("utf-8"),
    }
    for path in sorted(environment.get("files") or {}):
        files[environment_file_path(path)] = environment["files"][path].encode("utf-8")
    if environment.get("setup"):
        files["environment/setup.sh"] = environment["setup"].encode("utf-8")
    has_files = any(p.startswith("environment/files/") for p in files)
    has_root = any(p.startswith("environment/root/") for p in files)
    files["environment/Dockerfile"] = _dockerfile(environment, has_files, has_root)
    safe = (record.get("references") or {}).get("safe")
    if safe:
        files["solution/solve.sh"] = ("#!/bin/bash\n" + safe).encode("utf-8")
    return files


def harbor_digest(files: dict[str, bytes]) -> str:
    """Harbor's content hash of a task directory (its Packager: sha256 over "path\\0sha256\\n" of the
    task's files in path order), so the manifest pins each task as `harbor sync` would."""
    outer = hashlib.sha256()
    for path in sorted(files):
        outer.update(f"{path}\0{sha256_bytes(files[path])}\n".encode())
    return "sha256:" + outer.hexdigest()


def harbor_files(meta: BundleMeta, entries: Sequence[BundleEntry]) -> dict[str, bytes]:
    """Every file of the dataset by path inside its root folder."""
    files: dict[str, bytes] = {"release.jsonl": jsonl_bytes(lines_in_id_order(entries))}
    refs = []
    for entry in entries:
        task_files = _task_files(meta, entry)
        files.update({f"{task_folder(entry)}/{path}": content for path, content in task_files.items()})
        refs.append((task_name(meta, entry), harbor_digest(task_files)))
    manifest = [
        f"# {meta.name} {meta.version}: a VeriHarm release as a Harbor dataset (release checksum {meta.checksum})",
        "",
        "[dataset]",
        f"name = {_toml_string(f'{ORG}/{meta.name}')}",
        f"version = {_toml_string(meta.version)}",
        f"description = {_toml_string(meta.description)}",
        "",
    ]
    for name, digest in refs:
        manifest += ["[[tasks]]", f"name = {_toml_string(name)}", f"digest = {_toml_string(digest)}", ""]
    files["dataset.toml"] = "\n".join(manifest).encode("utf-8")
    files["veriharm.json"] = json_bytes(
        {
            "format": FORMAT,
            "release": {
                "name": meta.name,
                "version": meta.version,
                "checksum": meta.checksum,
                **({"frozen_despite": meta.frozen_despite} if meta.frozen_despite else {}),
            },
            "tasks": [{"folder": task_folder(e), **item_identity(meta, e)} for e in entries],
        }
    )
    files["README.md"] = render_to_string(
        "candidates/interop/harbor_readme.md", {"release": meta, "root": harbor_root(meta), "count": len(entries)}
    ).encode("utf-8")
    return files


def harbor_root(meta: BundleMeta) -> str:
    return f"{meta.name}-{meta.version}-harbor"


def release_harbor_files(release: Release) -> tuple[str, dict[str, bytes]]:
    meta = release_meta(release)
    return harbor_root(meta), harbor_files(meta, release_entries(release))


def release_harbor_archive(release: Release) -> tuple[str, bytes]:
    meta = release_meta(release)
    root = harbor_root(meta)
    return f"{root}.tar.gz", tar_gz(root, harbor_files(meta, release_entries(release)), meta.frozen_at)


def release_harbor_tasks(release: Release) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """Each task's Harbor name -> (item id, Harbor's content digest, the item's identity and hashes):
    what a Harbor job of this release's export must show."""
    meta = release_meta(release)
    return {
        task_name(meta, entry): (entry.id, harbor_digest(_task_files(meta, entry)), item_identity(meta, entry))
        for entry in release_entries(release)
    }
