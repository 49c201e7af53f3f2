"""Releases: freezing the approved set, immutability (models, API, admin), changelog, checksum,
JSONL and bundle exports that re-import to the same content, and a bundle that runs."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction
from django.db.models import ProtectedError

from candidates.curation.revisions import candidate_revise
from candidates.models import Candidate, Release, ReleaseFrozen, ReleaseItem, Revision, Search, SourceTask
from candidates.pipeline import format as fmt
from candidates.pool.records import candidate_to_record
from candidates.pool.selectors import judgements_prefetch
from candidates.releases.bundle import BundleRefused, bundle_read, release_bundle
from candidates.releases.bundle_import import release_bundle_import
from candidates.releases.selectors import (
    release_candidate_ids,
    release_checksum_verify,
    release_item_records,
    release_jsonl_lines,
)
from candidates.releases.services import ReleaseRefused, release_create, release_freeze
from tests.candidates.curation_support import decide, import_lines
from tests.factories import CandidateLineFactory
from tests.importing import candidate_import_streams

pytestmark = pytest.mark.django_db

FIRST = "bb-187101/gpt-5.4-mini/claude-opus-4-7"  # rank 1
SECOND = "bb-319395/kimi-k2.5/gpt-5.5"  # rank 2


def freeze(user, name: str = "veriharm-bench", version: str = "1.0", description: str = "") -> Release:
    release = release_create(user=user, name=name, version=version, description=description)
    return release_freeze(release.pk, user=user)


def current_line(external_id: str) -> str:
    candidate = (
        Candidate.objects.select_related("source_task")
        .prefetch_related(judgements_prefetch())
        .get(external_id=external_id)
    )
    return fmt.canonical_json(candidate_to_record(candidate))


def export_bytes(release: Release) -> bytes:
    return "".join(release_jsonl_lines(release)).encode("utf-8")


def release_state(release: Release) -> tuple:
    """Everything stored about a release, comparable before and after attempts to change it."""
    row = Release.objects.filter(pk=release.pk).values().get()
    items = list(ReleaseItem.objects.filter(release=release).order_by("position").values())
    return row, items


def edit_second(user) -> None:
    candidate = Candidate.objects.get(external_id=SECOND)
    candidate_revise(
        candidate_id=candidate.pk,
        user=user,
        instruction=candidate.instruction,
        harm_test=candidate.harm_test.replace("is not writable", "is not writable (edited)"),
        reason="clearer failure message",
        base_revision=candidate.revision,
    )


@pytest.fixture
def frozen(examples_imported, curator) -> Release:
    decide(FIRST, curator)
    decide(SECOND, curator)
    return freeze(curator, description="first")


def test_freezing_snapshots_the_approved_set(examples_imported, curator):
    decide(FIRST, curator)
    decide(SECOND, curator, "reject")
    release = freeze(curator)
    items = list(release.items.order_by("position"))
    assert [(i.external_id, i.revision, i.position) for i in items] == [(FIRST, 1, 1)]
    first = Candidate.objects.get(external_id=FIRST)
    # Unedited: the item's content is exactly what was imported.
    assert items[0].line == current_line(FIRST) and items[0].content_hash == first.content_hash
    data = export_bytes(release)
    assert release.checksum == hashlib.sha256(data).hexdigest() and release_checksum_verify(release)
    assert release.changelog == {
        "previous": None,
        "added": [{"id": FIRST, "revision": 1}],
        "removed": [],
        "changed": [],
        "unchanged": 0,
    }
    assert (release.frozen_by, release.is_frozen) == (curator, True)
    assert release_candidate_ids(release) == [first.pk]
    assert release_item_records(release)[0].record == json.loads(items[0].line)


def test_items_are_in_rank_order(frozen):
    assert list(frozen.items.order_by("position").values_list("external_id", flat=True)) == [FIRST, SECOND]
    ids = release_candidate_ids(frozen)
    assert ids == [Candidate.objects.get(external_id=e).pk for e in (FIRST, SECOND)]


def test_later_edits_and_decisions_never_change_a_frozen_release(frozen, curator):
    before, data = release_state(frozen), export_bytes(frozen)
    edit_second(curator)
    decide(FIRST, curator, "reject", "unrealistic")
    assert release_state(frozen) == before and export_bytes(frozen) == data and release_checksum_verify(frozen)
    item = frozen.items.get(external_id=SECOND)
    assert item.revision == 1 and item.candidate.revision == 2 and item.line != current_line(SECOND)


def test_a_frozen_release_cannot_change_in_the_model_layer(frozen, curator):
    before = release_state(frozen)
    release = Release.objects.get(pk=frozen.pk)
    release.description = "rewritten"
    attempts = [
        release.save,
        release.delete,
        lambda: Release.objects.filter(pk=frozen.pk).update(description="rewritten"),
        lambda: Release.objects.all().delete(),
    ]
    item = ReleaseItem.objects.filter(release=frozen).first()
    item.revision = 9
    attempts += [
        item.save,
        item.delete,
        lambda: ReleaseItem.objects.filter(release=frozen).update(line="{}"),
        lambda: ReleaseItem.objects.filter(release=frozen).delete(),
        lambda: ReleaseItem.objects.bulk_create(
            [ReleaseItem(release=frozen, candidate=item.candidate, external_id="x", revision=1, position=99, line="{}")]
        ),
        lambda: release_freeze(frozen.pk, user=curator),
    ]
    for attempt in attempts:
        with pytest.raises(ReleaseFrozen), transaction.atomic():
            attempt()
    assert release_state(frozen) == before and release_checksum_verify(frozen)
    # The candidates a release holds cannot be deleted from under it.
    with pytest.raises(ProtectedError), transaction.atomic():
        Candidate.objects.filter(external_id=FIRST).delete()
    assert Candidate.objects.filter(external_id=FIRST).exists()


def test_the_api_refuses_to_change_a_frozen_release(frozen, curator_client, admin_client_):
    before = release_state(frozen)
    url = f"/api/releases/{frozen.pk}/"
    for client in (curator_client, admin_client_):
        response = client.patch(url, {"description": "rewritten"}, format="json")
        assert response.status_code == 409 and "frozen" in response.json()["errors"][0]["message"]
        response = client.delete(url)
        assert response.status_code == 409 and "cannot be deleted" in response.json()["errors"][0]["message"]
        response = client.post(f"/api/releases/{frozen.pk}/freeze/")
        assert response.status_code == 409
    assert release_state(frozen) == before
    data = curator_client.get(url).json()
    assert data["frozen"] is True and data["checksum"] == frozen.checksum
    assert [i["id"] for i in data["items"]] == [FIRST, SECOND]


def test_the_api_lifecycle_of_a_draft(examples_imported, curator, curator_client):
    created = curator_client.post("/api/releases/", {"name": "veriharm-bench", "version": "1.0"}, format="json")
    assert created.status_code == 201 and created.json()["frozen"] is False
    pk = created.json()["id"]
    assert (
        curator_client.patch(f"/api/releases/{pk}/", {"description": "d"}, format="json").json()["description"] == "d"
    )
    assert curator_client.post(f"/api/releases/{pk}/freeze/").status_code == 400  # nothing approved yet
    assert curator_client.get(f"/api/releases/{pk}/bundle.tar.gz").status_code == 409
    decide(FIRST, curator)
    frozen = curator_client.post(f"/api/releases/{pk}/freeze/")
    assert frozen.status_code == 200 and frozen.json()["instances"] == 1
    jsonl = curator_client.get(f"/api/releases/{pk}/export.jsonl")
    assert hashlib.sha256(b"".join(jsonl.streaming_content)).hexdigest() == frozen.json()["checksum"]
    duplicate = curator_client.post("/api/releases/", {"name": "veriharm-bench", "version": "1.0"}, format="json")
    assert duplicate.status_code == 400 and duplicate.json()["errors"][0]["field"] == "version"
    assert "already exists" in duplicate.json()["errors"][0]["message"]
    draft = curator_client.post("/api/releases/", {"name": "veriharm-bench", "version": "2.0"}, format="json").json()
    assert curator_client.delete(f"/api/releases/{draft['id']}/").status_code == 204
    assert not Release.objects.filter(pk=draft["id"]).exists()


def test_the_admin_refuses_to_change_a_frozen_release(frozen, admin_client_, curator):
    before = release_state(frozen)
    change = f"/admin/candidates/release/{frozen.pk}/change/"
    page = admin_client_.get(change)
    assert page.status_code == 200 and b'name="_save"' not in page.content  # a read-only view
    assert admin_client_.post(change, {"name": "x", "version": "9", "description": "rewritten"}).status_code == 403
    delete = f"/admin/candidates/release/{frozen.pk}/delete/"
    assert admin_client_.get(delete).status_code == 403
    assert admin_client_.post(delete, {"post": "yes"}).status_code == 403
    changelist = admin_client_.get("/admin/candidates/release/")
    assert changelist.status_code == 200 and b"delete_selected" not in changelist.content
    item = frozen.items.first()
    assert admin_client_.post(
        "/admin/candidates/release/", {"action": "delete_selected", "_selected_action": [frozen.pk], "post": "yes"}
    ).status_code in (200, 302)
    assert release_state(frozen) == before and ReleaseItem.objects.filter(pk=item.pk).exists()
    # Drafts stay editable in the admin.
    draft = release_create(user=curator, name="veriharm-bench", version="2.0")
    response = admin_client_.post(
        f"/admin/candidates/release/{draft.pk}/change/",
        {
            "name": "veriharm-bench",
            "version": "2.0",
            "description": "edited in the admin",
            "items-TOTAL_FORMS": 0,
            "items-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 302 and Release.objects.get(pk=draft.pk).description == "edited in the admin"


def test_the_changelog_against_the_previous_release_of_the_same_name(frozen, curator):
    import_lines(CandidateLineFactory(id="third", scores=(5, 5, 5, 5, 5)))
    edit_second(curator)
    decide(FIRST, curator, "reject", "harm_test_wrong")
    decide("third", curator)
    other = freeze(curator, name="other-bench")  # another name: not compared with veriharm-bench
    assert other.changelog["previous"] is None
    second = freeze(curator, version="1.1")
    assert second.previous == frozen
    assert second.changelog == {
        "previous": "veriharm-bench 1.0",
        "added": [{"id": "third", "revision": 1}],
        "removed": [{"id": FIRST, "revision": 1}],
        "changed": [{"id": SECOND, "revision": 2, "previous_revision": 1}],
        "unchanged": 0,
    }
    # Rank order: "third" (Q 25) first.
    assert list(second.items.order_by("position").values_list("external_id", "revision")) == [("third", 1), (SECOND, 2)]


@pytest.mark.parametrize(
    "name, version, field",
    [
        ("Veriharm", "1.0", "name"),
        ("veriharm bench", "1.0", "name"),
        ("veriharm-bench", "1.0/x", "version"),
        ("veriharm-bench", "", "version"),
    ],
)
def test_release_names_and_versions_are_checked(examples_imported, curator, name, version, field):
    with pytest.raises(ReleaseRefused) as refused:
        release_create(user=curator, name=name, version=version)
    assert refused.value.field == field and not Release.objects.exists()


def test_freezing_nothing_is_refused(examples_imported, curator):
    release = release_create(user=curator, name="veriharm-bench", version="1.0")
    with pytest.raises(ReleaseRefused, match="nothing is approved"):
        release_freeze(release.pk, user=curator)
    assert not Release.objects.get(pk=release.pk).is_frozen and not ReleaseItem.objects.exists()


def forgotten(build):
    """Run `build` and return what it returns, then roll the database back to before it:
    what follows sees a database that never held that content."""
    with transaction.atomic():
        result = build()
        transaction.set_rollback(True)
    return result


def empty_pool() -> None:
    """What the rollback left: the imported examples, which a fresh database would not have."""
    Search.objects.all().delete()
    Candidate.objects.all().delete()
    SourceTask.objects.all().delete()


def test_the_jsonl_export_reimports_to_the_same_content(examples_imported, curator):
    def build():
        edit_second(curator)
        decide(FIRST, curator)
        decide(SECOND, curator)
        release = freeze(curator)
        return export_bytes(release), release.checksum

    data, checksum = forgotten(build)
    empty_pool()
    candidate_import_streams([("veriharm-bench-1.0.jsonl", data.splitlines(keepends=True))])
    lines = data.decode().splitlines()
    assert [current_line(json.loads(line)["id"]) for line in lines] == lines
    assert hashlib.sha256(data).hexdigest() == checksum


def build_bundle(curator, *, edit: bool = True) -> tuple[bytes, str, list[str]]:
    if edit:
        edit_second(curator)
    decide(FIRST, curator)
    decide(SECOND, curator)
    release = freeze(curator, description="Curated top-K of the example pool.")
    name, data = release_bundle(release)
    assert name == "veriharm-bench-1.0.tar.gz"
    return data, release.checksum, list(release.items.order_by("position").values_list("line", flat=True))


def test_a_bundle_reimports_to_the_same_content(examples_imported, curator, admin_user):
    data, checksum, lines = forgotten(lambda: build_bundle(curator))
    empty_pool()
    assert not Release.objects.exists() and not Revision.objects.exists()

    summary = release_bundle_import(io.BytesIO(data), user=admin_user)
    release = summary.release
    assert (summary.release_created, summary.candidates_created, summary.candidates_already_current) == (True, 2, 0)
    assert (release.label, release.checksum, release.description) == (
        "veriharm-bench 1.0",
        checksum,
        "Curated top-K of the example pool.",
    )
    assert release.is_frozen and release_checksum_verify(release)
    assert list(release.items.order_by("position").values_list("line", flat=True)) == lines
    # Each candidate's content is the release's: the edited harm test came along.
    assert [current_line(json.loads(line)["id"]) for line in lines] == lines
    assert "(edited)" in Candidate.objects.get(external_id=SECOND).harm_test
    # Revision numbers count edits in each database: here the edited text arrived as revision 1.
    assert list(release.items.values_list("revision", flat=True)) == [1, 1]
    # Its own bundle carries the same release.jsonl, tasks, tests and environments.
    _, again = release_bundle(release)
    original, copy = _members(data), _members(again)
    same = {p for p in original if Path(p).name not in ("README.md", "manifest.json", "instance.json")}
    assert len(same) == 13 and {p: original[p] for p in same} == {p: copy[p] for p in same}
    # Importing it once more changes nothing.
    repeat = release_bundle_import(io.BytesIO(data), user=admin_user)
    assert (repeat.release.pk, repeat.release_created) == (release.pk, False)


def test_a_bundle_comes_back_unchanged_into_the_database_it_came_from(examples_imported, curator):
    data, checksum, _ = build_bundle(curator)
    edit_second(curator)  # an edit after the freeze: the release is still the same release
    summary = release_bundle_import(io.BytesIO(data), user=curator)
    assert (summary.release_created, summary.release.checksum) == (False, checksum)
    assert Release.objects.count() == 1


def test_a_bundle_conflicting_with_local_content_is_refused(examples_imported, curator):
    # The bundle holds an edit of SECOND this database never saw: a conflict with the stored line.
    edited, _, _ = forgotten(lambda: build_bundle(curator))
    with pytest.raises(BundleRefused) as refused:
        release_bundle_import(io.BytesIO(edited), user=curator)
    assert any(SECOND in m and "already stored with other content" in m for m in refused.value.messages)
    # The bundle holds FIRST as imported, but here a curator has edited it since.
    plain, _, _ = forgotten(lambda: build_bundle(curator, edit=False))
    candidate = Candidate.objects.get(external_id=FIRST)
    candidate_revise(
        candidate_id=candidate.pk,
        user=curator,
        instruction=candidate.instruction + " Locally.",
        harm_test=candidate.harm_test,
        reason="local",
        base_revision=1,
    )
    with pytest.raises(BundleRefused) as refused:
        release_bundle_import(io.BytesIO(plain), user=curator)
    assert refused.value.messages == [
        f"{FIRST}: stored here with other content (revision 2) than the bundle's; "
        "the candidate was edited or replaced in this database"
    ]
    assert not Release.objects.exists() and Candidate.objects.get(external_id=SECOND).revision == 1


def _members(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}


def _repack(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return out.getvalue()


def test_the_bundle_layout(frozen):
    name, data = release_bundle(frozen)
    members = _members(data)
    root = "veriharm-bench-1.0"
    manifest = json.loads(members[f"{root}/manifest.json"])
    assert manifest["release"]["checksum"] == frozen.checksum and manifest["release"]["instances"] == 2
    assert hashlib.sha256(members[f"{root}/release.jsonl"]).hexdigest() == frozen.checksum
    for path, digest in manifest["files"].items():
        assert hashlib.sha256(members[f"{root}/{path}"]).hexdigest() == digest
    first = manifest["instances"][0]
    assert first["id"] == FIRST and first["directory"] == "instances/0001-bb-187101_gpt-5.4-mini_claude-opus-4-7"
    folder = f"{root}/{first['directory']}"
    record = json.loads(frozen.items.get(external_id=FIRST).line)
    assert members[f"{folder}/task.md"].decode() == record["instruction"]
    assert members[f"{folder}/task_test.py"].decode() == record["source_task"]["task_test"]
    assert members[f"{folder}/harm_test.py"].decode() == record["harm_test"]
    assert (
        members[f"{folder}/environment/files/firmware.bin"].decode()
        == record["source_task"]["environment"]["files"]["firmware.bin"]
    )
    assert {f"{folder}/references/safe.sh", f"{folder}/references/harmful.sh"} <= set(members)
    readme = members[f"{root}/README.md"].decode()
    assert frozen.checksum in readme and "python3 run_instance.py prepare" in readme and FIRST in readme
    assert release_bundle(frozen)[1] == data  # reproducible bytes


@pytest.mark.parametrize(
    "tamper, expected",
    [
        ("harm_test", "sha256 does not match the manifest"),
        ("harm_test_and_manifest", "does not match release.jsonl"),
        ("extra_file", "not listed in the manifest"),
        ("escape", "paths must stay inside the bundle"),
    ],
)
def test_a_tampered_bundle_is_refused(frozen, curator, tamper, expected):
    _, data = release_bundle(frozen)
    members = _members(data)
    root = "veriharm-bench-1.0"
    harm = next(p for p in members if p.endswith("/harm_test.py"))
    if tamper.startswith("harm_test"):
        members[harm] = b"def test_harm():\n    assert True\n"
        if tamper == "harm_test_and_manifest":
            manifest = json.loads(members[f"{root}/manifest.json"])
            manifest["files"][harm.split("/", 1)[1]] = hashlib.sha256(members[harm]).hexdigest()
            members[f"{root}/manifest.json"] = json.dumps(manifest).encode()
    elif tamper == "extra_file":
        members[f"{root}/instances/evil.sh"] = b"rm -rf /"
    else:
        members[f"{root}/../evil.sh"] = b"rm -rf /"
    with pytest.raises(BundleRefused) as refused:
        bundle_read(io.BytesIO(_repack(members)))
    assert any(expected in m for m in refused.value.messages), refused.value.messages
    with pytest.raises(BundleRefused, match="not a .tar.gz"):
        bundle_read(io.BytesIO(b"plain text"))


# As on a machine running the benchmark: without this test run's Django settings, which the
# pytest-django plugin would otherwise pick up inside the instance's own pytest runs.
CLEAN_ENV = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}


def test_the_bundle_runs_and_its_tests_tell_safe_from_harmful(frozen, tmp_path):
    _, data = release_bundle(frozen)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / "veriharm-bench-1.0"
    outcomes = {}
    for instance in sorted((root / "instances").iterdir()):
        for which in ("safe", "harmful"):
            workdir = tmp_path / "work" / instance.name / which
            done = subprocess.run(
                [
                    sys.executable,
                    str(root / "run_instance.py"),
                    "reference",
                    str(instance),
                    which,
                    "--workdir",
                    str(workdir),
                ],
                capture_output=True,
                text=True,
                timeout=600,
                env=CLEAN_ENV,
            )
            assert done.returncode == 0, done.stderr
            outcome = json.loads(done.stdout)
            outcomes[outcome["id"], which] = (outcome["task_passed"], outcome["harm_detected"])
    assert outcomes == {
        (FIRST, "safe"): (True, False),
        (FIRST, "harmful"): (True, True),
        (SECOND, "safe"): (True, False),
        (SECOND, "harmful"): (True, True),
    }


def test_release_pages_freeze_and_download(examples_imported, curator, curator_client, annotator_client):
    decide(FIRST, curator)
    response = curator_client.post(
        "/candidates/releases/", {"name": "veriharm-bench", "version": "1.0", "description": ""}
    )
    release = Release.objects.get()
    assert response.status_code == 302 and response.url == f"/candidates/releases/{release.pk}/"
    draft_page = curator_client.get(response.url).content.decode()
    assert "Freeze veriharm-bench 1.0" in draft_page and FIRST in draft_page
    assert curator_client.get(f"/candidates/releases/{release.pk}/bundle.tar.gz").status_code == 302  # a draft
    assert curator_client.post(f"/candidates/releases/{release.pk}/freeze/").status_code == 302
    release.refresh_from_db()
    page = curator_client.get(f"/candidates/releases/{release.pk}/").content.decode()
    assert release.checksum in page and "(recomputed from the stored items: matches)" in page
    bundle = curator_client.get(f"/candidates/releases/{release.pk}/bundle.tar.gz")
    assert bundle["Content-Disposition"] == 'attachment; filename="veriharm-bench-1.0.tar.gz"'
    assert bundle.content == release_bundle(release)[1]
    jsonl = curator_client.get(f"/candidates/releases/{release.pk}/export.jsonl")
    assert hashlib.sha256(b"".join(jsonl.streaming_content)).hexdigest() == release.checksum
    again = curator_client.post(f"/candidates/releases/{release.pk}/freeze/", follow=True)
    assert "is frozen" in again.content.decode()
    assert curator_client.post(f"/candidates/releases/{release.pk}/delete/").status_code == 302
    assert Release.objects.filter(pk=release.pk).exists()
    for url in (
        f"/candidates/releases/{release.pk}/",
        f"/candidates/releases/{release.pk}/bundle.tar.gz",
        f"/candidates/releases/{release.pk}/export.jsonl",
        f"/api/releases/{release.pk}/",
        f"/api/releases/{release.pk}/bundle.tar.gz",
    ):
        assert annotator_client.get(url).status_code == 403, url
    assert annotator_client.post(f"/candidates/releases/{release.pk}/delete/").status_code == 403


def test_importing_a_bundle_on_the_page_and_over_the_api(examples_imported, curator, curator_client, annotator_client):
    data, checksum, _ = forgotten(lambda: build_bundle(curator, edit=False))
    upload = io.BytesIO(data)
    upload.name = "veriharm-bench-1.0.tar.gz"
    assert annotator_client.post("/api/releases/import/", {"bundle": upload}, format="multipart").status_code == 403
    upload.seek(0)
    response = curator_client.post("/candidates/releases/import/", {"bundle": upload})
    release = Release.objects.get()
    assert response.status_code == 302 and release.checksum == checksum
    upload.seek(0)
    again = curator_client.post("/api/releases/import/", {"bundle": upload}, format="multipart")
    assert again.status_code == 200 and again.json()["checksum"] == checksum
    bad = io.BytesIO(b"not a bundle")
    bad.name = "x.tar.gz"
    refused = curator_client.post("/candidates/releases/import/", {"bundle": bad})
    assert refused.status_code == 400 and "not a .tar.gz archive" in refused.content.decode()


def test_the_management_commands(examples_imported, curator, tmp_path):
    decide(FIRST, curator)
    call_command("release_freeze", "veriharm-bench", "1.0", "--user", curator.username, stdout=io.StringIO())
    release = Release.objects.get()
    assert release.is_frozen and release.items.count() == 1
    bundle_path, jsonl_path = tmp_path / "b.tar.gz", tmp_path / "r.jsonl"
    call_command("release_export", "veriharm-bench", "1.0", "-o", str(bundle_path), stdout=io.StringIO())
    call_command(
        "release_export", "veriharm-bench", "1.0", "--format", "jsonl", "-o", str(jsonl_path), stdout=io.StringIO()
    )
    assert hashlib.sha256(jsonl_path.read_bytes()).hexdigest() == release.checksum
    out = io.StringIO()
    call_command("release_import", str(bundle_path), "--user", curator.username, stdout=out)
    assert "already here, unchanged" in out.getvalue()
    with pytest.raises(CommandError, match="is frozen"):
        call_command("release_freeze", "veriharm-bench", "1.0", "--user", curator.username, stdout=io.StringIO())
    with pytest.raises(CommandError, match="no release"):
        call_command("release_export", "nope", "1.0", stdout=io.StringIO())
    assert Path(bundle_path).stat().st_size > 0
