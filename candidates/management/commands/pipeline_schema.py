from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from candidates.pipeline.schema import SCHEMA_PATH, schema_text


class Command(BaseCommand):
    help = "Print the pipeline format's JSON Schema (generated from its models), or write it to a file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", "-o", help="write the schema to this path instead of printing it")
        parser.add_argument(
            "--check", action="store_true", help=f"fail if {SCHEMA_PATH.name} in docs/ differs from the models"
        )

    def handle(self, *args: Any, output: str | None, check: bool, **options: Any) -> None:
        text = schema_text()
        if check:
            committed = SCHEMA_PATH.read_text(encoding="utf-8") if SCHEMA_PATH.exists() else ""
            if committed != text:
                raise CommandError(
                    f"{SCHEMA_PATH} differs from the models: run manage.py pipeline_schema -o {SCHEMA_PATH}"
                )
            self.stdout.write(f"{SCHEMA_PATH} matches the models")
            return
        if output:
            Path(output).write_text(text, encoding="utf-8")
            self.stdout.write(f"wrote {output}")
        else:
            self.stdout.write(text, ending="")
