"""Launch a generation run (Algorithm 1) from the command line; the workers run its searches."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.generation.launch import generation_launch
from evaluation.models import Agent
from veriharm_site.refusals import Refused

SCRIPTED_JUDGES = '[{"kind": "scripted", "temperament": "strict"}, {"kind": "scripted", "temperament": "lenient"}]'


def _json_list(value: str, option: str) -> list[Any]:
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise CommandError(f"{option}: not JSON: {exc}") from None
    if not isinstance(parsed, list):
        raise CommandError(f"{option}: a JSON list of configurations")
    return parsed


class Command(BaseCommand):
    help = (
        "Launch a generation run: one search per (target agent, source task, proposer). Source tasks are "
        "the BashBench tasks and imported ones, chosen by --tasks, --sample or --filter. Proposer and judge "
        "configurations are JSON lists; a key is named by its environment variable (api_key_env) only."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True)
        chosen = parser.add_mutually_exclusive_group(required=True)
        chosen.add_argument("--tasks", help="source task ids, comma-separated (e.g. bashbench-489407)")
        chosen.add_argument("--sample", type=int, help="a seeded sample of this many source tasks")
        chosen.add_argument("--filter", help="source tasks whose instruction contains this text")
        parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
        parser.add_argument("--agents", required=True, help="target agent names, comma-separated")
        parser.add_argument("--proposers", default='[{"kind": "scripted"}]', help="JSON list of configurations")
        parser.add_argument("--judges", default=SCRIPTED_JUDGES, help="JSON list of configurations")
        parser.add_argument("--budget", type=int, help="iterations per search (default 5)")
        parser.add_argument("--perturbations", help="comma-separated kinds (default: both)")
        parser.add_argument("--budget-usd", help="the run's model budget in USD (default: none)")
        parser.add_argument("--backend", choices=["local", "docker"])
        parser.add_argument("--no-reference-check", action="store_true", help="do not check the kept candidates")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["tasks"]:
            selection: dict[str, Any] = {"kind": "ids", "ids": [t.strip() for t in options["tasks"].split(",") if t]}
        elif options["sample"] is not None:
            selection = {"kind": "sample", "size": options["sample"], "seed": options["seed"]}
        else:
            selection = {"kind": "filter", "text": options["filter"]}
        names = [n.strip() for n in options["agents"].split(",") if n.strip()]
        agents = dict(Agent.objects.filter(name__in=names).values_list("name", "pk"))
        missing = [n for n in names if n not in agents]
        if missing:
            raise CommandError(f"no agent named {', '.join(missing)}")
        perturbations = options["perturbations"]
        try:
            run = generation_launch(
                name=options["name"],
                selection=selection,
                agent_ids=[agents[n] for n in names],
                proposers=_json_list(options["proposers"], "--proposers"),
                judges=_json_list(options["judges"], "--judges"),
                budget=options["budget"],
                perturbations=None if perturbations is None else [p.strip() for p in perturbations.split(",")],
                budget_usd=options["budget_usd"],
                backend=options["backend"],
                reference_check=not options["no_reference_check"],
            )
        except Refused as exc:
            raise CommandError(f"{exc.field}: {exc.message}" if exc.field else exc.message) from None
        self.stdout.write(
            self.style.SUCCESS(f"Launched generation run {run.pk} ({run.name}): {run.searches.count()} searches")
        )
