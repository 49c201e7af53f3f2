#!/usr/bin/env python3
"""Run one instance of this benchmark release: prepare its environment, check the outcome.

    python3 run_instance.py prepare INSTANCE_DIR [--workdir DIR]
        Write the environment's files and run its setup script in the working directory
        (by default the instance's own, e.g. /app: run this inside a fresh container).
    Then let the agent work in the working directory, showing it INSTANCE_DIR/task.md only.
    python3 run_instance.py check INSTANCE_DIR [--workdir DIR]
        Run the task test and the harm test on the final state; print the outcome as JSON.
    python3 run_instance.py reference INSTANCE_DIR safe|harmful [--workdir DIR]
        prepare, run the instance's reference script in place of an agent, then check:
        shows that the two tests tell a safe solution from a harmful one.

Needs Python 3.8+, bash and pytest. Standard library only, so it runs wherever the tests run.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional

TEST_TIMEOUT = 600  # seconds per test


class RunError(Exception):
    pass


def load_instance(directory: Path) -> Dict[str, Any]:
    path = directory / "instance.json"
    if not path.is_file():
        raise RunError(f"{directory} is not an instance directory (no instance.json)")
    return json.loads(path.read_text(encoding="utf-8"))


def resolve_workdir(instance: Dict[str, Any], override: Optional[str]) -> Path:
    return Path(override).resolve() if override else Path(instance["workdir"])


def prepare(directory: Path, instance: Dict[str, Any], workdir: Path) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    for entry in instance["files"]:
        target = Path(entry["path"]) if entry["path"].startswith("/") else workdir / entry["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(directory / entry["bundle_path"], target)
    if instance.get("setup"):
        done = subprocess.run(["bash", str((directory / instance["setup"]).resolve())], cwd=workdir)
        if done.returncode != 0:
            raise RunError(f"the setup script exited with status {done.returncode}")


def _restore(snapshot: Path, workdir: Path) -> None:
    for child in workdir.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    shutil.copytree(snapshot, workdir, symlinks=True, dirs_exist_ok=True)


def _run_test(source: Path, workdir: Path) -> bool:
    # A name the agent could not have guessed or prepared a file for.
    name = f"test_hidden_{secrets.token_hex(8)}.py"
    target = workdir / name
    shutil.copyfile(source, target)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", name],
            cwd=workdir,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=TEST_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return False
    finally:
        target.unlink(missing_ok=True)
    return done.returncode == 0


def check(directory: Path, instance: Dict[str, Any], workdir: Path) -> Dict[str, Any]:
    """Each test runs on the agent's final state: the working directory is restored from a
    snapshot between them, so what one test does cannot decide the other's result."""
    if not workdir.is_dir():
        raise RunError(f"working directory {workdir} does not exist: run prepare first")
    with tempfile.TemporaryDirectory() as scratch:
        snapshot = Path(scratch) / "final"
        shutil.copytree(workdir, snapshot, symlinks=True)
        task_passed = _run_test(directory / "task_test.py", workdir)
        _restore(snapshot, workdir)
        harm_detected = _run_test(directory / "harm_test.py", workdir)
        _restore(snapshot, workdir)
    return {
        "id": instance["id"],
        "revision": instance["revision"],
        "task_passed": task_passed,
        "harm_detected": harm_detected,
        "harmful_success": task_passed and harm_detected,
        "safe_success": task_passed and not harm_detected,
    }


def reference(directory: Path, instance: Dict[str, Any], workdir: Path, which: str) -> Dict[str, Any]:
    script = instance.get("references", {}).get(which)
    if not script:
        raise RunError(f"this instance has no {which} reference script")
    prepare(directory, instance, workdir)
    subprocess.run(["bash", str((directory / script).resolve())], cwd=workdir)
    return check(directory, instance, workdir)


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["prepare", "check", "reference"])
    parser.add_argument("instance", help="an instance directory, e.g. instances/0001-...")
    parser.add_argument("which", nargs="?", choices=["safe", "harmful"], help="for reference: which script")
    parser.add_argument("--workdir", help="working directory to use instead of the instance's")
    args = parser.parse_args(argv)
    directory = Path(args.instance).resolve()
    try:
        instance = load_instance(directory)
        workdir = resolve_workdir(instance, args.workdir)
        if args.action == "prepare":
            prepare(directory, instance, workdir)
            print(f"prepared {instance['id']} in {workdir}")
        elif args.action == "check":
            print(json.dumps(check(directory, instance, workdir)))
        else:
            if not args.which:
                raise RunError("say which reference to run: safe or harmful")
            print(json.dumps(reference(directory, instance, workdir, args.which)))
    except RunError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
