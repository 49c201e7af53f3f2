"""The exports run as researchers run them, with Docker: `harbor run -e docker` on the Harbor dataset
and `inspect eval` in Inspect's docker sandbox on the Inspect task, each with the safe reference,
the harmful one and no agent, on three items (the same-state trap among them). The references get
(1, 0), (1, 1) and (0, 0) on every item, and each log imports back as a run with the tool's own
verdicts. Each harness's three runs go in parallel (they mostly wait on Docker)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path

import pytest

from candidates.releases.selectors import release_item_records
from evaluation.imported_runs.readers import read_log
from evaluation.imported_runs.services import run_import
from evaluation.models import Run
from tests.interop.support import (
    FIRST,
    SECOND,
    TRAP,
    freeze_three,
    inspect_eval,
    inspect_verdicts,
    write_export,
    write_harbor_export,
)

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox]

REPO = Path(__file__).resolve().parents[2]
HARBOR = Path(sys.executable).with_name("harbor")
SCRIPT_AGENT = "tests.interop.harbor_agents:ScriptAgent"
EXPECTED = {"safe": (1, 0), "harmful": (1, 1), "noop": (0, 0)}
ITEMS = (FIRST, SECOND, TRAP)
# What a host could hand Harbor's verifier (`--ve`): each alone stops pytest before any test runs
# (a usage error, a Python that cannot start, a plugin that does not exist) unless the test runs in
# a clean environment.
HOSTILE_VERIFIER_ENV = (
    "DJANGO_SETTINGS_MODULE=veriharm_nowhere.settings",
    "PYTEST_ADDOPTS=--no-such-option",
    "PYTHONHOME=/nowhere",
    "PYTEST_PLUGINS=veriharm_nowhere_plugin",
)


@pytest.fixture
def release(curator):
    docker = subprocess.run(["docker", "image", "inspect", "veriharm-sandbox:bookworm"], capture_output=True)
    # `make test` starts the engine, links the Compose plugin and builds the image first.
    assert docker.returncode == 0, "the sandbox image veriharm-sandbox:bookworm is not built on this Docker host"
    compose = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True)
    assert compose.returncode == 0, "no `docker compose` (scripts/install_compose_plugin.sh links it)"
    return freeze_three(curator)


def _verdicts(run: Run) -> dict[str, tuple[int | None, int | None]]:
    return {t.candidate.external_id: (t.r_task, t.r_harm) for t in run.trials.select_related("candidate")}


def harbor_run(dataset: Path, agent: list[str], out: Path, *, task: str | None = None) -> Path:
    """`harbor run` of the dataset (or one task of it) with its docker environment and a hostile
    verifier environment; the job's directory."""
    done = subprocess.run(
        [str(HARBOR), "run", "-p", str(dataset / task if task else dataset), *agent, "-e", "docker"]
        + ["-o", str(out), "-n", "3", "-q", *(arg for value in HOSTILE_VERIFIER_ENV for arg in ("--ve", value))],
        cwd=REPO,
        # The agent module is imported from this checkout; LiteLLM (a Harbor dependency) reads its
        # bundled price list instead of fetching it.
        env=dict(os.environ, PYTHONPATH=str(REPO), LITELLM_LOCAL_MODEL_COST_MAP="True"),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (job,) = [p for p in out.iterdir() if p.is_dir()]
    return job


def harbor_trials(job: Path, dataset: Path) -> dict[str, dict]:
    """Each trial's result.json by the item its task is."""
    items = {t["folder"]: t["id"] for t in json.loads((dataset / "veriharm.json").read_text())["tasks"]}
    trials = {}
    for result in job.glob("*/result.json"):
        trial = json.loads(result.read_text())
        trial["verifier_dir"] = result.parent / "verifier"
        trials[items[trial["task_name"].rsplit("-", 1)[1]]] = trial
    return trials


def _scripts(release, which: str, into: Path) -> Path:
    """The file ScriptAgent reads: each item's reference script `which`, by its instruction."""
    scripts = {
        hashlib.sha256(item.record["instruction"].strip().encode()).hexdigest(): item.record["references"][which]
        for item in release_item_records(release)
    }
    path = into / f"{which}.json"
    path.write_text(json.dumps(scripts))
    return path


def test_harbor_run_with_docker_scores_the_references_and_imports_back(release, tmp_path):
    """Also, beside them, an agent that removes python3 from the trap's sandbox: neither test can
    run, so there is no reward for Harbor to count (its verifier failed: RewardFileNotFoundError),
    and veriharm.json says why."""
    dataset = write_harbor_export(release, tmp_path / "export")
    trap = next(t["folder"] for t in json.loads((dataset / "veriharm.json").read_text())["tasks"] if t["id"] == TRAP)
    breaking = tmp_path / "breaking.json"
    breaking.write_text(
        json.dumps(
            dict.fromkeys(json.loads(_scripts(release, "safe", tmp_path).read_text()), "rm -f /usr/bin/python3*")
        )
    )
    runs = {
        "safe": (["-a", "oracle"], None),
        "harmful": (["-a", SCRIPT_AGENT, "--ak", f"scripts={_scripts(release, 'harmful', tmp_path)}"], None),
        "noop": (["-a", "nop"], None),
        "broken": (["-a", SCRIPT_AGENT, "--ak", f"scripts={breaking}"], trap),
    }
    with ThreadPoolExecutor(len(runs)) as pool:
        jobs = dict(
            zip(runs, pool.map(lambda w: harbor_run(dataset, runs[w][0], tmp_path / "jobs" / w, task=runs[w][1]), runs))
        )
    for which, expected in EXPECTED.items():
        trials = harbor_trials(jobs[which], dataset)
        rewards = {item: trial["verifier_result"]["rewards"] for item, trial in trials.items()}
        assert rewards == {item: dict(zip(("task", "harm"), expected)) for item in ITEMS}, which
        for trial in trials.values():
            codes = json.loads((trial["verifier_dir"] / "veriharm.json").read_text())
            assert codes["task_ran"] is codes["harm_ran"] is True and codes["task_tests"] >= 1, codes
        run = run_import(release.pk, read_log("harbor", jobs[which]))
        assert _verdicts(run) == {item: expected for item in ITEMS}, which
        # What ran it, as the job says: the Harbor of its lock.json, its docker environment.
        assert (run.source["harness_version"], run.source["sandbox"]) == (version("harbor"), "docker"), run.source

    (broken,) = harbor_trials(jobs["broken"], dataset).values()
    assert broken["verifier_result"] is None
    assert broken["exception_info"]["exception_type"] == "RewardFileNotFoundError"
    assert not (broken["verifier_dir"] / "reward.json").exists()
    assert json.loads((broken["verifier_dir"] / "veriharm.json").read_text()) == {
        "task_exit_code": 127,
        "task_ran": False,
        "task_tests": None,
        "harm_exit_code": 127,
        "harm_ran": False,
        "harm_tests": None,
    }
    # Imported, the trial whose tests could not run is a test error, no verdict.
    (trial,) = run_import(release.pk, read_log("harbor", jobs["broken"])).trials.all()
    assert (trial.end, trial.r_task, trial.r_harm) == ("test_error", None, None), trial.outcome_reason


def test_inspect_eval_in_its_docker_sandbox_scores_the_references_and_imports_back(release, tmp_path):
    export = write_export(release, tmp_path / "export")
    with ThreadPoolExecutor(len(EXPECTED)) as pool:
        logs = dict(
            zip(
                EXPECTED,
                pool.map(lambda s: inspect_eval(export, s, tmp_path / f"logs-{s}", sandbox="docker"), EXPECTED),
            )
        )
    for solver, log in logs.items():
        assert inspect_verdicts(log) == {item: EXPECTED[solver] for item in ITEMS}, solver
        run = run_import(release.pk, read_log("inspect", log))
        assert _verdicts(run) == inspect_verdicts(log), solver
