"""A ranked pool with known Q and strata, annotators, and studies drawn from it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from annotation.labelling import services as labelling_services
from annotation.models import Study
from annotation.studies import services as study_services
from candidates.models import SCORE_KEYS
from tests.conftest import make_user
from tests.factories import CandidateLineFactory, jsonl
from tests.importing import candidate_import_streams
from veriharm_site.roles import ANNOTATOR

RISKS = ("destructive_file_operation", "permission_weakening", "credential_exposure")
AGENTS = ("target-agent-zeta", "target-agent-eta")
PROPOSERS = ("proposer-omega",)
JUDGES = ("judge-sigma", "judge-tau", "judge-upsilon")


def judgements_with_total(total: int) -> list[dict[str, Any]]:
    """Three judges whose fifteen 1-5 scores add up to `total` (15..75), so Q = total / 3."""
    base, extra = divmod(total, 15)
    flat = [base + 1] * extra + [base] * (15 - extra)
    return [
        {"judge": judge, "scores": dict(zip(SCORE_KEYS, flat[5 * i : 5 * i + 5])), "rationale": f"{judge} rationale"}
        for i, judge in enumerate(JUDGES)
    ]


def pool_line(index: int, total: int, task_index: int | None = None) -> dict[str, Any]:
    extra = {} if task_index is None else {"task_index": task_index}
    line = CandidateLineFactory(
        **extra,
        id=f"pool-{index:03d}/{AGENTS[index % len(AGENTS)]}/{PROPOSERS[0]}",
        perturbation=("underspecification", "delegation_of_control")[index % 2],
        risk_category=RISKS[index % len(RISKS)],
        provenance={"target_agent": AGENTS[index % len(AGENTS)], "proposer": PROPOSERS[0], "iteration": 1 + index % 5},
    )
    line["judgements"] = judgements_with_total(total)
    return line


def import_pool(n: int, task_indices: list[int] | None = None) -> None:
    """n ranked candidates; candidate i has judge total 75 - i, so Q = (75 - i) / 3 falls with i."""
    assert n <= 60
    tasks = task_indices or [None] * n
    lines = [pool_line(i, 75 - i, tasks[i % len(tasks)]) for i in range(n)]
    candidate_import_streams([("pool.jsonl", jsonl(*lines).splitlines())])


@pytest.fixture
def pool(db) -> int:
    import_pool(40)
    return 40


@pytest.fixture
def annotators(db) -> list:
    return [make_user(f"annotator-{i}", ANNOTATOR) for i in range(1, 4)]


StudyMaker = Callable[..., Study]


@pytest.fixture
def make_study(curator) -> StudyMaker:
    counter = iter(range(1, 1000))

    def make(annotators: list, **overrides: Any) -> Study:
        spec = {
            "name": f"Study {next(counter)}",
            "seed": 1234,
            "top_k": 10,
            "per_group": 4,
            "stratify_by": "risk_category",
            "annotators_per_item": 3,
        } | overrides
        return study_services.study_create(study_services.StudySpec(**spec), annotators=annotators, created_by=curator)

    return make


def label_all(study: Study, annotator, answer: Callable[[int], tuple[bool, bool, bool]]) -> int:
    """Let one annotator claim and label until nothing is left; `answer` maps item number to (c1, c2, c3)."""
    done = 0
    while (assignment := labelling_services.item_claim_next(study.pk, annotator)) is not None:
        c1, c2, c3 = answer(assignment.item.number)
        labelling_services.label_submit(
            study.pk, assignment.item.token, annotator, labelling_services.LabelInput(c1, c2, c3)
        )
        done += 1
    return done
