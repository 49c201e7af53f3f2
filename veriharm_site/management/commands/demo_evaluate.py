"""Launch the demo's evaluation runs and its generation run once the sandbox system is ready.

`make run` starts `demo_evaluate --wait` beside its background build, so the demo runs start whenever
the sandbox system becomes ready, whichever way it got built (by that build, by
scripts/build_sandbox_image.sh by hand, by `make test`), and never twice: the runs are launched
only if none of that name exists. The generation run goes first: its few searches are done within
minutes, before the evaluation runs' trials, and a refusal of it (say, its searches were run by hand
already) is reported without holding the evaluation runs back.
"""

import time
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.demo_votes import LABELLED_STUDY
from annotation.models import Study
from evaluation.demo.generation import demo_generation_launch
from evaluation.demo.runs import demo_runs_launch, demo_runtimes
from evaluation.runs.refusals import LaunchRefused
from evaluation.trials.sandbox_status import sandbox_status
from veriharm_site.demo_users import demo_refusal
from veriharm_site.refusals import Refused


class Command(BaseCommand):
    help = (
        "Launch the demo runs (the reference check of the labelled demo study, the scripted demo agents under "
        "V3AST-Bench, and a generation run of the scripted demo proposer and judges against them) unless they "
        "exist; trials and searches run in the Celery worker."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--wait", action="store_true", help="wait until the sandbox system is ready, then launch (make run)"
        )
        parser.add_argument("--poll", type=float, default=5.0, help="with --wait: seconds between two looks")

    def _wait_for_sandbox(self, poll: float) -> None:
        # The system the demo's agents need, as their trials will ask for it: not the harness
        # runtimes the build makes after it (the scripted agents run none).
        runtimes = demo_runtimes()
        seen = None
        while not (status := sandbox_status(runtimes)).ready:
            if status.state != seen:
                seen = status.state
                self.stdout.write(f"The demo runs wait for the sandbox system ({status.state}).")
                self.stdout.flush()
            time.sleep(poll)

    def handle(self, *args: Any, **options: Any) -> None:
        refusal = demo_refusal()
        if refusal:
            raise CommandError(refusal)
        if options["poll"] <= 0:
            raise CommandError("--poll must be a positive number of seconds")
        if options["wait"]:
            self._wait_for_sandbox(options["poll"])
        study = Study.objects.filter(name=LABELLED_STUDY).first()
        admin = get_user_model().objects.filter(username="admin").first()
        generation, problem = None, ""
        try:
            generation = demo_generation_launch(created_by=admin)
        except Refused as refused:
            problem = refused.message
        try:
            runs = demo_runs_launch(study_id=study.pk if study else None, created_by=admin)
        except LaunchRefused as refused:
            raise CommandError(f"demo runs not launched: {refused}") from None
        if generation is not None:
            self.stdout.write(
                f"Launched {generation} (generation run {generation.pk}): {generation.searches.count()} searches"
            )
        if problem:
            self.stderr.write(f"The demo generation run was not launched: {problem}")
        for run in runs:
            self.stdout.write(f"Launched {run}: {run.trials.count()} trials")
        if not runs and generation is None:
            self.stdout.write("The demo runs exist already.")
