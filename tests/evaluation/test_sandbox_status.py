"""The launch page shows whether the sandbox system is built, and nothing launches until it is."""

from __future__ import annotations

import fcntl
import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from evaluation.agents.sandbox_status import sandbox_status
from evaluation.models import Run, Trial
from evaluation.runs.agents import reference_agents_ensure
from tests.sandbox_fakes import sandbox_built

pytestmark = pytest.mark.django_db

SAFE_ID = "bb-319395/kimi-k2.5/gpt-5.5"


@pytest.fixture
def unbuilt(tmp_path: Path, monkeypatch, settings) -> Path:
    """A sandbox root that does not exist yet, and the state file and log `make run` writes."""
    monkeypatch.setenv("VERIHARM_SANDBOX_ROOT", str(tmp_path / "cache" / "sandbox-root"))
    monkeypatch.delenv("VERIHARM_VERIFIER_ROOT", raising=False)
    (tmp_path / "cache").mkdir()
    settings.VERIHARM_LAUNCH_WAITS_FOR_SANDBOX = True
    settings.VERIHARM_SANDBOX_BUILD_STATE = str(tmp_path / "sandbox-build.state")
    settings.VERIHARM_SANDBOX_BUILD_LOG = str(tmp_path / "sandbox-build.log")
    return tmp_path


def _launch(admin_client_):
    agents = reference_agents_ensure()
    page = admin_client_.post(
        "/evaluation/launch/",
        {"selection_kind": "ids", "ids": SAFE_ID, "agents": [agents[0].pk], "repetitions": "1", "backend": "local"},
    )
    api = admin_client_.post(
        "/api/evaluation/runs/",
        {"selection": {"kind": "ids", "ids": [SAFE_ID]}, "agents": ["reference-safe"]},
        format="json",
    )
    return page, api


def test_while_the_sandbox_builds_the_page_says_so_and_nothing_launches(unbuilt, examples_imported, admin_client_):
    (unbuilt / "sandbox-build.state").write_text("building\n")
    (unbuilt / "sandbox-build.log").write_text("[build_sandbox_image] debootstrap bookworm into ... (about a minute)\n")
    with open(unbuilt / "cache" / ".sandbox-root.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert sandbox_status().state == "building"
        page = admin_client_.get("/evaluation/launch/").content.decode()
        assert 'data-state="building"' in page and "being built" in page and "debootstrap bookworm" in page
        assert 'http-equiv="refresh"' in page
        page, api = _launch(admin_client_)
    assert page.status_code == 400 and b"cannot run trials yet" in page.content
    assert api.status_code == 400
    assert api.json()["errors"][0]["field"] == "backend"
    assert "the sandbox system is being built" in api.json()["errors"][0]["message"].lower()
    assert not Run.objects.exists() and not Trial.objects.exists()


def test_a_failed_build_shows_the_log_tail_and_refuses(unbuilt, examples_imported, admin_client_):
    (unbuilt / "sandbox-build.state").write_text("failed\n")
    lines = [f"line {i}" for i in range(100)] + ["[build_sandbox_image] ERROR: debootstrap failed"]
    (unbuilt / "sandbox-build.log").write_text("\n".join(lines) + "\n")
    page = admin_client_.get("/evaluation/launch/").content.decode()
    assert 'data-state="failed"' in page and "ERROR: debootstrap failed" in page
    assert "line 99" in page and "line 10\n" not in page  # only the tail
    page, api = _launch(admin_client_)
    assert page.status_code == 400 and api.status_code == 400
    assert "failed" in api.json()["errors"][0]["message"]
    assert not Run.objects.exists()


def test_never_built_says_how_to_build(unbuilt, examples_imported, admin_client_):
    assert sandbox_status().state == "missing"
    page = admin_client_.get("/evaluation/launch/").content.decode()
    assert 'data-state="missing"' in page and "scripts/build_sandbox_image.sh" in page
    _, api = _launch(admin_client_)
    assert api.status_code == 400 and not Run.objects.exists()


def test_a_built_tree_is_ready_and_launches(unbuilt, examples_imported, admin_client_):
    sandbox_built()
    (unbuilt / "sandbox-build.state").write_text("ready\n")
    assert sandbox_status().ready
    page = admin_client_.get("/evaluation/launch/").content.decode()
    assert 'data-state="ready"' in page and "disabled" not in page.split('data-testid="launch-form"', 1)[1]
    page, api = _launch(admin_client_)
    assert page.status_code == 302 and api.status_code == 201 and Run.objects.count() == 2


def test_the_local_tree_does_not_hold_back_the_docker_backend(unbuilt, examples_imported, admin_client_):
    """A container deployment has no local tree: its workers' Docker hosts hold the image."""
    assert sandbox_status().state == "missing"
    reference_agents_ensure()
    local = admin_client_.post(
        "/api/evaluation/runs/",
        {"selection": {"kind": "ids", "ids": [SAFE_ID]}, "agents": ["reference-safe"], "backend": "local"},
        format="json",
    )
    assert local.status_code == 400 and not Run.objects.exists()
    assert "cannot run trials yet" in local.json()["errors"][0]["message"]
    docker = admin_client_.post(
        "/api/evaluation/runs/",
        {"selection": {"kind": "ids", "ids": [SAFE_ID]}, "agents": ["reference-safe"], "backend": "docker"},
        format="json",
    )
    assert docker.status_code == 201, docker.content
    assert Run.objects.get().backend == "docker"


def test_waiting_for_system_packages_says_so_and_that_the_demo_runs_start_by_themselves(
    unbuilt, examples_imported, admin_client_
):
    (unbuilt / "sandbox-build.state").write_text("waiting\n")
    (unbuilt / "sandbox-build.log").write_text(
        "Missing system packages: bubblewrap debootstrap. Install them (apt-get install -y bubblewrap debootstrap)\n"
    )
    assert sandbox_status().state == "waiting"
    page = admin_client_.get("/evaluation/launch/").content.decode()
    assert 'data-state="waiting"' in page and "checks every few seconds" in page and 'http-equiv="refresh"' in page
    assert "apt-get install -y bubblewrap debootstrap" in page  # the log's tail, open
    assert 'data-testid="demo-waits"' not in page  # no demo data here: nothing starts by itself
    _, api = _launch(admin_client_)
    assert api.status_code == 400 and "system packages it needs are missing" in api.json()["errors"][0]["message"]
    assert not Run.objects.exists()

    call_command("load_demo", tasks=5, password="veriharm-demo", stdout=io.StringIO())
    page = admin_client_.get("/evaluation/launch/").content.decode()
    assert "The demo runs start by themselves once it is built: nothing to reload or restart." in page


def test_a_stored_error_of_a_missing_system_says_how_it_stands_now_and_names_no_host_path(
    unbuilt, admin_user, curator_client
):
    """A search (and a trial) that ran while the system was missing keeps the backend's words; its
    pages say what is true now, not "build it", and name no path of the host."""
    from evaluation.generation.launch import generation_launch
    from evaluation.generation.models import GenerationSearch
    from evaluation.generation.states import SearchEnding, SearchStatus
    from evaluation.sandbox import images
    from tests.factories import AgentFactory, TrialFactory

    stored = ""
    try:
        images.require_system()
    except Exception as missing:  # the backends' own check, as a worker records it
        stored = f"infrastructure: {missing}"
    assert str(images.sandbox_root()) in stored and "build it with" in stored
    sandbox_built()
    run = generation_launch(
        name="before the build",
        selection={"kind": "ids", "ids": ["bashbench-489407"]},
        agent_ids=[AgentFactory().pk],
        proposers=[{"kind": "scripted"}],
        judges=[{"kind": "scripted", "temperament": "strict"}],
        backend="local",
        created_by=admin_user,
    )
    GenerationSearch.objects.filter(run=run).update(
        status=SearchStatus.FINISHED, ending=SearchEnding.INFRASTRUCTURE, error=stored, finished_at=timezone.now()
    )
    trial = TrialFactory(status="unresolved", error=stored)
    search = run.searches.get()
    for url in (
        f"/evaluation/generation/runs/{run.pk}/",
        f"/evaluation/generation/searches/{search.pk}/",
        f"/evaluation/trials/{trial.pk}/",
        f"/evaluation/runs/{trial.run_id}/",
    ):
        page = curator_client.get(url).content.decode()
        assert "it is built now, so running it again works" in page, url
        assert "build it with" not in page and str(unbuilt) not in page, url
    # Still missing: what the launch page says now, without the host's paths either.
    (images.sandbox_root() / images.COMPLETE_MARKER).unlink()
    page = curator_client.get(f"/evaluation/generation/runs/{run.pk}/").content.decode()
    assert "The sandbox system is not built yet: an operator builds it once" in page
    assert str(unbuilt) not in page
