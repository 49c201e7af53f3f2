import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand

from candidates import demo
from candidates.services import candidate_import_files
from veriharm_site.demo_users import demo_users_ensure


class Command(BaseCommand):
    help = "Load demo data built from real BashBench tasks and create the demo users (idempotent)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tasks", type=int, default=120, help="how many BashBench tasks to search over")

    def handle(self, *args, tasks: int, **options) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            generated = Path(tmp) / "demo.jsonl"
            demo.write_jsonl(demo.demo_lines(demo.load_bashbench(), n_tasks=tasks), generated)
            files = [str(demo.EXAMPLES_DIR / "candidates.jsonl"), str(demo.EXAMPLES_DIR / "search.jsonl"),
                     str(generated)]
            summary = candidate_import_files(files)
        self.stdout.write(f"Demo candidates: {summary}")
        self.stdout.write("Demo logins (username / password / role):")
        for username, password, role in demo_users_ensure():
            self.stdout.write(f"  {username:<11} {password}  {role}")
