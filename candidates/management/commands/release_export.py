from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from candidates.models import Release
from candidates.releases import selectors as release_selectors
from candidates.releases.bundle import release_bundle
from candidates.releases.interop.exports import HARNESS_EXPORTS


class Command(BaseCommand):
    help = (
        "Export a frozen release as JSONL (pipeline format), as a runnable bundle (.tar.gz), as an "
        "Inspect AI task or as a Harbor dataset (.tar.gz, or a folder with --directory)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("version")
        parser.add_argument("--format", choices=["jsonl", "bundle", *HARNESS_EXPORTS], default="bundle")
        parser.add_argument("-o", "--output", help="file to write (default: <name>-<version>.jsonl or .tar.gz here)")
        parser.add_argument(
            "--directory", help="for inspect and harbor: write the export's folder into this directory instead"
        )

    def handle(
        self,
        *args: Any,
        name: str,
        version: str,
        format: str,
        output: str | None,
        directory: str | None,
        **options: Any,
    ) -> None:
        release = Release.objects.filter(name=name, version=version).first()
        if release is None:
            raise CommandError(f"no release {name} {version}")
        if not release.is_frozen:
            raise CommandError(f"{release.label} is a draft: freeze it first (release_freeze)")
        if directory is not None:
            if format not in HARNESS_EXPORTS:
                raise CommandError("--directory is for --format " + " or ".join(HARNESS_EXPORTS))
            root, files = HARNESS_EXPORTS[format].files(release)
            for relative, content in files.items():
                target = Path(directory) / root / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
                if relative.endswith(".sh"):
                    target.chmod(0o755)
            self.stdout.write(self.style.SUCCESS(f"Wrote {release.label} to {Path(directory) / root}"))
            return
        if format == "bundle":
            default_name, data = release_bundle(release)
        elif format in HARNESS_EXPORTS:
            default_name, data = HARNESS_EXPORTS[format].archive(release)
        else:
            default_name = f"{name}-{version}.jsonl"
            data = "".join(release_selectors.release_jsonl_lines(release)).encode("utf-8")
        path = Path(output or default_name)
        path.write_bytes(data)
        self.stdout.write(self.style.SUCCESS(f"Wrote {release.label} to {path} (release checksum {release.checksum})"))
