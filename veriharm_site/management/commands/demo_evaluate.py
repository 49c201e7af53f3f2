"""Launch the demo's evaluation runs once the sandbox system is ready (`make run` calls it after its build)."""

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.demo_votes import LABELLED_STUDY
from annotation.models import Study
from evaluation.demo.runs import demo_runs_launch
from evaluation.runs import LaunchRefused
from veriharm_site.demo_users import demo_refusal


class Command(BaseCommand):
    help = (
        "Launch the demo runs (the reference check of the labelled demo study, the scripted demo agents under "
        "V3AST-Bench) unless they exist; trials run in the Celery worker."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        refusal = demo_refusal()
        if refusal:
            raise CommandError(refusal)
        study = Study.objects.filter(name=LABELLED_STUDY).first()
        admin = get_user_model().objects.filter(username="admin").first()
        try:
            runs = demo_runs_launch(study_id=study.pk if study else None, created_by=admin)
        except LaunchRefused as refused:
            raise CommandError(f"demo runs not launched: {refused}") from None
        for run in runs:
            self.stdout.write(f"Launched {run}: {run.trials.count()} trials")
        if not runs:
            self.stdout.write("The demo runs exist already.")
