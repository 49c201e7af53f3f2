"""A search held by one worker at a time, as a trial is (`evaluation.trials.leases`): a claim hands
out a fresh token, a heartbeat keeps it, and every write of the search is conditional on it, so a
second delivery of its task, or a worker that lost its lease, records nothing."""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from evaluation.trials.heartbeat import LeaseHeartbeat

from .models import GenerationSearch
from .states import SearchStatus

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Claim:
    search_id: int
    token: str
    # The previous holder's lease had expired (its worker died): its sandboxes may be left over.
    took_over: bool = False


class ClaimRefused(StrEnum):
    MISSING = "missing"
    FINISHED = "finished"
    BUSY = "busy"  # another worker holds a live lease


def search_claim(search_id: int, worker: str = "", *, abandoned: str = "") -> Claim | ClaimRefused:
    """Take a search for this worker, or say why not. `abandoned`: the token of an attempt of this
    task that lost the database; while the search still holds it nobody else took it over."""
    with transaction.atomic():
        search = GenerationSearch.objects.select_for_update().filter(pk=search_id).first()
        if search is None:
            return ClaimRefused.MISSING
        if search.status == SearchStatus.FINISHED:
            return ClaimRefused.FINISHED
        now = timezone.now()
        took_over = False
        if search.status == SearchStatus.RUNNING:
            taken_back = bool(abandoned) and search.lease_token == abandoned
            fresh = search.heartbeat_at is not None and search.heartbeat_at > now - timedelta(
                seconds=settings.VERIHARM_TRIAL_LEASE_SECONDS
            )
            if fresh and not taken_back:
                return ClaimRefused.BUSY
            took_over = not taken_back
        search.status = SearchStatus.RUNNING
        search.lease_token = secrets.token_hex(16)
        search.worker = worker[:200]
        search.heartbeat_at = now
        search.started_at = search.started_at or now
        search.save(update_fields=["status", "lease_token", "worker", "heartbeat_at", "started_at"])
        return Claim(search_id, search.lease_token, took_over)


def search_heartbeat(claim: Claim) -> bool:
    """Refresh the lease; False when this worker no longer holds the search."""
    return (
        GenerationSearch.objects.filter(
            pk=claim.search_id, lease_token=claim.token, status=SearchStatus.RUNNING
        ).update(heartbeat_at=timezone.now())
        == 1
    )


def search_release(claim: Claim) -> bool:
    """Give the claim back unused (the sandbox system is being built): the search is queued again,
    its failures untouched, for its task to come back later. False when this worker no longer held it.
    Queued anew, as a trial is (`trials.leases.trial_wait`: the sweep cannot see a delayed retry)."""
    return (
        GenerationSearch.objects.filter(
            pk=claim.search_id, lease_token=claim.token, status=SearchStatus.RUNNING
        ).update(status=SearchStatus.QUEUED, lease_token="", heartbeat_at=None, queued_at=timezone.now())
        == 1
    )


def search_locked(claim: Claim) -> GenerationSearch | None:
    """The search, locked for the caller's transaction, while this claim still holds it."""
    search = (
        GenerationSearch.objects.select_for_update()
        .filter(pk=claim.search_id, lease_token=claim.token, status=SearchStatus.RUNNING)
        .first()
    )
    return search


class Heartbeat(LeaseHeartbeat):
    """Refreshes a search claim's lease from a thread while a step runs; notices when it was lost."""

    def __init__(self, claim: Claim, interval: float) -> None:
        super().__init__(lambda: search_heartbeat(claim), f"search {claim.search_id}", interval)
        self.claim = claim
