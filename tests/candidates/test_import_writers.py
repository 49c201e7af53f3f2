"""The two writers of the import, PostgreSQL's bulk one and the portable one (SQLite's), both run here
on PostgreSQL over the same files: every stored row and rank must come out the same."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from django.db import models, transaction

from candidates.curation.revisions import candidate_revise
from candidates.importing import portable, postgres
from candidates.models import Candidate, Judgement, Revision, Search, SearchAttempt, SourceTask
from candidates.pipeline import format as fmt
from tests.conftest import EXAMPLES
from tests.factories import CandidateLineFactory, jsonl, with_judges

pytestmark = pytest.mark.django_db

# Tied Q (the id decides), no judges (no Q, no rank), several judges, the examples' tasks.
FIRST = [
    with_judges(CandidateLineFactory(id="w-b"), (5, 5, 5, 5, 5), (3, 3, 3, 3, 3)),
    with_judges(CandidateLineFactory(id="w-a"), (4, 4, 4, 4, 4)),
    with_judges(CandidateLineFactory(id="w-c"), (2, 2, 2, 2, 2)),
    dict(CandidateLineFactory(id="w-unjudged"), judgements=[]),
    with_judges(CandidateLineFactory(id="w-Z"), (4, 4, 4, 4, 4)),
]
# Added to the pool: one better than every stored candidate (every rank shifts), one repeated as
# it is stored (unchanged), a search of a factory candidate and one that found nothing.
FOUND = {
    "kind": "search",
    "source_task_id": FIRST[0]["source_task"]["id"],
    "target_agent": "agent-a",
    "proposer": "proposer-a",
    "budget": 3,
    "attempts": [{"iteration": 1, "task_passed": True, "harm_detected": True}],
    "candidate_id": "w-b",
}
ADDED = [
    with_judges(CandidateLineFactory(id="w-top"), (5, 5, 5, 5, 5)),
    FIRST[2],
    # Tied with "w-Z" to the end: code-point order puts "Z" (0x5A) before "z" (0x7A).
    with_judges(CandidateLineFactory(id="w-z"), (4, 4, 4, 4, 4)),
    with_judges(CandidateLineFactory(id="w-mid"), (3, 4, 3, 4, 3)),
    FOUND,
    {
        "kind": "search",
        "source_task_id": FIRST[1]["source_task"]["id"],
        "target_agent": "agent-b",
        "proposer": "proposer-a",
        "budget": 2,
        "attempts": [
            {"iteration": 1, "task_passed": False, "harm_detected": False},
            {"iteration": 2, "task_passed": True, "harm_detected": False},
        ],
        "candidate_id": None,
    },
]


def _replacing() -> list[dict[str, Any]]:
    """Replaced content: a new instruction (a revision) with a lower Q, a Q alone (a rank, no
    revision), the candidate a curator edited, and a search with another budget."""
    lowered = with_judges(dict(FIRST[0], instruction=FIRST[0]["instruction"] + " Mind the logs."), (1, 1, 1, 1, 1))
    rescored = with_judges(FIRST[1], (5, 5, 5, 5, 4))
    edited = dict(FIRST[4], harm_test=FIRST[4]["harm_test"] + "\n# the pipeline's second thoughts\n")
    search = dict(copy.deepcopy(FOUND), budget=4)
    return [lowered, rescored, edited, search]


def _lines(name: str, text: str) -> Iterator[tuple[fmt.Location, str | bytes]]:
    return fmt.iter_lines(text.splitlines(keepends=True), name)


def _files(*paths: Path) -> Iterator[tuple[fmt.Location, str | bytes]]:
    for path in paths:
        yield from fmt.iter_lines(path.read_bytes().splitlines(keepends=True), path.name)


def _natural_keys() -> dict[type[models.Model], dict[int, Any]]:
    """Each row's key by what it is, so rows compare across writers whatever ids they drew."""
    from django.contrib.auth import get_user_model

    return {
        SourceTask: dict(SourceTask.objects.values_list("pk", "external_id")),
        Candidate: dict(Candidate.objects.values_list("pk", "external_id")),
        Search: {
            pk: (task, agent, proposer)
            for pk, task, agent, proposer in Search.objects.values_list(
                "pk", "source_task_external_id", "target_agent", "proposer"
            )
        },
        get_user_model(): dict(get_user_model().objects.values_list("pk", "username")),
    }


def _snapshot() -> dict[str, list[str]]:
    """Every column of every row the import writes, but keys and times; foreign keys by natural key."""
    keys = _natural_keys()
    tables: dict[str, list[str]] = {}
    for model in (SourceTask, Candidate, Judgement, Search, SearchAttempt, Revision):
        fields = [
            f
            for f in model._meta.concrete_fields
            if not f.primary_key and not isinstance(f, models.DateTimeField | models.DateField)
        ]
        rows = []
        for values in model.objects.values_list(*(f.attname for f in fields)):
            row = {}
            for f, value in zip(fields, values):
                if f.is_relation and value is not None:
                    assert f.related_model is not None
                    value = keys[f.related_model][value]  # type: ignore[index]
                row[f.name] = value
            rows.append(json.dumps(row, sort_keys=True, default=str))
        tables[model._meta.db_table] = sorted(rows)
    return tables


class _Undo(Exception):
    pass


def _run(writer: ModuleType, curator: Any) -> tuple[list[str], dict[str, list[str]]]:
    """The whole sequence through one writer; what it stored, then rolled back for the other one."""
    summaries: list[str] = []
    snapshot: dict[str, list[str]] = {}
    try:
        with transaction.atomic():
            summaries.append(
                str(
                    writer.import_lines(
                        _files(EXAMPLES / "candidates.jsonl", EXAMPLES / "search.jsonl"),
                    )
                )
            )
            summaries.append(str(writer.import_lines(_lines("first.jsonl", jsonl(*FIRST)))))
            summaries.append(str(writer.import_lines(_lines("added.jsonl", jsonl(*ADDED)))))
            edited = Candidate.objects.get(external_id="w-Z")
            candidate_revise(
                candidate_id=edited.pk,
                user=curator,
                instruction=edited.instruction,
                harm_test=edited.harm_test + "\n# narrower\n",
                reason="narrower",
                base_revision=edited.revision,
            )
            summaries.append(str(writer.import_lines(_files(EXAMPLES / "candidates_with_twins.jsonl"), replace=True)))
            summaries.append(str(writer.import_lines(_lines("replacing.jsonl", jsonl(*_replacing())), replace=True)))
            snapshot = _snapshot()
            raise _Undo
    except _Undo:
        pass
    assert not Candidate.objects.exists()
    return summaries, snapshot


def test_both_writers_store_the_same_rows_and_ranks(curator):
    bulk_summaries, bulk = _run(postgres, curator)
    portable_summaries, in_memory = _run(portable, curator)

    assert portable_summaries == bulk_summaries
    for table in bulk:
        assert in_memory[table] == bulk[table], table
    # The sequence did what it meant to: ranks shifted, revisions were written, the twins came in.
    candidates = [json.loads(r) for r in bulk[Candidate._meta.db_table]]
    ranks = {c["external_id"]: c["rank"] for c in candidates}
    assert ranks["w-top"] == 1 and ranks["w-unjudged"] is None
    assert ranks["w-z"] == ranks["w-Z"] + 1
    assert sorted(r for r in ranks.values() if r is not None) == list(range(1, len(ranks)))
    revisions = {(r["candidate"], r["number"]) for r in map(json.loads, bulk[Revision._meta.db_table])}
    assert {("w-b", 1), ("w-b", 2), ("w-Z", 2), ("w-Z", 3)} <= revisions
    assert any(c["twin"] for c in candidates)
