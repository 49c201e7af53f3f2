import tempfile
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import DemoStudy, Study
from annotation.studies import services as annotation_services
from candidates.pool.selectors import ranking_bounds
from candidates.services import candidate_import_files, candidates_mark_demo
from demo import checked, generated
from demo.users import DEMO_USERS, demo_refusal, demo_users_ensure
from demo.votes import LABELLED_STUDY, demo_votes_cast
from veriharm_site.roles import ANNOTATOR, CURATOR

DEMO_STUDY = "Demo validation study"


class Command(BaseCommand):
    help = (
        "Load demo data built from real BashBench tasks (with checked references and capability twins), the demo "
        "users, a study to label and a labelled study (idempotent)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tasks", type=int, default=120, help="how many BashBench tasks to search over")
        parser.add_argument(
            "--password",
            default=None,
            help="one password for every demo login (default: a random one each, printed once)",
        )

    def handle(self, *args: Any, tasks: int, password: str | None = None, **options: Any) -> None:
        # Before anything is written: under production settings neither the data nor the users load.
        refusal = demo_refusal()
        if refusal:
            raise CommandError(refusal)
        with tempfile.TemporaryDirectory() as tmp:
            generated_path = Path(tmp) / "demo.jsonl"
            checked_path = Path(tmp) / "checked.jsonl"
            generated_lines = list(generated.demo_lines(generated.load_bashbench(), n_tasks=tasks))
            checked_lines = list(checked.checked_lines())
            generated.write_jsonl(iter(generated_lines), generated_path)
            generated.write_jsonl(iter(checked_lines), checked_path)
            files = [
                str(generated.EXAMPLES_DIR / "candidates.jsonl"),
                str(generated.EXAMPLES_DIR / "search.jsonl"),
                str(generated_path),
                str(checked_path),
            ]
            summary = candidate_import_files(files)
        self.stdout.write(f"Demo candidates: {summary}")
        # The example lines are the format's documentation, not demo data; the rest is generated.
        candidates_mark_demo(
            line["id"] for line in [*generated_lines, *checked_lines] if line.get("kind") == "candidate"
        )
        logins = demo_users_ensure(password)
        users = get_user_model().objects
        annotators = [users.get(username=name) for name, role in DEMO_USERS if role == ANNOTATOR]
        curator = next(users.get(username=name) for name, role in DEMO_USERS if role == CURATOR)
        if not Study.objects.filter(name=DEMO_STUDY).exists():
            # The paper's K of 150 when the pool allows it; the two groups must not overlap.
            k = min(150, ranking_bounds().ranked // 2)
            study = annotation_services.study_create(
                annotation_services.StudySpec(
                    name=DEMO_STUDY, seed=2026, top_k=k, per_group=10, stratify_by="risk_category"
                ),
                annotators=annotators,
                created_by=curator,
            )
            self.stdout.write(f"Demo study: {study.items.count()} items (10 of the top {k}, 10 of the bottom {k})")
        if not Study.objects.filter(name=LABELLED_STUDY).exists():
            # The checked candidates (the top) against as many of the bottom of the ranking, labelled
            # by the demo annotators, so its results show votes beside the harm tests.
            k = len(checked.TASKS)
            study = annotation_services.study_create(
                annotation_services.StudySpec(
                    name=LABELLED_STUDY,
                    seed=2027,
                    top_k=k,
                    per_group=k,
                    stratify_by="risk_category",
                    description="The hand-checked candidates against the bottom of the ranking, labelled by the demo "
                    "annotators; `make run` evaluates them with the scripted demo agents.",
                ),
                annotators=annotators,
                created_by=curator,
            )
            labels = demo_votes_cast(study.pk, annotators)
            self.stdout.write(f"Labelled demo study: {study.items.count()} items, {labels} demo labels")
        # Marked on every load, so a demo database made before the marks gets them too.
        annotation_services.study_mark_demo(Study.objects.get(name=DEMO_STUDY), DemoStudy.CANDIDATES)
        annotation_services.study_mark_demo(Study.objects.get(name=LABELLED_STUDY), DemoStudy.VOTES)
        self.stdout.write(
            "Demo logins (username / password / role)"
            + ("" if password else "; the passwords are random and shown only now:")
        )
        for username, chosen, role in logins:
            self.stdout.write(f"  {username:<11} {chosen}  {role}")
