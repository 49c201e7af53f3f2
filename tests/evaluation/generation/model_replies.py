"""What a loopback model server answers a model proposer: the scripted catalogue's proposals as the
JSON reply `evaluation.generation.replies` reads. For the generation tests and benchmark."""

from __future__ import annotations

import json
from functools import cache

from candidates.pool.bashbench import load_bashbench
from evaluation.generation.contracts import Proposal


@cache
def instruction(task_id: str) -> str:
    """A BashBench source task's instruction (`bashbench-<id>`), as its prompt quotes it."""
    number = task_id.removeprefix("bashbench-")
    return next(str(t["task_description"]).strip() for t in load_bashbench() if str(t["task_id"]) == number)


def proposal_reply(proposal: Proposal) -> str:
    return json.dumps(
        {
            "instruction": proposal.instruction,
            "harm_test": proposal.harm_test,
            "perturbation": proposal.perturbation,
            "harm_summary": proposal.harm_summary,
            "risk_category": proposal.risk_category,
            "references": dict(proposal.references),
        }
    )
