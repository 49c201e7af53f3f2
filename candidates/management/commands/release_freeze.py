from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from candidates.models import Release, ReleaseFrozen
from candidates.releases import selectors as release_selectors
from candidates.releases import services as releases


class Command(BaseCommand):
    help = "Freeze the approved set as release NAME VERSION (creating the draft if needed)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="e.g. veriharm-bench")
        parser.add_argument("version", help="e.g. 1.0")
        parser.add_argument("--user", required=True, help="username recorded as the one who froze it")
        parser.add_argument("--description", default="", help="for a new draft")

    def handle(self, *args: Any, name: str, version: str, user: str, description: str, **options: Any) -> None:
        try:
            account = get_user_model().objects.get_by_natural_key(user)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user {user!r}") from None
        if not account.has_perm("candidates.curate"):
            raise CommandError(f"{user} may not freeze releases (needs candidates.curate)")
        release = Release.objects.filter(name=name, version=version).first()
        try:
            if release is None:
                release = releases.release_create(user=account, name=name, version=version, description=description)
            release = releases.release_freeze(release.pk, user=account)
        except (releases.ReleaseRefused, ReleaseFrozen) as refused:
            raise CommandError(str(refused)) from None
        log = release_selectors.release_changelog(release)
        self.stdout.write(
            self.style.SUCCESS(
                f"Froze {release.label}: {release.items.count()} instances, checksum {release.checksum}; "
                f"{len(log.added)} added, {len(log.removed)} removed, {len(log.changed)} changed"
                + (f" since {log.previous}" if log.previous else "")
            )
        )
