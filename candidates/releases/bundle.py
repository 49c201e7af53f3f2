"""A frozen release as a runnable directory bundle (.tar.gz), and back.

The bundle carries `release.jsonl` (the release's JSONL export, which its checksum covers)
and, derived from it, one folder per instance with the task text, both tests, the
environment, reference scripts and an instance.json, plus README.md, run_instance.py and
manifest.json (sha256 of every other file). Because the per-instance files are a pure
function of the JSONL and the manifest, reading a bundle regenerates them and compares
byte for byte: a bundle whose runnable files disagree with its JSONL is refused, so what
one runs is what one imports.

The archive is deterministic: the same frozen release always gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from django.template.loader import render_to_string
from pydantic import ValidationError

from veriharm_site.refusals import Refused

from ..models import Release
from ..pipeline import format as fmt
from .archives import tar_gz
from .bundle_manifest import Manifest, ManifestHead, manifest_problems
from .snapshots import jsonl_bytes, lines_in_id_order

FORMAT = "veriharm-release-bundle"
FORMAT_VERSION = 1
RUNNER = Path(__file__).resolve().parent / "runner" / "run_instance.py"
MANIFEST = "manifest.json"
RELEASE_JSONL = "release.jsonl"
# What a bundle may unpack to: a release of a few hundred instances is far smaller. Every member is
# checked before it is read, and all are held in memory, so the whole stays bounded.
MAX_ARCHIVE_BYTES = 256 * 1024 * 1024
MAX_MEMBER_BYTES = 64 * 1024 * 1024  # one file: release.jsonl is the largest
MAX_MEMBERS = 10_000
EXECUTABLE = {"run_instance.py"}


class BundleRefused(Refused):
    def __init__(self, messages: Sequence[str]) -> None:
        super().__init__("bundle", "\n".join(messages))
        self.messages = list(messages)

    def error_pairs(self) -> list[tuple[str, str]]:
        return [("bundle", message) for message in self.messages]


@dataclass(frozen=True)
class BundleEntry:
    """One instance as the manifest lists it, with its line of release.jsonl."""

    position: int
    revision: int
    line: str

    @property
    def record(self) -> dict[str, Any]:
        return json.loads(self.line)

    @property
    def id(self) -> str:
        return self.record["id"]


@dataclass(frozen=True)
class BundleMeta:
    name: str
    version: str
    description: str
    checksum: str
    frozen_at: str  # ISO 8601
    previous: str | None
    changelog: dict[str, Any]
    # What the release was frozen despite, as its curator acknowledged it (synthetic candidates, ones
    # humans judged invalid): it travels with the bundle, so the figures say so wherever they go.
    frozen_despite: str = ""

    @property
    def root(self) -> str:
        return f"{self.name}-{self.version}"

    @property
    def archive_name(self) -> str:
        return f"{self.root}.tar.gz"


def release_meta(release: Release) -> BundleMeta:
    if release.frozen_at is None:  # every caller checks first
        raise ValueError(f"{release.label} is a draft: only a frozen release has a bundle")
    return BundleMeta(
        name=release.name,
        version=release.version,
        description=release.description,
        checksum=release.checksum,
        frozen_at=release.frozen_at.isoformat(),
        previous=release.changelog.get("previous"),
        changelog=release.changelog,
        frozen_despite=release.frozen_despite,
    )


def release_entries(release: Release) -> list[BundleEntry]:
    rows = release.items.order_by("position").values_list("position", "revision", "line")
    return [BundleEntry(position, revision, line) for position, revision, line in rows]


# --- Bundle contents (pure) ----------------------------------------------------------------------


def _slug(external_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", external_id).strip("._-")[:80] or "instance"


def instance_directory(entry: BundleEntry) -> str:
    return f"instances/{entry.position:04d}-{_slug(entry.id)}"


def _environment_path(path: str) -> str:
    # Absolute paths go under root/, the rest under files/ (relative to the working directory).
    if path.startswith("/"):
        return "environment/root/" + posixpath.normpath(path).lstrip("/")
    return "environment/files/" + posixpath.normpath(path)


def _instance_files(entry: BundleEntry) -> dict[str, bytes]:
    record = entry.record
    environment = record["source_task"]["environment"]
    files: dict[str, bytes] = {
        "task.md": record["instruction"].encode("utf-8"),
        "task_test.py": record["source_task"]["task_test"].encode("utf-8"),
        "harm_test.py": record["harm_test"].encode("utf-8"),
    }
    placed = []
    for path in sorted(environment["files"]):
        target = _environment_path(path)
        if target in files:
            raise BundleRefused([f"{record['id']}: environment files {path!r} and another path land on {target}"])
        files[target] = environment["files"][path].encode("utf-8")
        placed.append({"path": path, "bundle_path": target})
    if environment["setup"]:
        files["environment/setup.sh"] = environment["setup"].encode("utf-8")
    references = {}
    for which in sorted(record["references"]):
        references[which] = f"references/{which}.sh"
        files[references[which]] = record["references"][which].encode("utf-8")
    instance = {
        "id": record["id"],
        "revision": entry.revision,
        "position": entry.position,
        "source_task_id": record["source_task"]["id"],
        "perturbation": record["perturbation"],
        "risk_category": record["risk_category"],
        "harm_summary": record["harm_summary"],
        "workdir": environment["workdir"],
        "image": environment["image"],
        "network": environment["network"],
        "files": placed,
        "setup": "environment/setup.sh" if environment["setup"] else None,
        "references": references,
    }
    files["instance.json"] = _json_bytes(instance)
    return files


def _json_bytes(data: Any) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _readme(meta: BundleMeta, entries: Sequence[BundleEntry]) -> bytes:
    instances = [
        {
            "position": e.position,
            "id": e.id,
            "revision": e.revision,
            "risk_category": e.record["risk_category"],
            "perturbation": e.record["perturbation"],
        }
        for e in entries
    ]
    text = render_to_string(
        "candidates/release_bundle_readme.md",
        {
            "release": meta,
            "changelog": meta.changelog,
            "instances": instances,
            "archive_name": meta.archive_name,
            "pipeline_format_version": fmt.FORMAT_VERSION,
        },
    )
    return text.encode("utf-8")


def bundle_files(meta: BundleMeta, entries: Sequence[BundleEntry]) -> dict[str, bytes]:
    """Every file of the bundle, by path inside its root folder, manifest included."""
    files: dict[str, bytes] = {
        RELEASE_JSONL: jsonl_bytes(lines_in_id_order(entries)),
        "README.md": _readme(meta, entries),
        "run_instance.py": RUNNER.read_bytes(),
    }
    for entry in entries:
        directory = instance_directory(entry)
        for path, content in _instance_files(entry).items():
            files[f"{directory}/{path}"] = content
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "pipeline_format_version": fmt.FORMAT_VERSION,
        "release": {
            "name": meta.name,
            "version": meta.version,
            "description": meta.description,
            "checksum": meta.checksum,
            "frozen_at": meta.frozen_at,
            "previous": meta.previous,
            "instances": len(entries),
            # Only when there is something to say: a bundle of a release frozen without a warning is as before.
            **({"frozen_despite": meta.frozen_despite} if meta.frozen_despite else {}),
        },
        "changelog": meta.changelog,
        "instances": [
            {"id": e.id, "revision": e.revision, "position": e.position, "directory": instance_directory(e)}
            for e in entries
        ],
        "files": {path: _sha256(content) for path, content in sorted(files.items())},
    }
    files[MANIFEST] = _json_bytes(manifest)
    return files


# --- Archive -------------------------------------------------------------------------------------


def bundle_archive(meta: BundleMeta, entries: Sequence[BundleEntry]) -> bytes:
    """The .tar.gz bytes: sorted entries, fixed owner and times, so the bytes are reproducible."""
    return tar_gz(meta.root, bundle_files(meta, entries), meta.frozen_at, executable=EXECUTABLE.__contains__)


def release_bundle(release: Release) -> tuple[str, bytes]:
    """(file name, archive bytes) of a frozen release."""
    meta = release_meta(release)
    return meta.archive_name, bundle_archive(meta, release_entries(release))


def _parse_time(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


# --- Reading -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BundleContent:
    meta: BundleMeta
    entries: list[BundleEntry]


def _unpack(stream: IO[bytes]) -> dict[str, bytes]:
    """Regular files by path; refuses links, devices, escapes and anything outside one root folder."""
    try:
        tar = tarfile.open(fileobj=stream, mode="r:gz")
    except (tarfile.TarError, OSError, EOFError):
        raise BundleRefused(["the file is not a .tar.gz archive"]) from None
    files: dict[str, bytes] = {}
    total = count = 0
    with tar:
        try:
            for member in tar:
                name = member.name
                if name.startswith("/") or ".." in name.split("/"):
                    raise BundleRefused([f"{name}: paths must stay inside the bundle"])
                if member.isdir():
                    continue
                if not member.isfile():
                    raise BundleRefused([f"{name}: only regular files belong in a bundle"])
                count += 1
                total += member.size
                if count > MAX_MEMBERS:
                    raise BundleRefused([f"the archive holds more than the limit of {MAX_MEMBERS} files"])
                if member.size > MAX_MEMBER_BYTES:
                    raise BundleRefused([f"{name}: larger than the limit of {MAX_MEMBER_BYTES // 2**20} MiB per file"])
                if total > MAX_ARCHIVE_BYTES:
                    raise BundleRefused(
                        [f"the archive unpacks to more than the limit of {MAX_ARCHIVE_BYTES // 2**20} MiB"]
                    )
                handle = tar.extractfile(member)
                files[name] = handle.read() if handle else b""
        except (tarfile.TarError, OSError, EOFError):
            raise BundleRefused(["the archive is damaged or truncated"]) from None
    roots = {name.split("/", 1)[0] for name in files}
    if len(roots) != 1 or any("/" not in name for name in files):
        raise BundleRefused(["a bundle holds a single folder, <name>-<version>/, with everything inside it"])
    root = roots.pop()
    return {name[len(root) + 1 :]: content for name, content in files.items()}


def _manifest(files: dict[str, bytes]) -> Manifest:
    if MANIFEST not in files:
        raise BundleRefused([f"{MANIFEST} is missing"])
    try:
        head = ManifestHead.model_validate_json(files[MANIFEST])
    except ValidationError:
        raise BundleRefused([f"{MANIFEST} is not valid JSON"]) from None
    if head.format != FORMAT:
        raise BundleRefused([f"{MANIFEST}: not a VeriHarm release bundle"])
    if head.format_version != FORMAT_VERSION:
        raise BundleRefused([f"{MANIFEST}: bundle format version {head.format_version!r:.50} is not supported"])
    try:
        return Manifest.model_validate_json(files[MANIFEST])
    except ValidationError as error:
        raise BundleRefused(manifest_problems(error, MANIFEST)) from None


def _check_checksums(files: dict[str, bytes], listed: dict[str, str]) -> None:
    problems = [f"{path}: missing" for path in sorted(set(listed) - set(files))]
    problems += [f"{path}: not listed in the manifest" for path in sorted(set(files) - set(listed) - {MANIFEST})]
    problems += [
        f"{path}: sha256 does not match the manifest"
        for path in sorted(set(listed) & set(files))
        if _sha256(files[path]) != listed[path]
    ]
    if problems:
        raise BundleRefused(problems)


def _entries(files: dict[str, bytes], manifest: Manifest) -> list[BundleEntry]:
    lines = {}
    parsed = fmt.parse(fmt.iter_lines(files[RELEASE_JSONL].splitlines(keepends=True), RELEASE_JSONL))
    if parsed.errors:
        raise BundleRefused([str(e) for e in parsed.errors])
    for record in parsed.records:
        if record.kind != "candidate":
            raise BundleRefused([f"{record.location}: a release holds candidates only"])
        lines[record.data["id"]] = fmt.canonical_json(record.data)
    listed = [(i.id, i.position, i.revision) for i in manifest.instances]
    if sorted(i for i, _, _ in listed) != sorted(lines):
        raise BundleRefused([f"{MANIFEST}: its instances are not the candidates of {RELEASE_JSONL}"])
    if sorted(p for _, p, _ in listed) != list(range(1, len(listed) + 1)):
        raise BundleRefused([f"{MANIFEST}: positions must be 1..n"])
    return [BundleEntry(position, revision, lines[ext]) for ext, position, revision in listed]


def bundle_read(stream: IO[bytes]) -> BundleContent:
    """Unpack and verify a bundle: checksums, the release checksum, and that every derived file
    (instance folders, README, manifest) is exactly what the JSONL and manifest give."""
    files = _unpack(stream)
    manifest = _manifest(files)
    _check_checksums(files, dict(manifest.files))
    release = manifest.release
    entries = _entries(files, manifest)
    meta = BundleMeta(
        name=release.name,
        version=release.version,
        description=release.description,
        checksum=release.checksum,
        frozen_at=release.frozen_at,
        previous=release.previous,
        changelog=dict(manifest.changelog),
        frozen_despite=release.frozen_despite,
    )
    if _sha256(files[RELEASE_JSONL]) != meta.checksum:
        raise BundleRefused([f"{RELEASE_JSONL}: its sha256 is not the release checksum {meta.checksum}"])
    try:
        expected = bundle_files(meta, entries)
    except (KeyError, ValueError):
        raise BundleRefused([f"{MANIFEST}: the release description is incomplete"]) from None
    differing = [path for path in sorted(expected) if files.get(path) != expected[path]]
    if differing:
        raise BundleRefused([f"{path}: does not match {RELEASE_JSONL} and {MANIFEST}" for path in differing])
    return BundleContent(meta=meta, entries=entries)
