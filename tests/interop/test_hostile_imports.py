"""Hostile uploads to the importers of foreign formats: an Inspect log, a Harbor job or a release
bundle with one field spoiled (a wrong JSON type, a number past its column, NaN, a string for a
number, an exit code of 0.5, a text past its limit) is refused with a 400 naming the file, the
sample or trial and the field, and changes nothing; an archive that would unpack past its limits is
refused naming the limit, without being unpacked."""

from __future__ import annotations

import html
import io
import json
import tarfile
import tracemalloc
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from candidates.releases.bundle import MAX_MEMBERS as BUNDLE_MAX_MEMBERS
from candidates.releases.bundle import BundleRefused, bundle_read
from evaluation.imported_runs.bounds import MAX_MEMBERS
from evaluation.imported_runs.readers import read_upload
from evaluation.imported_runs.records import LogRefused
from evaluation.models import Run
from tests.hostile import uploads
from tests.hostile.seed import table_counts
from tests.interop.support import freeze_examples

IMPORT = "/api/evaluation/runs/import/"


@pytest.fixture
def release(examples_imported, curator):
    return freeze_examples(curator)


def _post(client, release, harness: str, name: str, data: bytes):
    log = SimpleUploadedFile(name, data)
    return client.post(IMPORT, {"release": release.pk, "harness": harness, "log": log}, format="multipart")


@pytest.mark.django_db
def test_every_spoiled_field_of_an_inspect_log_or_harbor_job_is_a_400_naming_it_and_changes_nothing(
    release, admin_client_
):
    bases = uploads.release_bases(release)
    samples, job = bases.samples, bases.job
    before = table_counts()
    problems = []
    for harness, name, spoils, build, record in [
        (
            "inspect",
            "log.eval",
            uploads.INSPECT_SPOILS,
            lambda s: uploads.inspect_spoiled(s, samples, release.checksum),
            samples[0]["id"],
        ),
        ("harbor", "job.tar.gz", uploads.HARBOR_SPOILS, lambda s: uploads.harbor_spoiled(s, job), "trial 0001__trial1"),
    ]:
        for spoil in spoils:
            answer = _post(admin_client_, release, harness, name, build(spoil))
            said = " | ".join(e["message"] for e in answer.json().get("errors", [])) if answer.status_code < 500 else ""
            named = spoil.names in said and (record in said or spoil.file == "result.json")
            if answer.status_code != 400 or not named or (harness == "inspect" and name not in said):
                problems.append(f"{harness} {spoil.what} -> {answer.status_code}: {said[:300]}")
    assert problems == [], "\n".join(problems)
    # The page refuses them as the API does, naming the field.
    half = next(s for s in uploads.HARBOR_SPOILS if s.value == 0.5)
    page = admin_client_.post(
        "/evaluation/import/",
        {
            "release": release.pk,
            "harness": "harbor",
            "log": SimpleUploadedFile("job.tar.gz", uploads.harbor_spoiled(half, job)),
        },
    )
    said = html.unescape(page.content.decode())
    assert page.status_code == 400 and "trial 0001__trial1, verifier/veriharm.json: task_exit_code" in said
    assert table_counts() == before

    # The same files unspoiled are imported: each refusal above was its spoiled field's.
    assert (
        _post(
            admin_client_, release, "inspect", "log.eval", uploads.inspect_eval(samples, release.checksum)
        ).status_code
        == 201
    )
    answer = _post(admin_client_, release, "harbor", "job.tar.gz", uploads.harbor_archive(job))
    assert answer.status_code == 201, answer.json()
    run = Run.objects.get(pk=answer.json()["id"])
    assert {(t.r_task, t.r_harm, t.task_exit_code, t.agent_config["usage"]["cost_usd"]) for t in run.trials.all()} == {
        (1, 0, 0, 0.02)
    }


def test_an_exit_code_of_one_half_is_refused_not_read_as_zero():
    half = next(s for s in uploads.HARBOR_SPOILS if s.value == 0.5)
    with pytest.raises(
        LogRefused, match=r"trial 0001__trial1, verifier/veriharm.json: task_exit_code: Input should be a valid integer"
    ):
        read_upload("harbor", "job.tar.gz", uploads.harbor_spoiled(half))
    half = next(s for s in uploads.INSPECT_SPOILS if s.value == 0.5)
    with pytest.raises(LogRefused, match=r"metadata.task_exit_code: Input should be a valid integer"):
        read_upload("inspect", "log.eval", uploads.inspect_spoiled(half))


def test_every_spoiled_field_of_a_bundle_manifest_is_refused_naming_it():
    problems = []
    for spoil in uploads.BUNDLE_SPOILS:
        try:
            bundle_read(io.BytesIO(uploads.bundle_spoiled(spoil)))
        except BundleRefused as refused:
            if not any(spoil.names in message for message in refused.messages):
                problems.append(f"{spoil.what}: {refused.messages}")
        else:
            problems.append(f"{spoil.what}: accepted")
    assert problems == [], "\n".join(problems)


def test_a_small_eval_that_would_unpack_a_huge_message_is_refused_naming_the_limit_without_unpacking_it():
    sample = uploads.inspect_sample()
    sample["messages"][3]["content"] = "x" * (40 * 2**20)
    data = uploads.inspect_eval([sample])
    assert len(data) < 200_000
    with pytest.raises(LogRefused, match=r"unpacks to more than the limit of 32 MiB per file"):
        with _peak_below(8 * 2**20, "refusing the log"):
            read_upload("inspect", "log.eval", data)


@contextmanager
def _peak_below(limit: int, what: str) -> Iterator[None]:
    """The memory Python allocates inside the block, at its peak, stays below `limit` bytes."""
    import inspect_ai.log  # noqa: F401  (imported once per process: not what the block allocates)

    tracemalloc.start()
    try:
        yield
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < limit, f"{what} took {peak / 2**20:.1f} MiB"


def test_archives_past_their_member_limits_are_refused_naming_the_limit():
    files = uploads.harbor_files()
    files["0001__trial1/verifier/task_test.py.log"] = b"x" * (33 * 2**20)
    with pytest.raises(LogRefused, match=r"task_test.py.log unpacks to more than the limit of 32 MiB per file"):
        read_upload("harbor", "job.tar.gz", uploads.harbor_archive(files))

    # Counted from the zip's last record, before its directory is read into an object per member.
    many = io.BytesIO()
    with zipfile.ZipFile(many, "w") as archive:
        for number in range(MAX_MEMBERS + 1):
            archive.writestr(f"samples/{number}.json", b"")
    data = many.getvalue()
    with pytest.raises(LogRefused, match=f"log.eval: holds more than the limit of {MAX_MEMBERS} files"):
        with _peak_below(2**20, "refusing an archive of too many files"):
            read_upload("inspect", "log.eval", data)

    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:
        for number in range(BUNDLE_MAX_MEMBERS + 1):
            tar.addfile(tarfile.TarInfo(f"release-1.0/f{number}"), io.BytesIO(b""))
    with pytest.raises(BundleRefused, match=f"more than the limit of {BUNDLE_MAX_MEMBERS} files"):
        bundle_read(io.BytesIO(packed.getvalue()))


def test_a_harbor_job_that_ran_a_task_more_times_than_a_run_holds_is_refused_naming_it():
    files = uploads.harbor_files()
    trial = {path.split("/", 1)[1]: content for path, content in files.items() if path.startswith("0001__trial1/")}
    for number in range(2, 102):
        files.update({f"0001__trial{number}/{path}": content for path, content in trial.items()})
    with pytest.raises(LogRefused, match=r"task veriharm/hostile-1.0-0001 ran more than 100 times in this job"):
        read_upload("harbor", "job.tar.gz", uploads.harbor_archive(files))


def test_a_json_log_with_a_spoiled_field_is_refused_naming_the_sample_and_field():
    from inspect_ai.log import read_eval_log

    header = read_eval_log(io.BytesIO(uploads.inspect_eval([uploads.inspect_sample()])), header_only=True)
    log = header.model_dump(mode="json", exclude_none=True)
    for spoil in [s for s in uploads.INSPECT_SPOILS if s.names in ("task_exit_code", "total_cost", "epoch")]:
        sample = uploads.inspect_sample()
        target = sample
        for key in spoil.path[:-1]:
            target = target[key]
        target[spoil.path[-1]] = spoil.value
        data = json.dumps({**log, "samples": [uploads.inspect_sample(sample_id="first"), sample]}).encode()
        with pytest.raises(LogRefused) as refused:
            read_upload("inspect", "log.json", data)
        assert refused.value.messages[0].startswith(f"log.json: sample {uploads.SAMPLE_ID} (epoch "), (
            refused.value.messages
        )
        assert spoil.names in refused.value.messages[0]
