"""Which candidates a run covers: explicit ids, a filter of the ranking, the top-K, a study or a release.

A selection is a small JSON object kept on the run, so the run page can say how its
candidates were chosen. Resolving it is a read; bad input raises SelectionError
with a message naming what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from candidates.hooks.human_verdicts import STUDY_SOURCES, human_studies, study_candidates_in_order
from candidates.models import Candidate, Release
from candidates.pool import selectors as candidate_selectors
from candidates.releases import selectors as releases
from evaluation.trials.pinning import PinnedCandidate, live_candidates

KINDS = ("ids", "filter", "top_k", "study", "release")
FILTER_KEYS = (*candidate_selectors.FILTER_FIELDS, "q", "group", "k")


MAX_NUMBER = 2**31 - 1


class SelectionError(ValueError):
    pass


def _positive_int(value: Any, name: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise SelectionError(f"{name} must be a whole number, got {value!r}") from None
    if number < 1:
        raise SelectionError(f"{name} must be at least 1, got {number}")
    if number > MAX_NUMBER:  # ids and sizes are 32-bit in the database: larger cannot name anything
        raise SelectionError(f"{name} must be at most {MAX_NUMBER}, got {number}")
    return number


def _by_ids(selection: dict[str, Any]) -> list[int]:
    ids = selection.get("ids")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i.strip() for i in ids):
        raise SelectionError("ids must be a non-empty list of candidate ids")
    wanted = list(dict.fromkeys(i.strip() for i in ids))
    found = dict(Candidate.objects.filter(external_id__in=wanted).values_list("external_id", "pk"))
    unknown = [i for i in wanted if i not in found]
    if unknown:
        shown = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
        raise SelectionError(f"no candidate with id {shown}")
    return [found[i] for i in wanted]


def _by_filter(selection: dict[str, Any]) -> list[int]:
    unknown = sorted(set(selection) - {"kind", *FILTER_KEYS})
    if unknown:
        raise SelectionError(f"unknown filter field(s) {', '.join(unknown)}; known: {', '.join(FILTER_KEYS)}")
    group = selection.get("group", "") or ""
    if group not in ("", "top", "bottom", "unranked"):
        raise SelectionError(f"group must be top, bottom or unranked, got {group!r}")
    k = _positive_int(selection["k"], "k") if selection.get("k") not in (None, "") else None
    filters = {name: str(selection.get(name) or "") for name in candidate_selectors.FILTER_FIELDS}
    # bounds named, so that the type checker does not take one of the filters for it.
    queryset = candidate_selectors.candidate_ranking(
        search=str(selection.get("q") or ""), group=group, k=k, bounds=None, import_job=None, **filters
    )
    return list(queryset.values_list("pk", flat=True))


def _by_top_k(selection: dict[str, Any]) -> list[int]:
    return candidate_selectors.candidate_group_ids("top", _positive_int(selection.get("k"), "k"))


def _members(parent: str, members: Callable[[int], list[int] | None], selection: dict[str, Any]) -> list[int]:
    """Candidates of a study's items (read through the candidates app's hook, which annotation fills:
    never annotation's models) or of a release's items."""
    parent_id = _positive_int(selection.get(parent), parent)
    pks = members(parent_id)
    if pks is None:
        raise SelectionError(f"no {parent} with id {parent_id}")
    if not pks:
        raise SelectionError(f"{parent} {parent_id} has no items")
    return pks


def _by_study(selection: dict[str, Any]) -> list[int]:
    if not STUDY_SOURCES:
        raise SelectionError("studys are not available in this installation")
    return _members("study", study_candidates_in_order, selection)


def _by_release(selection: dict[str, Any]) -> list[int]:
    # A draft release has no items: they are written when it is frozen.
    return _members("release", releases.release_member_ids, selection)


@dataclass(frozen=True)
class Pinned:
    """What a run evaluates: each candidate with the record of the revision it runs, and the
    frozen release they come from, if any."""

    candidates: list[PinnedCandidate]
    release: Release | None = None


def release_candidates(release: Release) -> list[PinnedCandidate]:
    """The release's items as frozen: their revision and stored record, not the live candidate."""
    external_ids = dict(release.items.values_list("candidate_id", "external_id"))
    return [
        PinnedCandidate(item.candidate_id, external_ids[item.candidate_id], item.revision, item.record)
        for item in releases.release_item_records(release)
    ]


def _frozen_release(selection: dict[str, Any]) -> Release:
    release_id = _positive_int(selection.get("release"), "release")
    release = Release.objects.filter(pk=release_id).first()
    if release is None:
        raise SelectionError(f"no release with id {release_id}")
    if not release.is_frozen:
        raise SelectionError(f"release {release} is a draft: only a frozen release can be evaluated")
    if not releases.release_checksum_verify(release):
        raise SelectionError(f"release {release}: its items no longer match its checksum; it cannot be evaluated")
    return release


def pinned_for_selection(selection: dict[str, Any]) -> Pinned:
    """The selected candidates with the records a run evaluates: a frozen release's records for a
    release, each candidate's current revision otherwise."""
    if isinstance(selection, dict) and selection.get("kind") == "release":
        release = _frozen_release(selection)
        pinned = release_candidates(release)
        if not pinned:
            raise SelectionError(f"release {release} has no items")
        return Pinned(pinned, release)
    return Pinned(live_candidates(candidates_for_selection(selection)))


def candidates_for_selection(selection: dict[str, Any]) -> list[int]:
    """Primary keys of the selected candidates, in a stable order, without duplicates."""
    if not isinstance(selection, dict):
        raise SelectionError("the selection must be an object with a kind")
    kind = selection.get("kind")
    resolvers = {"ids": _by_ids, "filter": _by_filter, "top_k": _by_top_k, "study": _by_study, "release": _by_release}
    if not isinstance(kind, str) or kind not in resolvers:
        raise SelectionError(f"selection kind must be one of {', '.join(KINDS)}, got {kind!r}")
    pks = list(dict.fromkeys(resolvers[kind](selection)))
    if not pks:
        raise SelectionError("the selection matches no candidate")
    return pks


def releases_available() -> list[tuple[int, str]]:
    """(id, "name version") of the releases with items, for the launch form."""
    return releases.releases_with_items()


def studies_available() -> list[tuple[int, str]]:
    """(id, name) of the annotation studies, for the launch form; empty without the annotation app."""
    return [(study.id, study.name) for study in human_studies()]


def _listed(values: list[str], shown: int = 5) -> str:
    if len(values) <= shown:
        return ", ".join(values)
    return f"{', '.join(values[:shown])} and {len(values) - shown} more"


def selection_in_words(selection: Any) -> str:
    """How a run's candidates were chosen, as a phrase for its page ("the top 150 of the ranking")."""
    if not isinstance(selection, dict) or not selection.get("kind"):
        return "an unrecorded selection"
    kind = selection["kind"]
    if kind == "ids":
        ids = [str(i) for i in selection.get("ids") or []]
        return f"{len(ids)} candidate id{'' if len(ids) == 1 else 's'}: {_listed(ids)}"
    if kind == "top_k":
        return f"the top {selection.get('k')} of the ranking"
    if kind == "study":
        return f"the items of study {selection.get('study')}"
    if kind == "release":
        return f"the records of release {selection.get('release')}"
    if kind == "rerun":
        return f"those of run {selection.get('run')}, which were {selection_in_words(selection.get('of'))}"
    if kind == "filter":
        parts = []
        if selection.get("group"):
            parts.append(f"{selection['group']} group")
        for name in candidate_selectors.FILTER_FIELDS:
            if selection.get(name):
                parts.append(f"{candidate_selectors.FILTER_LABELS[name]} {selection[name]}")
        if selection.get("q"):
            parts.append(f"matching \u201c{selection['q']}\u201d")
        words = "the ranking" + (f" filtered by {', '.join(parts)}" if parts else "")
        return f"the first {selection['k']} of {words}" if selection.get("k") not in (None, "") else words
    return f"a selection of kind {kind}"
