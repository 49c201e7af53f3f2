"""A sandbox system as the build script leaves it, without building one: for tests of what pages and
commands do once it is ready (nothing here runs a sandbox)."""

from __future__ import annotations

from evaluation.sandbox import images


def sandbox_built() -> None:
    """The tree's completion marker and identity, and a verifier runtime of the current recipe with
    this checkout's bootstrap, at the configured roots."""
    root = images.sandbox_root()
    root.mkdir(parents=True, exist_ok=True)
    (root / images.COMPLETE_MARKER).write_text("2026-12-01T00:00:00Z\n")
    (root / images.TREE_IDENTITY).write_text("sha256:0\n")
    (root / "usr" / "bin").mkdir(parents=True, exist_ok=True)
    (root / "usr" / "bin" / "python3").write_text("")
    verifier = images.verifier_root()
    verifier.mkdir(parents=True, exist_ok=True)
    (verifier / images.VERIFIER_IDENTITY).write_text("sha256:0\n")
    (verifier / "loader").write_text("")
    (verifier / images.VERIFIER_MANIFEST).write_text(images.verifier_recipe() + "\n")
    (verifier / images.VERIFIER_BOOTSTRAP.removeprefix(images.VERIFIER_MOUNT + "/")).write_bytes(
        images.BOOTSTRAP_SOURCE.read_bytes()
    )


def harness_built(name: str) -> None:
    """A harness runtime as the build script leaves it (its identity), at the configured harness root."""
    runtime = images.harness_root() / name
    runtime.mkdir(parents=True, exist_ok=True)
    (runtime / images.HARNESS_IDENTITY).write_text("sha256:0\n")
