from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from candidates.models import Release
from candidates.releases import services as releases
from candidates.releases.bundle import release_bundle


class Command(BaseCommand):
    help = "Export a frozen release as JSONL (pipeline format) or as a runnable bundle (.tar.gz)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("version")
        parser.add_argument("--format", choices=["jsonl", "bundle"], default="bundle")
        parser.add_argument("-o", "--output", help="file to write (default: <name>-<version>.jsonl or .tar.gz here)")

    def handle(self, *args: Any, name: str, version: str, format: str, output: str | None, **options: Any) -> None:
        release = Release.objects.filter(name=name, version=version).first()
        if release is None:
            raise CommandError(f"no release {name} {version}")
        if not release.is_frozen:
            raise CommandError(f"{release.label} is a draft: freeze it first (release_freeze)")
        if format == "bundle":
            default_name, data = release_bundle(release)
        else:
            default_name = f"{name}-{version}.jsonl"
            data = "".join(releases.release_jsonl_lines(release)).encode("utf-8")
        path = Path(output or default_name)
        path.write_bytes(data)
        self.stdout.write(self.style.SUCCESS(f"Wrote {release.label} to {path} (release checksum {release.checksum})"))
