"""Launch the demo's evaluation runs and its generation run once the sandbox system is ready.

`make run` starts `demo_evaluate --wait` beside its background build, so the demo runs start whenever
the sandbox system becomes ready, whichever way it got built (by that build, by
scripts/build_sandbox_image.sh by hand, by `make test`), and never twice: the runs are launched
only if none of that name exists. The generation run goes first: its few searches are done within
minutes, before the evaluation runs' trials, and a refusal of it (say, its searches were run by hand
already) is reported without holding the evaluation runs back.

With --wait it then launches the native harness demo run (Claude Code and Codex against the scripted
demo model, `demo.native`) once both runtimes are built: it waits for them only while a build that
makes them is running, and otherwise says on stderr why the run was not launched and returns, so
the rest of the demo never waits for it.
"""

import time
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Study
from demo.generation import demo_generation_launch
from demo.native.runs import (
    RUNTIMES,
    native_run_exists,
    native_run_launch,
    native_runtimes_coming,
    native_runtimes_status,
)
from demo.runs import demo_runs_launch, demo_runtimes
from demo.users import demo_refusal
from demo.votes import LABELLED_STUDY
from evaluation.agents.sandbox_status import sandbox_status
from evaluation.runs.refusals import LaunchRefused
from veriharm_site.refusals import Refused


class Command(BaseCommand):
    help = (
        "Launch the demo runs (the reference check of the labelled demo study, the scripted demo agents under "
        "V3AST-Bench, and a generation run of the scripted demo proposer and judges against them) unless they "
        "exist; with --wait, then Claude Code and Codex against the scripted demo model once their runtimes are "
        "built; trials and searches run in the Celery worker."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--wait",
            action="store_true",
            help="wait until the sandbox system is ready, then launch; then the native harness demo run once its "
            "runtimes are built, waiting for them while a build that makes them runs (make run)",
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

    def _launch_native(self, poll: float, created_by: Any) -> None:
        if native_run_exists():
            return
        runtimes = " and ".join(RUNTIMES)
        waited = False
        while not (status := native_runtimes_status()).ready:
            if not native_runtimes_coming():
                self.stderr.write(
                    f"The native harness demo run was not launched: the {runtimes} runtimes are not built ({status.state})."
                )
                return
            if not waited:
                waited = True
                self.stdout.write(f"The native harness demo run waits for the {runtimes} runtimes ({status.state}).")
                self.stdout.flush()
            time.sleep(poll)
        try:
            run = native_run_launch(created_by=created_by)
        except LaunchRefused as refused:
            self.stderr.write(f"The native harness demo run was not launched: {refused}")
            return
        if run is not None:
            self.stdout.write(f"Launched {run}: {run.trials.count()} trials")

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
        if options["wait"]:
            self._launch_native(options["poll"], admin)
