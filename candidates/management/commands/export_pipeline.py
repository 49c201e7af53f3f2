import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from candidates.pool.selectors import pipeline_export_lines


class Command(BaseCommand):
    help = "Export every candidate and search in the pipeline format (re-imports to the same content)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("-o", "--output", help="file to write (default: standard output)")
        parser.add_argument("--no-searches", action="store_true", help="candidates only")

    def handle(self, *args: Any, output: str | None, no_searches: bool, **options: Any) -> None:
        handle = open(output, "w", encoding="utf-8") if output else sys.stdout
        count = 0
        try:
            for line in pipeline_export_lines(include_searches=not no_searches):
                handle.write(line)
                count += 1
        finally:
            if output:
                handle.close()
        if output:
            self.stdout.write(self.style.SUCCESS(f"Wrote {count} lines to {output}"))
