from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from candidates.models import Release
from evaluation.imported_runs.readers import READERS, read_log
from evaluation.imported_runs.records import LogRefused
from evaluation.imported_runs.services import run_import


class Command(BaseCommand):
    help = (
        "Import another harness's results into a new run of a frozen release: an Inspect AI eval log "
        "(.eval or .json) or a Harbor job directory. Refused whole, naming what differs, if it ran "
        "another release, edited items or unknown sample ids."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the release's name")
        parser.add_argument("version", help="the release's version")
        parser.add_argument("log", help="an Inspect log file, or a Harbor job directory")
        parser.add_argument("--harness", choices=sorted(READERS), help="default: harbor for a directory, else inspect")
        parser.add_argument("--run-name", default="")
        parser.add_argument("--user", help="the account recorded as having imported it")

    def handle(
        self,
        *args: Any,
        name: str,
        version: str,
        log: str,
        harness: str | None,
        run_name: str,
        user: str | None,
        **options: Any,
    ) -> None:
        release = Release.objects.filter(name=name, version=version).first()
        if release is None:
            raise CommandError(f"no release {name} {version}")
        account = None
        if user is not None:
            account = get_user_model().objects.filter(username=user).first()
            if account is None:
                raise CommandError(f"no user {user}")
        path = Path(log)
        if not path.exists():
            raise CommandError(f"{log}: no such file or directory")
        try:
            imported = read_log(harness or ("harbor" if path.is_dir() else "inspect"), path)
            run = run_import(release.pk, imported, user=account, name=run_name)
        except LogRefused as refused:
            raise CommandError("refused, nothing imported:\n" + "\n".join(refused.messages)) from None
        self.stdout.write(
            self.style.SUCCESS(f"Imported {imported.file_name} as run {run.pk}: {run.trials.count()} trials")
        )
