"""Launch, re-run, cancel or follow evaluation runs from the command line.

evaluate --agent reference-safe --agent reference-harmful --ids bb-1 bb-2 [--wait]
evaluate --agent my-agent --top-k 150 --repetitions 4 --backend docker
evaluate --agent my-agent --filter perturbation=underspecification --filter group=top
evaluate --agent my-agent --study 3
evaluate --agent my-agent --release 2
evaluate --agent my-agent --ids bb-1 --protocol v3ast   each candidate's capability twin too, 4 repetitions
evaluate --agent my-agent --top-k 150 --budget 25       model calls stop once they cost 25 USD
evaluate --rerun RUN_ID [--wait]            re-evaluate a whole run (a new run; history kept)
evaluate --rerun-candidate ID [--agent ...]  re-evaluate one candidate
evaluate --cancel RUN_ID
evaluate --follow RUN_ID                     wait for a run and print its metrics
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from candidates.models import Candidate
from evaluation.models import LAUNCHABLE_BACKENDS, Agent, Protocol, Run
from evaluation.runs import exports
from evaluation.runs import selectors as run_selectors
from evaluation.runs.launch import candidate_rerun, run_cancel, run_launch, run_rerun
from evaluation.runs.refusals import LaunchRefused


class Command(BaseCommand):
    help = "Launch, re-run, cancel or follow evaluation runs (trials execute in Celery workers)."

    def add_arguments(self, parser: CommandParser) -> None:
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument("--ids", nargs="+", metavar="ID", help="candidate ids")
        what.add_argument("--top-k", type=int, metavar="K", help="the top K of the ranking")
        what.add_argument(
            "--filter",
            action="append",
            metavar="FIELD=VALUE",
            help="a filter of the ranking (perturbation, risk_category, target_agent, proposer, q, group, k)",
        )
        what.add_argument("--study", type=int, metavar="STUDY_ID", help="the candidates of an annotation study")
        what.add_argument("--release", type=int, metavar="RELEASE_ID", help="the items of a benchmark release")
        what.add_argument("--rerun", type=int, metavar="RUN_ID", help="re-run a whole run as a new run")
        what.add_argument("--rerun-candidate", metavar="ID", help="re-evaluate one candidate")
        what.add_argument("--cancel", type=int, metavar="RUN_ID", help="cancel a run")
        what.add_argument("--follow", type=int, metavar="RUN_ID", help="wait for a run to finish")
        parser.add_argument("--agent", action="append", default=[], help="agent name (repeatable)")
        parser.add_argument("--repetitions", type=int, help="default 1, or 4 under --protocol v3ast")
        parser.add_argument(
            "--protocol",
            choices=Protocol.values,
            default=Protocol.VERIHARM,
            help="v3ast: run each candidate's capability twin beside it",
        )
        parser.add_argument("--backend", choices=LAUNCHABLE_BACKENDS, help="sandbox backend (default from settings)")
        parser.add_argument("--name", default="")
        parser.add_argument("--test-timeout", type=int, help="seconds each test may run")
        parser.add_argument(
            "--budget", metavar="USD", help="what the run's model calls may cost in all; the gateway stops there"
        )
        parser.add_argument("--wait", action="store_true", help="wait until the run finishes, then print its metrics")
        parser.add_argument("--timeout", type=float, default=0, help="with --wait: give up after this many seconds")

    def _agent_ids(self, names: list[str]) -> list[int]:
        found = dict(Agent.objects.filter(name__in=names).values_list("name", "pk"))
        unknown = [n for n in names if n not in found]
        if unknown:
            known = ", ".join(Agent.objects.order_by("name").values_list("name", flat=True))
            raise CommandError(f"no agent named {', '.join(unknown)} (known: {known})")
        return [found[n] for n in names]

    def _selection(self, options: dict[str, Any]) -> dict[str, Any]:
        if options["ids"]:
            return {"kind": "ids", "ids": options["ids"]}
        if options["top_k"] is not None:
            return {"kind": "top_k", "k": options["top_k"]}
        if options["study"] is not None:
            return {"kind": "study", "study": options["study"]}
        if options["release"] is not None:
            return {"kind": "release", "release": options["release"]}
        selection: dict[str, Any] = {"kind": "filter"}
        for item in options["filter"]:
            key, sep, value = item.partition("=")
            if not sep:
                raise CommandError(f"--filter {item!r}: write FIELD=VALUE")
            selection[key.strip()] = value.strip()
        return selection

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            run = self._dispatch(options)
        except LaunchRefused as refused:
            raise CommandError("nothing was launched: " + "; ".join(refused.errors)) from None
        if run is None:
            return
        if options["wait"] or options["follow"]:
            self._wait(run, options["timeout"])

    def _dispatch(self, options: dict[str, Any]) -> Run | None:
        if options["cancel"] is not None:
            run = self._run(options["cancel"])
            ended = run_cancel(run)
            self.stdout.write(f"Cancelled {run}: {ended} queued trial(s) ended; running ones stop at their next step.")
            return None
        if options["follow"] is not None:
            return self._run(options["follow"])
        if options["rerun"] is not None:
            run = run_rerun(self._run(options["rerun"]), backend=options["backend"])
        elif options["rerun_candidate"]:
            candidate = Candidate.objects.filter(external_id=options["rerun_candidate"]).first()
            if candidate is None:
                raise CommandError(f"no candidate with id {options['rerun_candidate']}")
            run = candidate_rerun(
                candidate,
                agent_ids=self._agent_ids(options["agent"]) if options["agent"] else None,
                repetitions=options["repetitions"] or 1,
                backend=options["backend"],
            )
        else:
            if not options["agent"]:
                raise CommandError("name at least one --agent")
            run = run_launch(
                selection=self._selection(options),
                agent_ids=self._agent_ids(options["agent"]),
                repetitions=options["repetitions"],
                backend=options["backend"],
                name=options["name"],
                test_timeout=options["test_timeout"],
                protocol=options["protocol"],
                budget_usd=options["budget"],
            )
        self.stdout.write(f"Launched {run} (id {run.pk}): {run.trials.count()} trial(s) on the {run.backend} backend.")
        if run.notes:
            self.stdout.write(run.notes)
        return run

    def _run(self, pk: int) -> Run:
        try:
            return Run.objects.get(pk=pk)
        except Run.DoesNotExist:
            raise CommandError(f"no run with id {pk}") from None

    def _wait(self, run: Run, timeout: float) -> None:
        started = time.monotonic()
        last = None
        while True:
            progress = run_selectors.run_progress(run)
            line = (
                f"{progress['status']}: {progress['done']} done, {progress['running']} running, "
                f"{progress['queued']} queued, {progress['unresolved']} unresolved, {progress['cancelled']} cancelled"
            )
            if line != last:
                self.stdout.write(line)
                last = line
            if progress["status"] in ("finished", "cancelled"):
                break
            if timeout and time.monotonic() - started > timeout:
                raise CommandError(f"{run} did not finish within {timeout:.0f}s (it goes on in the workers)")
            time.sleep(1.0)
        self.stdout.write(exports.metrics_csv(run))
