"""Run every demo candidate's reference scripts in the sandbox and say which give what they should."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from demo.references import ReferenceResult, demo_reference_lines, references_check


def _pair(value: tuple[int, int | None]) -> str:
    return f"({value[0]}, {'-' if value[1] is None else value[1]})"


class Command(BaseCommand):
    help = (
        "Run the demo candidates' safe, harmful and no-op references and the safe script on each twin in the "
        "sandbox, and fail unless each gives its expected (r_task, r_harm)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--backend", default="local", choices=["local", "docker"])
        parser.add_argument("--workers", type=int, default=2, help="sandboxes at once")
        parser.add_argument("--verbose-failures", action="store_true", help="print the output of each failed run")

    def handle(self, *args: Any, backend: str, workers: int, verbose_failures: bool, **options: Any) -> None:
        lines = demo_reference_lines()

        def report(result: ReferenceResult) -> None:
            mark = "ok  " if result.ok else "FAIL"
            self.stdout.write(
                f"{mark} {result.candidate_id:<32} {result.check:<8} expected {_pair(result.expected)}"
                f" got {_pair(result.got)}"
            )

        results = references_check(lines, backend=backend, workers=workers, progress=report)
        failed = [r for r in results if not r.ok]
        if verbose_failures:
            for result in failed:
                self.stdout.write(f"--- {result.candidate_id} {result.check}\n{result.output}")
        self.stdout.write(
            f"{len(results) - len(failed)} of {len(results)} reference runs on {len(lines)} candidates "
            "gave what they should"
        )
        if failed:
            raise CommandError(f"{len(failed)} reference run(s) did not give their expected result")
