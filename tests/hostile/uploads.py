"""Valid uploads of every foreign format the application imports (an Inspect AI .eval log, a Harbor
job directory as .tar.gz, a release bundle), and hostile variants of each that spoil one field: a
wrong JSON type, a number past its column, NaN, a string where a number belongs, a text past its
limit. Built in memory in milliseconds, for the walks and the importers' own tests."""

from __future__ import annotations

import copy
import io
import json
import os
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from candidates.models import Release
from candidates.pipeline import format as fmt
from candidates.releases.bundle import BundleEntry, BundleMeta, bundle_archive, release_entries, release_meta
from candidates.releases.interop.common import item_identity
from candidates.releases.interop.harbor_export import release_harbor_tasks
from candidates.releases.snapshots import checksum, lines_in_id_order
from tests.conftest import EXAMPLES

NAN = float("nan")
SAMPLE_ID = "bb-319395/kimi-k2.5/gpt-5.5"
SAMPLE_MEMBER = f"samples/{SAMPLE_ID}_epoch_1.json"
TASK = "veriharm/hostile-1.0-0001"
TRIAL = "0001__trial1"
ZERO_DIGEST = "sha256:" + "0" * 64


@dataclass(frozen=True)
class Spoil:
    """One field of one file set to a hostile value; `names` must appear in the refusal."""

    file: str
    path: tuple[str | int, ...]
    value: Any
    names: str

    @property
    def what(self) -> str:
        return f"{self.file}: {'.'.join(map(str, self.path))}={str(self.value)[:20]!r}"


def _set(data: Any, path: tuple[str | int, ...], value: Any) -> Any:
    spoiled = copy.deepcopy(data)
    target = spoiled
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return spoiled


def _dumps(data: Any) -> bytes:
    return json.dumps(data).encode()  # NaN travels as the NaN literal Python's json writes


# --- Inspect AI ----------------------------------------------------------------------------------


def inspect_sample(metadata: dict[str, Any] | None = None, sample_id: str = SAMPLE_ID, epoch: int = 1) -> dict:
    """A sample as Inspect 0.3 writes it into a .eval, scored by the export's veriharm_scorer."""
    return {
        "id": sample_id,
        "epoch": epoch,
        "input": "Do the task.",
        "target": "",
        "messages": [
            {"id": "m1", "role": "user", "content": "Do the task."},
            {
                "id": "m2",
                "role": "assistant",
                "content": [{"type": "text", "text": "Running it."}],
                "tool_calls": [{"id": "c1", "function": "bash", "arguments": {"cmd": "make"}}],
            },
            {"id": "m3", "role": "tool", "content": "ok", "function": "bash", "tool_call_id": "c1"},
            {"id": "m4", "role": "assistant", "content": "Done."},
        ],
        "scores": {
            "veriharm_scorer": {
                "value": {"task": 1, "harm": 0},
                "metadata": {"task_exit_code": 0, "harm_exit_code": 1, "task_output": "1 passed", "harm_output": ""},
                "history": [],
            }
        },
        "metadata": metadata or {},
        "store": {},
        "events": [],
        "model_usage": {
            "mockllm/model": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7, "total_cost": 0.01}
        },
        "total_time": 1.5,
        "started_at": "2026-12-02T03:00:00+00:00",
        "completed_at": "2026-12-02T03:00:02+00:00",
        "attachments": {},
    }


def inspect_eval(samples: list[dict], release_checksum: str = "0" * 64, spoil: Spoil | None = None) -> bytes:
    """A .eval of these samples: the header written by inspect-ai, each sample as given (the first
    spoiled by `spoil`, under the member name of its unspoiled id and epoch)."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalPlan, EvalSpec, write_eval_log

    spec = EvalSpec(
        created="2026-12-02T03:00:00+00:00",
        task="hostile-1.0",
        task_version=1,
        dataset=EvalDataset(name="hostile-1.0", samples=len(samples), sample_ids=[s["id"] for s in samples]),
        model="mockllm/model",
        config=EvalConfig(),
        metadata={"veriharm_release": {"checksum": release_checksum}},
        solver="safe",
        packages={"inspect_ai": "0.3.285"},
    )
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "header.eval")
        write_eval_log(EvalLog(eval=spec, status="success", plan=EvalPlan()), path)
        with open(path, "rb") as handle:
            header = handle.read()
    members = {f"samples/{s['id']}_epoch_{s['epoch']}.json": s for s in samples}
    if spoil is not None:
        first = next(iter(members))
        members[first] = _set(members[first], spoil.path, spoil.value)
    return _with_members(header, {name: _dumps(sample) for name, sample in members.items()})


def _with_members(data: bytes, members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            if info.filename not in members:
                target.writestr(info.filename, source.read(info))
        for name, content in members.items():
            target.writestr(name, content)
    return out.getvalue()


INSPECT_SPOILS = [
    Spoil(SAMPLE_MEMBER, ("scores", "veriharm_scorer", "metadata", "task_exit_code"), "0", "task_exit_code"),
    Spoil(SAMPLE_MEMBER, ("scores", "veriharm_scorer", "metadata", "harm_exit_code"), [1], "harm_exit_code"),
    Spoil(SAMPLE_MEMBER, ("scores", "veriharm_scorer", "metadata", "task_exit_code"), 10**30, "task_exit_code"),
    Spoil(SAMPLE_MEMBER, ("scores", "veriharm_scorer", "metadata", "task_exit_code"), 0.5, "task_exit_code"),
    Spoil(SAMPLE_MEMBER, ("scores", "veriharm_scorer", "metadata", "task_output"), 7, "task_output"),
    Spoil(SAMPLE_MEMBER, ("scores", "veriharm_scorer", "value"), "C", "value"),
    Spoil(SAMPLE_MEMBER, ("scores", "veriharm_scorer", "value", "harm"), "1", "value.harm"),
    Spoil(SAMPLE_MEMBER, ("model_usage", "mockllm/model", "total_cost"), NAN, "total_cost"),
    Spoil(SAMPLE_MEMBER, ("model_usage", "mockllm/model", "input_tokens"), -1, "input_tokens"),
    Spoil(SAMPLE_MEMBER, ("epoch",), 2**40, "epoch"),
    Spoil(SAMPLE_MEMBER, ("id",), {"k": 1}, "id"),
    Spoil(SAMPLE_MEMBER, ("messages",), {"k": 1}, "messages"),
    Spoil(SAMPLE_MEMBER, ("messages", 1, "content"), {"k": 1}, "messages[1].content"),
    Spoil(SAMPLE_MEMBER, ("messages", 1, "tool_calls"), "bash", "messages[1].tool_calls"),
    Spoil(SAMPLE_MEMBER, ("messages", 3, "content"), "x" * 1_000_001, "at most 1000000 characters"),
    Spoil(SAMPLE_MEMBER, ("error",), "boom", "error"),
    Spoil(SAMPLE_MEMBER, ("total_time",), "1.5", "total_time"),
    Spoil(SAMPLE_MEMBER, ("started_at",), 5, "started_at"),
]


def inspect_spoiled(spoil: Spoil, samples: list[dict] | None = None, release_checksum: str = "0" * 64) -> bytes:
    return inspect_eval(samples or [inspect_sample()], release_checksum, spoil)


# --- Harbor --------------------------------------------------------------------------------------


def harbor_trial_result(task: str = TASK, trial: str = TRIAL) -> dict:
    """A trial's result.json as Harbor 0.25 writes it (the fields the import reads, and some beside)."""
    return {
        "id": "6c0e3f55-8b57-4f7c-9d0a-6a1c4d53a2f1",
        "task_name": task,
        "trial_name": trial,
        "trial_uri": f"file:///jobs/job/{trial}",
        "task_checksum": "03b6918d",
        "agent_info": {"name": "oracle", "version": "1.0.0", "model_info": None},
        "agent_result": {"n_input_tokens": 10, "n_output_tokens": 5, "cost_usd": 0.02},
        "verifier_result": {"rewards": {"task": 1, "harm": 0}},
        "exception_info": None,
        "config": {"environment": {"type": "docker"}},
        "started_at": "2026-12-02T03:00:01",
        "finished_at": "2026-12-02T03:00:11",
    }


def harbor_files(digests: dict[str, str] | None = None) -> dict[str, bytes]:
    """A job directory's files by path inside it: one trial per task (task name -> content digest)."""
    files = {"result.json": _dumps({"id": "29999a38-7da1-493a-b7d3-69de5d27c022", "n_total_trials": 1})}
    for number, (task, digest) in enumerate(sorted((digests or {TASK: ZERO_DIGEST}).items()), start=1):
        trial = f"{number:04d}__trial1"
        files[f"{trial}/result.json"] = _dumps(harbor_trial_result(task, trial))
        files[f"{trial}/lock.json"] = _dumps({"schema_version": 2, "task": {"name": task, "digest": digest}})
        files[f"{trial}/verifier/reward.json"] = _dumps({"task": 1, "harm": 0})
        files[f"{trial}/verifier/veriharm.json"] = _dumps({"task_exit_code": 0, "harm_exit_code": 1})
        files[f"{trial}/verifier/task_test.py.log"] = b"1 passed\n"
        files[f"{trial}/agent/trajectory.json"] = _dumps(
            {
                "schema_version": "ATIF-v1.6",
                "session_id": "s",
                "agent": {"name": "oracle", "version": "1.0.0"},
                "steps": [
                    {"step_id": 1, "source": "user", "message": "Do the task."},
                    {
                        "step_id": 2,
                        "source": "agent",
                        "message": [{"type": "text", "text": "Running it."}],
                        "tool_calls": [{"tool_call_id": "c1", "function_name": "bash", "arguments": {"cmd": "make"}}],
                        "observation": {
                            "results": [{"source_call_id": "c1", "content": "built", "extra": {"exit_code": 0}}]
                        },
                    },
                ],
            }
        )
    return files


def harbor_archive(files: dict[str, bytes], root: str = "2026-12-02__03-00-00") -> bytes:
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:
        for path, content in sorted(files.items()):
            info = tarfile.TarInfo(f"{root}/{path}")
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return packed.getvalue()


RESULT = f"{TRIAL}/result.json"
HARBOR_SPOILS = [
    Spoil(f"{TRIAL}/agent/trajectory.json", ("steps",), "none", "agent/trajectory.json: steps"),
    Spoil(f"{TRIAL}/agent/trajectory.json", ("steps", 1, "message"), 5, "agent/trajectory.json: steps[1].message"),
    Spoil(f"{TRIAL}/agent/trajectory.json", ("steps", 1, "tool_calls", 0), "make", "steps[1].tool_calls[0]"),
    Spoil(f"{TRIAL}/agent/trajectory.json", ("steps", 1, "observation", "results"), "none", "observation.results"),
    Spoil(
        f"{TRIAL}/agent/trajectory.json",
        ("steps", 1, "observation", "results", 0, "content"),
        5,
        "steps[1].observation.results[0].content",
    ),
    Spoil(
        f"{TRIAL}/agent/trajectory.json",
        ("steps", 1, "observation", "results", 0, "extra", "exit_code"),
        "0",
        "steps[1].observation.results[0].extra.exit_code",
    ),
    Spoil(f"{TRIAL}/lock.json", ("task",), [ZERO_DIGEST], "lock.json: task"),
    Spoil(f"{TRIAL}/lock.json", ("task", "digest"), 5, "lock.json: task.digest"),
    Spoil(RESULT, ("verifier_result",), "passed", "result.json: verifier_result"),
    Spoil(RESULT, ("verifier_result", "rewards"), [1, 0], "verifier_result.rewards"),
    Spoil(RESULT, ("verifier_result", "rewards", "task"), "1", "verifier_result.rewards.task"),
    Spoil(RESULT, ("exception_info",), 5, "result.json: exception_info"),
    Spoil(RESULT, ("agent_result",), [], "result.json: agent_result"),
    Spoil(RESULT, ("agent_result", "cost_usd"), "0.02", "agent_result.cost_usd"),
    Spoil(RESULT, ("agent_result", "cost_usd"), NAN, "agent_result.cost_usd"),
    Spoil(RESULT, ("agent_result", "n_input_tokens"), 10**30, "agent_result.n_input_tokens"),
    Spoil(RESULT, ("agent_info", "name"), {"a": 1}, "agent_info.name"),
    Spoil(RESULT, ("config", "environment"), "docker", "config.environment"),
    Spoil(RESULT, ("task_name",), ["a"], "result.json: task_name"),
    Spoil(RESULT, ("started_at",), 5, "started_at"),
    Spoil(f"{TRIAL}/verifier/veriharm.json", ("task_exit_code",), "0", "veriharm.json: task_exit_code"),
    Spoil(f"{TRIAL}/verifier/veriharm.json", ("task_exit_code",), [0], "veriharm.json: task_exit_code"),
    Spoil(f"{TRIAL}/verifier/veriharm.json", ("harm_exit_code",), 10**30, "veriharm.json: harm_exit_code"),
    Spoil(f"{TRIAL}/verifier/veriharm.json", ("task_exit_code",), 0.5, "veriharm.json: task_exit_code"),
    Spoil("result.json", ("id",), {"a": 1}, "result.json: id"),
]


def harbor_spoiled(spoil: Spoil, files: dict[str, bytes] | None = None) -> bytes:
    files = dict(files or harbor_files())
    files[spoil.file] = _dumps(_set(json.loads(files[spoil.file]), spoil.path, spoil.value))
    return harbor_archive(files)


# --- Release bundles -----------------------------------------------------------------------------


def bundle_parts() -> tuple[BundleMeta, list[BundleEntry]]:
    """A bundle's release of the shared examples, as if frozen elsewhere (no row here)."""
    with open(EXAMPLES / "candidates.jsonl", "rb") as handle:
        parsed = fmt.parse(fmt.iter_lines(handle.read().splitlines(keepends=True), "candidates.jsonl"))
    lines = [fmt.canonical_json(record.data) for record in parsed.records if record.kind == "candidate"]
    entries = [BundleEntry(position, 1, line) for position, line in enumerate(lines, start=1)]
    meta = BundleMeta(
        name="hostile-bundle",
        version="1.0",
        description="d",
        checksum=checksum(lines_in_id_order(entries)),
        frozen_at="2026-12-02T03:00:00+00:00",
        previous=None,
        changelog={"previous": None, "added": [], "removed": [], "changed": []},
    )
    return meta, entries


MANIFEST = "manifest.json"
BUNDLE_SPOILS = [
    Spoil(MANIFEST, ("format_version",), "1", "bundle format version"),
    Spoil(MANIFEST, ("release",), [], "manifest.json: release"),
    Spoil(MANIFEST, ("release", "name"), 5, "manifest.json: release.name"),
    Spoil(MANIFEST, ("release", "checksum"), ["x"], "manifest.json: release.checksum"),
    Spoil(MANIFEST, ("release", "frozen_at"), "yesterday", "manifest.json: release.frozen_at"),
    Spoil(MANIFEST, ("release", "instances"), 2**40, "manifest.json: release.instances"),
    Spoil(MANIFEST, ("instances",), "all", "manifest.json: instances"),
    Spoil(MANIFEST, ("instances", 0, "position"), 10**30, "manifest.json: instances.0.position"),
    Spoil(MANIFEST, ("instances", 0, "revision"), "1", "manifest.json: instances.0.revision"),
    Spoil(MANIFEST, ("files",), [], "manifest.json: files"),
    Spoil(MANIFEST, ("changelog",), 5, "manifest.json: changelog"),
]


def bundle_spoiled(spoil: Spoil) -> bytes:
    meta, entries = bundle_parts()
    data = bundle_archive(meta, entries)
    members: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar:
            handle = tar.extractfile(member)
            members[member.name] = handle.read() if handle else b""
    path = f"{meta.root}/{spoil.file}"
    members[path] = _dumps(_set(json.loads(members[path]), spoil.path, spoil.value))
    return harbor_archive({name.split("/", 1)[1]: content for name, content in members.items()}, root=meta.root)


@dataclass(frozen=True)
class HostileUpload:
    """A multipart request to an import endpoint with a hostile file: refused, naming `names`."""

    path: str
    field: str
    file_name: str
    content: Callable[[], bytes]
    data: dict[str, Any]
    names: str
    what: str


@dataclass(frozen=True)
class Bases:
    """Valid uploads for one frozen release: its samples for an Inspect log, a Harbor job's files."""

    release_id: int
    checksum: str
    samples: list[dict]
    job: dict[str, bytes]


def release_bases(release: Release) -> Bases:
    meta = release_meta(release)
    samples = [inspect_sample(item_identity(meta, e), sample_id=e.id) for e in release_entries(release)]
    job = harbor_files({name: digest for name, (_, digest, _) in release_harbor_tasks(release).items()})
    return Bases(release.pk, release.checksum, samples, job)


def hostile_uploads(bases: Bases) -> Iterator[HostileUpload]:
    """Every spoiled file for its import endpoint, built from valid uploads of `bases`' release."""
    for spoil in INSPECT_SPOILS:
        yield HostileUpload(
            "/api/evaluation/runs/import/",
            "log",
            "log.eval",
            lambda spoil=spoil: inspect_spoiled(spoil, bases.samples, bases.checksum),
            {"release": bases.release_id, "harness": "inspect"},
            spoil.names,
            f"inspect {spoil.what}",
        )
    for spoil in HARBOR_SPOILS:
        yield HostileUpload(
            "/api/evaluation/runs/import/",
            "log",
            "job.tar.gz",
            lambda spoil=spoil: harbor_spoiled(spoil, bases.job),
            {"release": bases.release_id, "harness": "harbor"},
            spoil.names,
            f"harbor {spoil.what}",
        )
    for spoil in BUNDLE_SPOILS:
        yield HostileUpload(
            "/api/releases/import/",
            "bundle",
            "bundle.tar.gz",
            lambda spoil=spoil: bundle_spoiled(spoil),
            {},
            spoil.names,
            f"bundle {spoil.what}",
        )
