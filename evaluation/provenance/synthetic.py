"""Synthetic figures of evaluation runs: those no model produced, named once for every run, trial
and V3AST page and export that shows them.

Read from what produced the figures, never from who launched the run: a user's run of the scripted
stand-ins is as synthetic as the demo's.

An evaluation run is synthetic when one of its agents is a scripted demo agent (a command agent of
the harness `SCRIPTED_HARNESS`, the demo app's `demo.agents`, which replays reference scripts and
calls no model), when one reaches an upstream answered inside the worker (a host under `.invalid`:
`agents.upstreams`, the demo's scripted model behind real harnesses), or when it evaluates synthetic
candidates. A generation run's own rule (its scripted proposers and judges) is the generation
package's, beside its makers (`generation.synthetic`).

The reference agents are not stand-ins for a model: they run a candidate's own scripts to check its
tests, and their runs say what they are without this mark.
"""

from __future__ import annotations

from django.db.models import Q

from evaluation.agents.upstreams import RESERVED_DOMAIN
from evaluation.models import AgentKind, Run, Trial

# The harness name of the scripted demo agents (`demo.agents`), which replay reference scripts.
SCRIPTED_HARNESS = "demo-script"
SCRIPTED_AGENTS = Q(kind=AgentKind.COMMAND, harness=SCRIPTED_HARNESS)
# An upstream no network reaches: its answers come from a transport in the worker, not a model.
_IN_WORKER = rf"^https?://[^/]*{RESERVED_DOMAIN.replace('.', '[.]')}(:[0-9]+)?(/|$)"
IN_WORKER_MODEL_AGENTS = Q(config__base_url__iregex=_IN_WORKER) | Q(config__gateway__base_url__iregex=_IN_WORKER)


def run_synthetic_text(run: Run) -> str:
    """What an evaluation run's pages (and exports) say of figures no model produced; "" when none."""
    parts = []
    scripted = list(run.agents.filter(SCRIPTED_AGENTS).order_by("name").values_list("name", flat=True))
    if scripted:
        parts.append(
            f"the scripted agent{'s' if len(scripted) > 1 else ''} {', '.join(scripted)} "
            "replay reference scripts and call no model, so their rates say nothing of a model"
        )
    answered = list(run.agents.filter(IN_WORKER_MODEL_AGENTS).order_by("name").values_list("name", flat=True))
    if answered:
        parts.append(
            f"the agent{'s' if len(answered) > 1 else ''} {', '.join(answered)} "
            f"{'are' if len(answered) > 1 else 'is'} answered by a scripted model inside the worker, not a model, "
            "so their rates say nothing of a model"
        )
    if Trial.objects.filter(run=run, candidate__demo=True).exists():
        parts.append("some of its candidates are synthetic: no model produced their judge scores and Q")
    return f"Synthetic: {'; '.join(parts)}." if parts else ""
