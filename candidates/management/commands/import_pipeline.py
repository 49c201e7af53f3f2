from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from candidates.pipeline import format as fmt
from candidates.services import ImportRefused, candidate_import_lines


def _count_lines(paths: list[str]) -> int:
    total = 0
    for path in paths:
        with open(path, "rb") as handle:
            total += sum(1 for line in handle if line.strip())
    return total


class Command(BaseCommand):
    help = "Import pipeline output (JSON Lines, format version 1), all or nothing."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", help="JSON Lines files")
        parser.add_argument("--replace", action="store_true", help="overwrite conflicting stored records")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: Any, files: list[str], replace: bool, no_progress: bool, **options: Any) -> None:
        for path in files:
            if not Path(path).is_file():
                raise CommandError(f"{path}: no such file")
        total = _count_lines(files)
        quiet = no_progress or total < 2000
        # The bar writes to the stream under the wrapper (whose write adds a newline); django-stubs
        # do not declare OutputWrapper._out, so its type is given here.
        stream = cast(TextIO, self.stderr._out)
        with tqdm(total=total, desc="importing", unit="line", disable=quiet, file=stream) as bar:

            def lines() -> Iterator[tuple[fmt.Location, str | bytes]]:
                for path in files:
                    with open(path, "rb") as handle:
                        for location, text in fmt.iter_lines(handle, path):
                            bar.update(1)
                            yield location, text

            try:
                summary = candidate_import_lines(lines(), replace=replace)
            except ImportRefused as refused:
                raise CommandError(f"nothing was imported: {len(refused.errors)} problem(s)\n{refused}") from None
        self.stdout.write(self.style.SUCCESS(f"Imported {', '.join(files)}: {summary}"))
