"""Final states kept as archives: export, restore, the size cap, and re-scoring without the agent."""

from __future__ import annotations

import json
import secrets
import tarfile
from pathlib import Path

import pytest

from evaluation.agents.reference import ReferenceAgent
from evaluation.sandbox import Environment, Limits, Sandbox, SandboxBackend
from evaluation.sandbox.base import ArchiveTooLarge
from evaluation.trials.protocol import TrialSpec, score_final_state, trial_run

EXAMPLES = Path("/work/shared/spec/examples/candidates.jsonl")
REPO_EXAMPLES = Path(__file__).resolve().parents[3] / "data" / "examples" / "candidates.jsonl"
# Docker bind-mounts these itself: never part of a snapshot, regenerated in every container.
DOCKER_MANAGED = ("/etc/hosts", "/etc/hostname", "/etc/resolv.conf")
WRITABLE = "/app /etc /home /opt /root /run /srv /tmp /usr/local /var"

# Every entry of the writable directories: type, mode, owner, size, link target, content hash.
LISTING = (
    f"find {WRITABLE} -xdev -printf '%y %m %U:%G %s %p -> %l\\n' | grep -v -e ' /etc/hosts ->' "
    "-e ' /etc/hostname ->' -e ' /etc/resolv.conf ->' | awk '$1 == \"d\" {$4 = \"-\"} 1' | LC_ALL=C sort; "
    f"find {WRITABLE} -xdev -type f ! -path /etc/hosts ! -path /etc/hostname ! -path /etc/resolv.conf "
    "-readable -print0 | LC_ALL=C sort -z | xargs -0 sha256sum"
)


@pytest.fixture
def host_secret(tmp_path: Path) -> Path:
    secret = tmp_path / "host-secret.txt"
    secret.write_text(f"host only {secrets.token_hex(8)}\n")
    return secret


def _shape(sandbox: Sandbox, host_secret: Path) -> None:
    script = f"""
set -e
mkdir -p nested/deep empty-dir /opt/tool /home/user
printf 'hello\\n' > nested/deep/file.txt
printf 'secret\\n' > private.key && chmod 600 private.key
printf '#!/bin/sh\\necho run\\n' > run.sh && chmod 4755 run.sh
: > no-perms && chmod 000 no-perms
chmod 750 nested
ln -s nested/deep/file.txt relative-link
ln -s {host_secret} host-link
ln -s /etc/passwd passwd-link
ln -s /nonexistent dangling
ln nested/deep/file.txt hard-link
mkfifo pipe
head -c 100000 /dev/urandom > /opt/tool/blob.bin
echo 'user:x:1000:1000::/home/user:/bin/sh' >> /etc/passwd
rm -f /etc/motd
printf 'p' > /usr/local/bin/tool && chmod 711 /usr/local/bin/tool
"""
    result = sandbox.exec(script, 60)
    assert result.exit_code == 0, result


def test_export_then_restore_gives_the_same_state(
    backend: SandboxBackend, sandboxes: list[Sandbox], tmp_path: Path, host_secret: Path
) -> None:
    environment = Environment(files={"data.txt": "x\n", "/etc/app.conf": "mode=1\n"}, setup="echo setup >> setup.log")
    original = backend.create(environment)
    sandboxes.append(original)
    _shape(original, host_secret)
    secret_before = host_secret.read_text()
    snapshot = original.snapshot()
    archive = tmp_path / "state.tar.gz"
    try:
        info = snapshot.export(archive, max_bytes=100 * 1024 * 1024)
        again = snapshot.export(tmp_path / "again.tar.gz", max_bytes=100 * 1024 * 1024)
    finally:
        snapshot.discard()
    assert info.size == archive.stat().st_size > 0
    assert len(info.sha256) == 64
    assert again == info  # the same state gives the same bytes
    # Seen from the host, without extracting: links are links, the host file is not in it.
    with tarfile.open(archive, "r:gz") as members:
        by_name = {m.name: m for m in members.getmembers()}
        assert by_name["app/host-link"].issym() and by_name["app/host-link"].linkname == str(host_secret)
        assert by_name["app/passwd-link"].issym() and by_name["app/passwd-link"].linkname == "/etc/passwd"
        assert by_name["app/pipe"].isfifo()
        if backend.name == "docker":
            assert not {p.lstrip("/") for p in DOCKER_MANAGED} & set(by_name)
    assert secret_before.encode() not in _decompressed(archive)
    assert host_secret.read_text() == secret_before

    restored = backend.restore_archive(environment, Limits(), archive)
    sandboxes.append(restored)
    assert restored.workdir == "/app"
    before, after = original.exec(LISTING, 60), restored.exec(LISTING, 60)
    assert before.exit_code == 0 and after.exit_code == 0, (before, after)
    assert after.stdout == before.stdout
    # The setup was not run again, and the restored copy works like any sandbox.
    assert restored.read_file("setup.log") == b"setup\n"
    assert restored.exec("readlink host-link; cat relative-link; ./run.sh; stat -c %a no-perms", 30).stdout == (
        f"{host_secret}\nhello\nrun\n0\n"
    )
    assert restored.exec("cat host-link", 30).exit_code != 0  # points to nothing inside


def test_the_cap_is_enforced(backend: SandboxBackend, sandboxes: list[Sandbox], tmp_path: Path) -> None:
    sandbox = backend.create(Environment())
    sandboxes.append(sandbox)
    sandbox.exec("head -c 3000000 /dev/urandom > noise.bin", 60)
    snapshot = sandbox.snapshot()
    target = tmp_path / "too-big.tar.gz"
    try:
        with pytest.raises(ArchiveTooLarge) as failure:
            snapshot.export(target, max_bytes=1_000_000)
        kept = snapshot.export(tmp_path / "fits.tar.gz", max_bytes=20_000_000)
    finally:
        snapshot.discard()
    assert failure.value.size > 1_000_000 and failure.value.max_bytes == 1_000_000
    assert not target.exists()
    assert kept.size > 3_000_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fits.tar.gz"]


def test_a_restore_from_a_missing_or_corrupt_archive_is_an_infrastructure_error(
    backend: SandboxBackend, tmp_path: Path
) -> None:
    import gzip

    from evaluation.sandbox import SandboxError

    corrupt = tmp_path / "corrupt.tar.gz"
    corrupt.write_bytes(b"not a gzip file")
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(gzip.compress(secrets.token_bytes(200_000))[:50_000])
    for path in (tmp_path / "missing.tar.gz", corrupt, truncated):
        with pytest.raises((SandboxError, OSError)):
            backend.restore_archive(Environment(), Limits(), path).destroy()


def _decompressed(path: Path) -> bytes:
    import gzip

    return gzip.decompress(path.read_bytes())


def _example(kind_of_harm: str) -> dict:
    source = EXAMPLES if EXAMPLES.exists() else REPO_EXAMPLES
    for line in source.read_text().splitlines():
        candidate = json.loads(line)
        if candidate.get("kind") == "candidate" and kind_of_harm in candidate["harm_test"]:
            return candidate
    raise AssertionError(f"no example candidate with {kind_of_harm!r} in its harm test")


@pytest.mark.parametrize("reference", ["safe", "harmful"])
def test_rescoring_a_kept_final_state_reproduces_the_verdicts(
    backend: SandboxBackend, tmp_path: Path, reference: str
) -> None:
    candidate = _example("firmware")
    spec = TrialSpec(
        environment=candidate["source_task"].get("environment"),
        instruction=candidate["instruction"],
        task_test=candidate["source_task"]["task_test"],
        harm_test=candidate["harm_test"],
        agent_time_limit=120,
        test_timeout=120,
    )
    archive = tmp_path / "final.tar.gz"
    outcome = trial_run(
        backend, spec, ReferenceAgent(candidate["references"][reference]), record=lambda s: None, final_state=archive
    )
    assert (outcome.r_task, outcome.r_harm) == ((1, 0) if reference == "safe" else (1, 1)), outcome
    assert outcome.final_state is not None and outcome.final_state_note == ""
    assert outcome.final_state.size == archive.stat().st_size
    rescored = score_final_state(
        backend,
        Environment.from_spec(spec.environment),
        spec.limits,
        archive,
        spec.task_test,
        spec.harm_test,
        timeout=120,
    )
    assert rescored.task is not None and rescored.harm is not None
    assert (rescored.task.passed, rescored.harm.passed) == (outcome.task.passed, outcome.harm.passed)
    only_harm = score_final_state(
        backend, Environment.from_spec(spec.environment), spec.limits, archive, None, spec.harm_test, timeout=120
    )
    assert only_harm.task is None and only_harm.harm is not None and only_harm.harm.passed == outcome.harm.passed


def test_an_archive_over_the_cap_never_fails_the_trial(backend: SandboxBackend, tmp_path: Path) -> None:
    spec = TrialSpec(
        environment={"workdir": "/app"},
        instruction="make noise",
        task_test="import os\ndef test_noise():\n    assert os.path.getsize('noise.bin') == 2000000\n",
        harm_test=None,
        agent_time_limit=60,
        test_timeout=60,
    )
    archive = tmp_path / "final.tar.gz"
    outcome = trial_run(
        backend,
        spec,
        ReferenceAgent("head -c 2000000 /dev/urandom > noise.bin"),
        record=lambda s: None,
        final_state=archive,
        final_state_max_bytes=500_000,
    )
    assert outcome.r_task == 1 and outcome.harm is None
    assert outcome.final_state is None
    assert outcome.final_state_note.startswith("not kept: over the 500000 bytes cap"), outcome.final_state_note
    assert not archive.exists()


def test_system_identity(backend: SandboxBackend) -> None:
    identity = backend.system_identity(Environment())
    assert identity == backend.system_identity(Environment(workdir="/work"))
    prefix = "local tree sha256:" if backend.name == "local" else "docker image sha256:"
    assert identity.startswith(prefix), identity
    assert " verifier sha256:" in identity
    system, verifier = identity.split(" verifier ")
    assert len(system.rsplit(":", 1)[1]) == 64 and len(verifier.split(":", 1)[1]) == 64
