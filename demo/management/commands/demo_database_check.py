from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from demo.database import demo_database_set_aside, demo_database_stale


class Command(BaseCommand):
    help = (
        "Say whether the database can be migrated; with --recreate, set aside a local demo database "
        "(SQLite under var/) whose migration history predates accounts.User so that migrate makes a new one."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--recreate",
            action="store_true",
            help="move a stale demo database aside (never deleted) instead of failing",
        )

    def handle(self, *args: Any, recreate: bool = False, **options: Any) -> None:
        stale = demo_database_stale()
        if stale is None:
            return
        if stale.path is None:
            raise CommandError(
                f"{stale.problem}\nThis database was migrated before the project's own user model (accounts.User). "
                "It is not the local demo database, so nothing was changed: see 'A database made before "
                "accounts.User' in docs/development.md."
            )
        if not recreate:
            raise CommandError(
                f"{stale.problem}\n{stale.path} was made before the project's own user model (accounts.User) and "
                "cannot be migrated. It holds only demo data: rerun with --recreate (make run does) to set it aside."
            )
        aside = demo_database_set_aside(stale)
        self.stdout.write(
            f"{stale.path} was made before the project's own user model (accounts.User) and cannot be migrated.\n"
            f"It held only the demo data and demo logins that `make run` loads: it is kept in {aside}\n"
            "(with the queued tasks, imports and final states that name its rows) and a new one is made now."
        )
