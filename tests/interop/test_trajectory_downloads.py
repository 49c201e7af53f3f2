"""Where users get a run's trajectories: the run page's two links and their API twins, for the
roles that read runs; a run that cannot be one Inspect log is refused with a 400 saying why."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.urls import reverse

from tests.factories import AgentFactory, TrialFactory
from tests.hostile.seed import table_counts
from tests.interop.recorded_runs import archive_members, release_run
from tests.interop.support import freeze_examples

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(examples_imported, curator):
    return release_run(freeze_examples(curator))


def test_the_run_page_offers_both_exports_and_they_download(run, curator_client):
    page = curator_client.get(reverse("evaluation:run", args=[run.pk])).content.decode()
    atif_url, inspect_url = (
        reverse("evaluation:run-atif", args=[run.pk]),
        reverse("evaluation:run-inspect", args=[run.pk]),
    )
    assert f'href="{atif_url}"' in page and f'href="{inspect_url}"' in page
    for url in (atif_url, reverse("api-evaluation-run-atif", args=[run.pk])):
        answer = curator_client.get(url)
        assert answer.status_code == 200 and answer["Content-Type"] == "application/gzip"
        assert f'filename="veriharm-run-{run.pk}-atif.tar.gz"' in answer["Content-Disposition"]
        assert "manifest.json" in archive_members(answer.content)
    for url in (inspect_url, reverse("api-evaluation-run-inspect", args=[run.pk])):
        answer = curator_client.get(url)
        assert answer.status_code == 200 and answer["Content-Type"] == "application/zip"
        assert "header.json" in zipfile.ZipFile(io.BytesIO(answer.content)).namelist()


def test_a_run_of_two_agents_as_one_inspect_log_is_a_400_naming_why(run, curator_client):
    TrialFactory(run=run, agent=AgentFactory(name="other"), candidate=run.trials.first().candidate, status="done")
    before = table_counts()
    answer = curator_client.get(reverse("api-evaluation-run-inspect", args=[run.pk]))
    assert answer.status_code == 400
    assert "ran 2 agents" in answer.json()["errors"][0]["message"]
    page = curator_client.get(reverse("evaluation:run-inspect", args=[run.pk]))
    assert page.status_code == 400 and "ran 2 agents" in page.content.decode()
    assert curator_client.get(reverse("api-evaluation-run-inspect", args=[99999])).status_code == 404
    assert table_counts() == before
