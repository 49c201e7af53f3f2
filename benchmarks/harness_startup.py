#!/usr/bin/env python
"""Each native harness's run inside a sandbox, beside the same harness started on the host.

For each of Claude Code, Codex, OpenCode, Pi and Gemini CLI, the same short scripted conversation
(one shell call writing a file, then a final answer) from the scripted upstream of the tests, in the
harness's own dialect and streamed: once inside a sandbox of each backend in network mode "model",
through the trial's gateway (the recipe's own command, environment and configuration files), and
once on the host, the runtime started from its directory with the same flags and configuration,
pointed at the scripted upstream directly. The host runs and the sandbox runs are interleaved. The
figure is the wall time of the harness's command (the sandbox's own creation is not counted: that is
`sandbox_overhead.py`'s), and the ratio sandbox / host; the goal is at most 1.2. It also prints each
runtime's size.

    python benchmarks/harness_startup.py [--runs 5] [--backends local docker] [--harnesses ...]

Needs root, bubblewrap, a Docker engine and the built sandbox system with its harness runtimes
(scripts/start_docker.sh, scripts/build_sandbox_image.sh).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "veriharm_site.settings.test")

import django  # noqa: E402

django.setup()

from evaluation.agents.recipes import RECIPES  # noqa: E402
from evaluation.agents.recipes.base import HARNESS_TMP, HOME, OUTPUT_DIR, TASK_FILE  # noqa: E402
from evaluation.gateway import Gateway, serve, upstream_from_config  # noqa: E402
from evaluation.sandbox import Environment  # noqa: E402
from evaluation.sandbox.images import harness_root  # noqa: E402
from evaluation.sandbox.network import HARNESS_MOUNT, MODEL_BASE_URL, MODEL_ORIGIN, ModelAccess  # noqa: E402
from evaluation.sandbox.registry import get_backend  # noqa: E402
from tests.evaluation.chat_server import ScriptedChat, chat_server  # noqa: E402

APIS = {"claude-code": "anthropic", "codex": "openai", "opencode": "openai", "pi": "openai", "gemini-cli": "gemini"}
KEY_ENV = "VERIHARM_AGENT_KEY_BENCH"
TASK = "Write hello into out.txt."


def _chat() -> ScriptedChat:
    return ScriptedChat([["printf 'hello\\n' > out.txt"], "Done."], thought="Writing it.", toolless_answer="Title")


def _config(harness: str) -> dict:
    return {"harness": harness, "model": "bench-model", "gateway": {}, "step_limit": 5}


def on_host(harness: str, chat: ScriptedChat) -> float:
    """The recipe's command with the sandbox's paths moved to a scratch directory and the runtime's."""
    recipe = RECIPES[harness]
    config = _config(harness)
    scratch = Path(tempfile.mkdtemp(prefix=f"bench-{harness}-"))
    work = scratch / "work"
    work.mkdir()

    def moved(text: str) -> str:
        base = chat.root_url if APIS[harness] == "gemini" else chat.base_url
        return (
            text.replace(MODEL_BASE_URL, chat.base_url)
            .replace(MODEL_ORIGIN, base if APIS[harness] == "gemini" else chat.root_url)
            .replace(HARNESS_MOUNT, str(harness_root()))
            .replace(OUTPUT_DIR, str(scratch / "harness"))
        )

    for path, text in recipe.files(config).items():
        target = Path(moved(path))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(moved(text))
    for directory in (HOME, HARNESS_TMP):
        Path(moved(directory)).mkdir(parents=True, exist_ok=True)
    Path(moved(TASK_FILE).replace("/tmp/veriharm-task.md", str(scratch / "task.md"))).write_text(TASK)
    command = moved(recipe.command(config)).replace(TASK_FILE, str(scratch / "task.md"))
    env = {"PATH": "/usr/bin:/bin", **{k: moved(v) for k, v in recipe.env(config).items()}}
    started = time.perf_counter()
    done = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, timeout=300)
    took = time.perf_counter() - started
    ok = (work / "out.txt").exists()
    shutil.rmtree(scratch, ignore_errors=True)
    if done.returncode != 0 or not ok:
        raise SystemExit(f"{harness} on the host failed ({done.returncode}): {done.stderr[-800:]!r}")
    return took


def in_sandbox(harness: str, chat: ScriptedChat, backend_name: str) -> float:
    recipe = RECIPES[harness]
    config = _config(harness)
    base = chat.root_url if APIS[harness] == "gemini" else chat.base_url
    upstream = upstream_from_config({"api": APIS[harness], "base_url": base, "api_key_env": KEY_ENV})
    with serve(Gateway(upstream)) as gateway:
        sandbox = get_backend(backend_name).create(
            Environment(files={"README": "bench"}),
            model=ModelAccess(socket_dir=gateway.socket_dir, harness_root=harness_root()),
        )
        try:
            sandbox.write_file(TASK_FILE, TASK.encode(), mode=0o644)
            sandbox.exec(f"mkdir -p {HOME} {HARNESS_TMP}", timeout=30)
            for path, text in recipe.files(config).items():
                sandbox.exec(f"mkdir -p {Path(path).parent}", timeout=30)
                sandbox.write_file(path, text.encode(), mode=0o644)
            started = time.perf_counter()
            done = sandbox.exec(f"cd {sandbox.workdir} && {recipe.command(config)}", 300, env=recipe.env(config))
            took = time.perf_counter() - started
            ok = sandbox.exec(f"test -f {sandbox.workdir}/out.txt", 30).exit_code == 0
        finally:
            sandbox.destroy()
    if done.exit_code != 0 or not ok:
        raise SystemExit(f"{harness} in {backend_name} failed ({done.exit_code}): {done.stderr[-800:]!r}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--backends", nargs="+", default=["local", "docker"])
    parser.add_argument("--harnesses", nargs="+", default=list(APIS))
    args = parser.parse_args()
    os.environ[KEY_ENV] = "sk-bench-not-a-real-key"
    print(
        f"{'harness':12} {'runtime':>8} {'host s':>8} " + " ".join(f"{b + ' s':>9} {'ratio':>6}" for b in args.backends)
    )
    for harness in args.harnesses:
        size = subprocess.run(["du", "-sh", str(harness_root() / harness)], capture_output=True, text=True)
        host: list[float] = []
        inside: dict[str, list[float]] = {b: [] for b in args.backends}
        for _ in range(args.runs):
            with chat_server(_chat()) as chat:
                host.append(on_host(harness, chat))
            for backend in args.backends:
                with chat_server(_chat()) as chat:
                    inside[backend].append(in_sandbox(harness, chat, backend))
        h = statistics.median(host)
        cells = " ".join(f"{statistics.median(v):9.2f} {statistics.median(v) / h:6.2f}" for v in inside.values())
        print(f"{harness:12} {size.stdout.split()[0]:>8} {h:8.2f} {cells}", flush=True)


if __name__ == "__main__":
    main()
