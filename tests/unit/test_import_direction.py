"""Imports travel one way (`.importlinter`): annotation and evaluation are built on candidates,
never the reverse, and the site package renders no app's data. A violation fails the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(config), "--no-cache", "--no-logo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_project_keeps_its_import_contracts():
    result = _lint(ROOT / ".importlinter")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_reverse_import_is_reported(tmp_path):
    # The same checker on a contract the code does break (evaluation is built on candidates), so the
    # test above cannot pass by checking nothing.
    config = tmp_path / "reverse.ini"
    config.write_text(
        "[importlinter]\nroot_packages =\n    candidates\n    evaluation\n\n"
        "[importlinter:contract:reverse]\nname = evaluation may not import candidates\ntype = forbidden\n"
        "source_modules =\n    evaluation\nforbidden_modules =\n    candidates\n"
    )
    result = _lint(config)
    assert result.returncode == 1
    assert "BROKEN" in result.stdout and "evaluation.runs.launch -> candidates.models" in result.stdout
