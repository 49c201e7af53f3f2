"""The pool a filtered or chosen study is drawn from: the ranked candidates a filter of the ranking
matches (the ranking's own query parameters), or the candidates a curator chose by id.

Either way the pool is one stratum, named for how it was drawn, and its items' group is
"selected": they were not drawn as top-K or bottom-K, so they predict nothing about validity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ValidationError

from candidates.models import Candidate
from candidates.pool.selectors import FILTER_FIELDS, FILTER_LABELS, candidate_ranking, ranking_bounds
from candidates.ranking.queries import RankingQuery
from veriharm_site.api_errors import flatten_errors
from veriharm_site.queries import query_of

from ..models import DrawnFrom, Group

# A study of more chosen candidates than this is a filter's work, and a form this long is a mistake.
MAX_CHOSEN = 1000
MAX_STRATUM = 200  # StudyItem.stratum
FILTER_RULE = "simple random sample without replacement of the ranked candidates the filter matches; one stratum"
CHOSEN_RULE = "every chosen candidate is an item; one stratum"
CHOSEN_STRATUM = "chosen candidates"


@dataclass(frozen=True)
class Pool:
    """What one group is drawn from: (candidate pk, stratum) pairs, and how many to draw."""

    group: str
    members: list[tuple[int, str]]
    size: int


@dataclass(frozen=True)
class Selection:
    pool: Pool | None
    errors: dict[str, str] = field(default_factory=dict)
    recorded_filter: dict[str, Any] = field(default_factory=dict)
    rule: str = ""
    top_k: int | None = None


def drawn_pool(
    drawn_from: str, ranking_filter: Mapping[str, Any], candidate_ids: Sequence[str], per_group: int
) -> Selection:
    """The pool of a filtered (`per_group` of it drawn) or chosen (all of it) study, or the errors
    naming what is wrong: `filter.<parameter>`, `candidates`, `per_group`."""
    if drawn_from == DrawnFrom.FILTER:
        if candidate_ids:
            return Selection(None, {"candidates": "are for a study of chosen candidates (drawn_from 'chosen')"})
        return _filter_pool(ranking_filter, per_group)
    if ranking_filter:
        return Selection(None, {"filter": "is for a study drawn from a filter (drawn_from 'filter')"})
    return _chosen_pool(candidate_ids)


def _filter_description(query: Mapping[str, Any]) -> str:
    parts = [f"{FILTER_LABELS[name]} = {query[name]}" for name in FILTER_FIELDS if query[name]]
    if query["q"]:
        parts.append(f"search “{query['q']}”")
    if query.get("import_job"):
        parts.append(f"import {query['import_job']}")
    if query["group"]:
        k = query["k"] or settings.VERIHARM_TOP_K
        parts.append("unranked" if query["group"] == "unranked" else f"{query['group']}-{k}")
    return "filter: " + (", ".join(parts) if parts else "every ranked candidate")


def _filter_pool(ranking_filter: Mapping[str, Any], per_group: int) -> Selection:
    known = set(RankingQuery().fields)
    unknown = sorted(set(ranking_filter) - known)
    if unknown:
        return Selection(None, {f"filter.{name}": "is not a parameter of the ranking" for name in unknown[:10]})
    try:
        query = query_of(RankingQuery, dict(ranking_filter))
    except ValidationError as refused:
        return Selection(None, {f"filter.{name}": message for name, message in flatten_errors(refused.detail)})
    filters = {name: query[name] for name in FILTER_FIELDS}
    matched = candidate_ranking(
        search=query["q"], group=query["group"], k=query["k"], bounds=None, import_job=query["import_job"], **filters
    )
    ids = list(matched.filter(rank__isnull=False).values_list("pk", flat=True))
    if not ids:
        return Selection(None, {"filter": "matches no ranked candidate"})
    if per_group > len(ids):
        return Selection(
            None,
            {"per_group": f"cannot draw {per_group} items from the {len(ids)} ranked candidates the filter matches"},
        )
    stratum = _filter_description(query)[:MAX_STRATUM]
    recorded = {name: value for name, value in query.items() if value not in (None, "")}
    top_k = ranking_bounds(query["k"]).k if query["group"] in ("top", "bottom") else None
    return Selection(
        Pool(Group.SELECTED, [(pk, stratum) for pk in ids], per_group),
        recorded_filter=recorded,
        rule=FILTER_RULE,
        top_k=top_k,
    )


def _chosen_pool(candidate_ids: Sequence[str]) -> Selection:
    wanted = list(dict.fromkeys(candidate_id.strip() for candidate_id in candidate_ids if candidate_id.strip()))
    if not wanted:
        return Selection(None, {"candidates": "choose at least one candidate"})
    if len(wanted) > MAX_CHOSEN:
        return Selection(None, {"candidates": f"{len(wanted)} chosen; a study takes at most {MAX_CHOSEN}"})
    found = {
        external_id: (pk, rank)
        for external_id, pk, rank in Candidate.objects.filter(external_id__in=wanted).values_list(
            "external_id", "pk", "rank"
        )
    }
    unknown = [candidate_id for candidate_id in wanted if candidate_id not in found]
    if unknown:
        return Selection(None, {"candidates": "no candidate with the id " + _some(unknown)})
    unranked = [candidate_id for candidate_id in wanted if found[candidate_id][1] is None]
    if unranked:
        return Selection(None, {"candidates": "not ranked (no judges, so no Q to record): " + _some(unranked)})
    return Selection(
        Pool(Group.SELECTED, [(found[candidate_id][0], CHOSEN_STRATUM) for candidate_id in wanted], len(wanted)),
        rule=CHOSEN_RULE,
    )


def _some(ids: list[str], shown: int = 5) -> str:
    listed = ", ".join(repr(candidate_id[:80]) for candidate_id in ids[:shown])
    return listed + (f" and {len(ids) - shown} more" if len(ids) > shown else "")
