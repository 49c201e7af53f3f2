from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from candidates.releases.bundle import BundleRefused
from candidates.releases.bundle_import import release_bundle_import
from candidates.releases.services import HumanRejectedInRelease


class Command(BaseCommand):
    help = "Import a release bundle (.tar.gz): its candidates, then the release itself, frozen."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("bundle", help="a .tar.gz written by release_export or downloaded from a release page")
        parser.add_argument("--user", required=True, help="username recorded as the one who stored the release")
        parser.add_argument(
            "--acknowledge-human-verdict",
            action="store_true",
            help="import even though humans here judged some of its candidates invalid (the release keeps this)",
        )

    def handle(self, *args: Any, bundle: str, user: str, acknowledge_human_verdict: bool, **options: Any) -> None:
        if not Path(bundle).is_file():
            raise CommandError(f"{bundle}: no such file")
        try:
            account = get_user_model().objects.get_by_natural_key(user)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user {user!r}") from None
        try:
            with open(bundle, "rb") as stream:
                summary = release_bundle_import(
                    stream, user=account, acknowledge_human_verdict=acknowledge_human_verdict
                )
        except BundleRefused as refused:
            raise CommandError(f"{bundle} was not imported:\n" + "\n".join(refused.messages)) from None
        except HumanRejectedInRelease as refused:
            raise CommandError(f"{bundle} was not imported: {refused.message} (--acknowledge-human-verdict)") from None
        self.stdout.write(self.style.SUCCESS(f"{bundle}: {summary}"))
