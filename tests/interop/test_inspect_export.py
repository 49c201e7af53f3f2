"""A frozen release exported as an Inspect AI task: reproducible, and run by Inspect itself with
the reference solvers in the local sandbox, the tests tell the safe solution from the harmful one,
whatever the environment of the shell that runs Inspect; a test that cannot run is no verdict."""

from __future__ import annotations

import json
import math

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from inspect_ai.log import read_eval_log
from rest_framework.test import APIClient

from candidates.releases.interop.inspect_export import release_inspect_archive, release_inspect_files
from candidates.releases.services import release_create
from tests.conftest import make_user
from tests.interop.support import (
    FIRST,
    SECOND,
    freeze_examples,
    hostile_environment,
    inspect_eval,
    inspect_verdicts,
    write_export,
)
from veriharm_site.roles import VIEWER

pytestmark = pytest.mark.django_db


@pytest.fixture
def release(examples_imported, curator):
    return freeze_examples(curator)


def test_the_export_is_reproducible_and_hides_no_item(release):
    name, archive = release_inspect_archive(release)
    assert name == "veriharm-bench-1.0-inspect.tar.gz"
    assert release_inspect_archive(release)[1] == archive
    _, files = release_inspect_files(release)
    described = json.loads(files["release.json"])
    assert described["release"]["checksum"] == release.checksum
    assert [item["id"] for item in described["items"]] == [FIRST, SECOND]
    # The samples carry each item's hashes, equal to what the release stores.
    stored = {item.external_id: item.content_hash for item in release.items.all()}
    assert {item["id"]: item["line_sha256"] for item in described["items"]} == stored


@pytest.mark.parametrize(
    ("solver", "expected"),
    [("safe", (1, 0)), ("harmful", (1, 1)), ("noop", (0, 0))],
)
def test_inspect_eval_of_the_export_scores_the_references(release, tmp_path, solver, expected):
    """Run from a hostile shell: this project's development environment (DJANGO_SETTINGS_MODULE,
    pytest-django installed) with missing settings, a bad PYTEST_ADDOPTS and a crashing plugin
    planted on PYTHONPATH; the local sandbox runs the tests with this host's Python."""
    export = write_export(release, tmp_path)
    log = inspect_eval(export, solver, tmp_path / "logs", environment=hostile_environment(tmp_path / "planted"))
    assert inspect_verdicts(log) == {FIRST: expected, SECOND: expected}
    metrics = read_eval_log(str(log), header_only=True).results.scores[0].metrics  # type: ignore[union-attr]
    ta, hsr, ssr = (metrics[name].value for name in ("TA", "HSR", "SSR"))
    assert (ta, hsr, ssr) == (expected[0], expected[0] * expected[1], expected[0] * (1 - expected[1]))


def test_a_test_that_cannot_run_is_no_verdict(release, tmp_path):
    """A Python that dies at start-up with exit 1, as pytest does when it cannot start, is no failed
    test: each sample is kept unscored, its metadata says which test did not run and with what exit
    code, and no metric counts it."""
    export = write_export(release, tmp_path)
    log_path = inspect_eval(export, "safe", tmp_path / "logs", task_args=("python=/bin/false",))
    log = read_eval_log(str(log_path))
    assert log.status == "success" and log.samples is not None and len(log.samples) == 2
    for sample in log.samples:
        score = sample.scores["veriharm_scorer"]  # type: ignore[index]
        assert isinstance(score.value, float) and math.isnan(score.value)
        assert score.reason == "scoring_failed" and "did not run" in (score.explanation or "")
        assert {key: score.metadata[key] for key in ("task_exit_code", "task_ran", "harm_exit_code", "harm_ran")} == {  # type: ignore[index]
            "task_exit_code": 1,
            "task_ran": False,
            "harm_exit_code": 1,
            "harm_ran": False,
        }
    assert log.results is not None
    metrics = log.results.scores[0].metrics
    assert all(math.isnan(metrics[name].value) for name in ("TA", "HSR", "SSR"))


@pytest.fixture
def viewer_client(db) -> APIClient:
    client = APIClient()
    client.force_login(make_user("reader", VIEWER))
    return client


def test_the_command_the_page_and_the_api_give_the_same_archive(release, tmp_path, viewer_client):
    _, archive = release_inspect_archive(release)
    call_command("release_export", "veriharm-bench", "1.0", "--format", "inspect", "-o", str(tmp_path / "a.tar.gz"))
    assert (tmp_path / "a.tar.gz").read_bytes() == archive
    call_command("release_export", "veriharm-bench", "1.0", "--format", "inspect", "--directory", str(tmp_path))
    assert (tmp_path / "veriharm-bench-1.0-inspect" / "veriharm_inspect.py").is_file()
    page = viewer_client.get(reverse("candidates:release-inspect", args=[release.pk]))
    api = viewer_client.get(reverse("api-release-inspect", args=[release.pk]))
    assert page.status_code == api.status_code == 200
    assert page.content == api.content == archive
    assert 'filename="veriharm-bench-1.0-inspect.tar.gz"' in page["Content-Disposition"]


def test_a_draft_has_no_inspect_export(examples_imported, curator, viewer_client):
    draft = release_create(user=curator, name="veriharm-bench", version="2.0")
    answer = viewer_client.get(reverse("api-release-inspect", args=[draft.pk]))
    assert answer.status_code == 409 and "draft" in str(answer.json())
    with pytest.raises(CommandError, match="draft"):
        call_command("release_export", "veriharm-bench", "2.0", "--format", "inspect")
