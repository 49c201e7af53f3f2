"""`make run` on a fresh state: the script starts, builds (or finds) the sandbox system, launches the
demo runs, and after a few minutes every demo page has something to show.

Runs scripts/run_local.sh exactly as `make run` does, on a fresh embedded database and broker in a
temporary var directory and a free loopback port. The first test starts with no sandbox system at all
(an empty directory as VERIHARM_SANDBOX_ROOT), so the script's background build makes it while the
demo waits, as on a fresh machine (2-3 minutes, once for this file; no Docker image is made from it,
the machine's own is left alone); the second links the tree `make test` built. Several minutes: the
demo's 176 trials run in its worker.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from demo.checked import TASKS, candidate_id
from demo.generation import GENERATION_RUN
from demo.native import runs as native
from demo.runs import AGENTS_RUN, REFERENCE_RUN
from demo.votes import DISPUTED, LABELLED_STUDY
from evaluation.sandbox import images
from tests.conftest import REPO

pytestmark = pytest.mark.demo

STARTUP_SECONDS = 300
# A ceiling, not a figure: measured 10 minutes at a load average of 12 and 17 at 17 (other suites running).
RUNS_SECONDS = 1800
PASSWORD = "veriharm-demo"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def _run_local(tmp_path: Path, **extra_env: str) -> Iterator[tuple[str, Path, subprocess.Popen]]:
    """scripts/run_local.sh as `make run` starts it, until its server answers; stopped afterwards."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "CELERY_", "VERIHARM_"))}
    env.update({"VERIHARM_VAR_DIR": str(tmp_path / "var"), "PORT": str(port), "VERIHARM_DEMO_TASKS": "30"})
    env.update(extra_env)
    log = open(tmp_path / "run_local.out", "wb")
    process = subprocess.Popen(
        [str(REPO / "scripts" / "run_local.sh")],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        # As from a terminal, whatever this process inherited: Ctrl-C reaches the script.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            assert process.poll() is None, (tmp_path / "run_local.out").read_text()
            try:
                if httpx.get(f"{base}/login/", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not answer: " + (tmp_path / "run_local.out").read_text()
            time.sleep(2)
        yield base, tmp_path / "var", process
    finally:
        # The script's session: the server. The worker and the background build have sessions of their
        # own, which the script's trap stops. Whatever has not stopped after a grace period is killed.
        groups = [process.pid, *_worker_group(tmp_path / "var")]
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_group_alive(g) for g in groups):
            process.poll()
            time.sleep(0.5)
        for group in groups:
            if _group_alive(group):
                os.killpg(group, signal.SIGKILL)
        process.wait()
        log.close()


@pytest.fixture
def make_run(tmp_path: Path):
    """`make run` on a machine where the sandbox system was never built: the tree, the verifier and the
    harness runtimes are made in this test's directory by the script's background build."""
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    # The demo's own harness runtime only: the five npm CLIs' (1.7 GB, built from nothing by every fresh
    # CI machine's own build before the suite) would only add minutes of copying to this test.
    root = {
        "VERIHARM_SANDBOX_ROOT": str(sandbox / "sandbox-root"),
        "VERIHARM_SANDBOX_SKIP_IMAGE": "1",
        "VERIHARM_HARNESSES": "mini-swe-agent",
    }
    with _run_local(tmp_path, **root) as (base, var, _):
        yield base, var


def _worker_group(var: Path) -> list[int]:
    try:
        return [int((var / "worker.pid").read_text())]
    except (OSError, ValueError):
        return []


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _logged_in(base: str, username: str) -> httpx.Client:
    client = httpx.Client(base_url=base, timeout=60, follow_redirects=True)
    page = _get(client, "/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    answer = client.post(
        "/login/",
        data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token},
        headers={"Referer": f"{base}/login/"},
    )
    assert answer.status_code == 200 and "/login/" not in str(answer.url)
    return client


def _get(client: httpx.Client, url: str) -> httpx.Response:
    """GET, waiting out the development server's restarts (its autoreloader follows edits to the code)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return client.get(url)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(2)


def _runs_finished(api: httpx.Client) -> dict[str, dict]:
    runs = {run["name"]: run for run in _get(api, "/api/evaluation/runs/").json()["results"]}
    progress = {name: _get(api, f"/api/evaluation/runs/{run['id']}/progress/").json() for name, run in runs.items()}
    return {name: {**runs[name], "progress": progress[name]} for name in runs}


def test_make_run_fills_every_demo_page(make_run):
    base, var = make_run
    api = httpx.Client(base_url=base, auth=("admin", PASSWORD), timeout=60)
    deadline = time.monotonic() + RUNS_SECONDS
    while True:
        runs = _runs_finished(api)
        if {REFERENCE_RUN, AGENTS_RUN} <= set(runs) and all(
            runs[n]["progress"]["status"] == "finished" for n in (REFERENCE_RUN, AGENTS_RUN)
        ):
            break
        assert time.monotonic() < deadline, f"the demo runs did not finish: {runs}\n" + (
            var / "sandbox-build.log"
        ).read_text(errors="replace")
        time.sleep(10)
    build = (var / "sandbox-build.log").read_text(errors="replace")
    # Nothing was built before: the demo waited while the script's build made the system here.
    assert "The demo runs wait for the sandbox system (building)." in build, build
    assert "root tree ready: " in build and "harness runtime ready: " in build, build
    assert "no Docker image made from" in build, build
    agents_run, reference_run = runs[AGENTS_RUN], runs[REFERENCE_RUN]
    # The generation run, launched first, has finished by now (it is waited for only in case it has not).
    found = re.search(re.escape(GENERATION_RUN) + r" \(generation run (\d+)\)", (var / "sandbox-build.log").read_text())
    assert found, (var / "sandbox-build.log").read_text()
    generation_url = f"/api/evaluation/generation/runs/{found.group(1)}/"
    while (generation := _get(api, generation_url).json())["status"] == "running":
        assert time.monotonic() < deadline, generation
        time.sleep(5)
    # Every trial ended with a verdict and no search as an infrastructure failure: each waited for
    # the part of the sandbox system it runs on, not one of them found it missing.
    for run in (agents_run, reference_run):
        assert run["progress"]["unresolved"] == 0, run
    endings = [s["ending"] for s in generation["searches"]]
    assert "infrastructure" not in endings, generation["searches"]
    assert sum(bool(s["candidate_id"]) for s in generation["searches"]) == 2, generation["searches"]

    admin = _logged_in(base, "admin")
    launch = _get(admin, "/evaluation/launch/").text
    assert 'data-testid="sandbox-status" data-state="ready"' in launch

    # The curators' pages work on the embedded database too: no SQL that only PostgreSQL knows.
    first = _get(api, "/api/candidates/").json()["results"][0]["id"]
    for url in ("/candidates/review/", "/candidates/review/1/", f"/candidates/c/{first}/", "/api/review/queue/"):
        answer = _get(admin, url)
        assert answer.status_code == 200, (url, answer.status_code)
    assert first in _get(admin, "/candidates/review/").text

    # The generation run: a search kept at once, one after feedback, and ones that spent their budget; the
    # kept candidates in the ranking, each page saying it is demo data.
    assert generation["status"] == "finished", generation
    endings = {(s["source_task_id"], s["agent"]): (s["ending"], s["kept_iteration"]) for s in generation["searches"]}
    assert endings[("bashbench-489407", "demo-reckless")] == ("kept", 1)
    assert endings[("bashbench-261162", "demo-reckless")] in (("kept", 2), ("kept", 3))
    assert endings[("bashbench-489407", "demo-careful")] == endings[("bashbench-261162", "demo-careful")]
    assert endings[("bashbench-489407", "demo-careful")] == ("budget_exhausted", None)
    for search in generation["searches"]:
        if search["candidate_id"]:
            page = _get(admin, f"/candidates/c/{search['candidate_id']}/")
            assert page.status_code == 200 and "Synthetic: no model produced its judge scores and Q" in page.text
            assert _get(api, f"/api/candidates/{search['candidate_id']}/").json()["rank"] is not None

    # The run's metrics: one row per scripted agent, with figures.
    metrics = _get(api, f"/api/evaluation/runs/{agents_run['id']}/metrics/").json()
    by_agent = {row["agent"]: row for row in metrics["rows"] if row["breakdown"] == "all"}
    assert {"demo-careful", "demo-sloppy", "demo-reckless"} <= set(by_agent)
    assert by_agent["demo-careful"]["hsr"] == 0 and by_agent["demo-careful"]["ta"] == 1
    assert by_agent["demo-reckless"]["hsr"] == 1
    page = _get(admin, f"/evaluation/runs/{agents_run['id']}/metrics/")
    assert page.status_code == 200 and "demo-reckless" in page.text and 'data-testid="formulas"' in page.text

    # The V3AST matrix: one cell per system, and the careful and reckless cells differ.
    page = _get(admin, f"/evaluation/runs/{agents_run['id']}/v3ast/")
    assert page.status_code == 200
    cells = dict(re.findall(r'data-testid="matrix-cell" data-agent="([^"]+)" data-asr="([^"]*)"', page.text))
    assert set(cells) >= {"demo-careful", "demo-sloppy", "demo-reckless"}
    assert float(cells["demo-careful"]) == 0 and float(cells["demo-reckless"]) == 1

    # The labelled study: votes, the agents' (r_task, r_harm) and the reference check side by side,
    # and the filter shows the items where humans and the harm tests disagree.
    studies = _get(admin, "/annotation/studies/").text
    study_id = re.search(r'href="/annotation/studies/(\d+)/"[^>]*>\s*' + re.escape(LABELLED_STUDY), studies).group(1)
    results = _get(admin, f"/annotation/studies/{study_id}/results/").text
    rows = re.findall(r'<tr class="row-(top|bottom)".*?</tr>', results, re.DOTALL)
    assert len(rows) == 2 * len(TASKS)
    checked_rows = [row for row in re.findall(r'<tr class="row-top".*?</tr>', results, re.DOTALL)]
    assert all("chip-valid" in row or "chip-invalid" in row for row in checked_rows)
    assert all("demo-reckless" in row and "discriminates" in row for row in checked_rows)
    disagree = _get(admin, f"/annotation/studies/{study_id}/results/?disagree=1").text
    shown = set(re.findall(r'class="mono">([^<]+)</a>', disagree.split('data-testid="items"', 1)[1]))
    # The two the annotators judged invalid although their tests discriminate; beside them, generated
    # candidates whose tests the no-op flagged (a test already passing untouched) but humans found valid.
    assert DISPUTED <= shown and len(shown) < len(rows)
    assert not (shown - DISPUTED) & {candidate_id(t) for t in TASKS}


HIDDEN = {"bwrap", "debootstrap", "apt-get", "apt"}
# A ceiling: the server starts, the demo runs wait, then the launch follows the sandbox within a poll.
LAUNCH_SECONDS = 120
STOP_SECONDS = 60


def _path_without(hidden: set[str], into: Path) -> str:
    """A directory of links to every program on PATH but the hidden ones (first on PATH wins)."""
    into.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            if entry.name in hidden or (into / entry.name).exists():
                continue
            if entry.is_file() and os.access(entry.path, os.X_OK):
                (into / entry.name).symlink_to(entry.path)
    return str(into)


def _exited(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def test_make_run_without_bubblewrap_says_so_then_launches_the_demo_once_it_is_there_and_ctrl_c_twice_stops_it(
    tmp_path,
):
    """A machine without bubblewrap and debootstrap (and no apt-get to install them): the terminal says what is
    missing and the command that installs it; once they are there and the sandbox system is built (here: the
    tree `make test` built, linked where this start looks for it), the demo runs start without a restart, once.
    Then Ctrl-C twice, as a terminal sends it to the script's process group, stops the busy worker."""
    bin_dir = tmp_path / "bin"
    built_root = images.sandbox_root()
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    with _run_local(
        tmp_path, PATH=_path_without(HIDDEN, bin_dir), VERIHARM_SANDBOX_ROOT=str(sandbox / "sandbox-root")
    ) as (base, var, process):
        out = (tmp_path / "run_local.out").read_text()
        assert "Evaluations cannot run yet: bubblewrap debootstrap missing" in out, out
        assert "\n    apt-get install -y bubblewrap debootstrap\n" in out, out
        assert "the demo runs start by themselves (no restart needed)" in out, out

        admin = _logged_in(base, "admin")
        api = httpx.Client(base_url=base, auth=("admin", PASSWORD), timeout=60)
        deadline = time.monotonic() + LAUNCH_SECONDS
        while 'data-state="waiting"' not in (launch := _get(admin, "/evaluation/launch/").text):
            assert time.monotonic() < deadline, launch
            time.sleep(2)
        assert "The demo runs start by themselves once it is built" in launch
        assert "apt-get install -y bubblewrap debootstrap" in launch
        time.sleep(6)  # longer than a look of the waiting launcher: still nothing launched
        assert _get(api, "/api/evaluation/runs/").json()["results"] == []

        # The sandbox system is built (the one this test session's sandbox tests use), and bubblewrap and
        # debootstrap are installed.
        for suffix in ("", "-verifier", "-harness"):
            (sandbox / f"sandbox-root{suffix}").symlink_to(f"{built_root}{suffix}")
        for program in ("bwrap", "debootstrap"):
            (bin_dir / program).symlink_to(shutil.which(program))
        # The linked system holds every runtime `make test` built: where Claude Code's and Codex's are among
        # them, the native harness demo run starts too, once, beside the other two.
        expected = [REFERENCE_RUN, AGENTS_RUN]
        if all(images.harness_is_complete(name) for name in native.RUNTIMES):
            expected.append(native.NATIVE_RUN)
        deadline = time.monotonic() + LAUNCH_SECONDS
        while len(names := [r["name"] for r in _get(api, "/api/evaluation/runs/").json()["results"]]) < len(expected):
            assert time.monotonic() < deadline, names
            time.sleep(2)
        assert sorted(names) == sorted(expected)
        assert 'data-state="ready"' in _get(admin, "/evaluation/launch/").text
        out = (tmp_path / "run_local.out").read_text()
        assert out.count(f"Launched {AGENTS_RUN}") == 1 and "The demo runs wait for the sandbox system (waiting)" in out
        assert out.count(f"Launched {GENERATION_RUN}") == 1

        # Ctrl-C twice while the worker runs trials (the generation run's searches come first, in sandboxes too).
        worker = int((var / "worker.pid").read_text())
        deadline = time.monotonic() + LAUNCH_SECONDS
        while not re.search(r"Task evaluation\.(trial|generation_search)_execute", (var / "worker.log").read_text()):
            assert time.monotonic() < deadline, (var / "worker.log").read_text()
            time.sleep(1)
        os.killpg(process.pid, signal.SIGINT)
        deadline = time.monotonic() + STOP_SECONDS
        while "Stopping the worker:" not in (tmp_path / "run_local.out").read_text():
            assert time.monotonic() < deadline, (tmp_path / "run_local.out").read_text()
            time.sleep(0.2)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
        deadline = time.monotonic() + STOP_SECONDS
        while time.monotonic() < deadline and not (process.poll() is not None and _exited(worker)):
            time.sleep(0.5)
        assert process.poll() is not None and _exited(worker), (tmp_path / "run_local.out").read_text()
