"""A search held by one worker at a time, as a trial is: the leased-work core
(`veriharm_site.leased_work`) over `SEARCH_LEASE`. A claim hands out a fresh token, a heartbeat
keeps it, and every write of the search is conditional on it (`search_locked`), so a second
delivery of its task, or a worker that lost its lease, records nothing. A search has no rules of
its own at the claim: missing, finished and busy are the core's refusals."""

from __future__ import annotations

from dataclasses import dataclass

from veriharm_site.leased_work.heartbeat import LeaseHeartbeat
from veriharm_site.leased_work.leases import (
    ClaimRefused,
    Lease,
    Taken,
    lease_claim,
    lease_heartbeat,
    lease_locked,
    lease_release,
)

from .models import GenerationSearch
from .states import SearchStatus

__all__ = [
    "SEARCH_LEASE",
    "Claim",
    "ClaimRefused",
    "Heartbeat",
    "search_claim",
    "search_heartbeat",
    "search_locked",
    "search_release",
]

SEARCH_LEASE = Lease(
    model=GenerationSearch, queued=SearchStatus.QUEUED, running=SearchStatus.RUNNING, finished=(SearchStatus.FINISHED,)
)


@dataclass(frozen=True)
class Claim:
    search_id: int
    token: str
    # The previous holder's lease had expired (its worker died): its sandboxes may be left over.
    took_over: bool = False


def search_claim(search_id: int, worker: str = "", *, abandoned: str = "") -> Claim | ClaimRefused:
    """Take a search for this worker, or say why not. `abandoned`: the token of an attempt of this
    task that lost the database; while the search still holds it nobody else took it over."""
    taken = lease_claim(SEARCH_LEASE, search_id, worker, abandoned=abandoned)
    if not isinstance(taken, Taken):
        return ClaimRefused(taken)
    return Claim(search_id, taken.token, taken.took_over)


def search_heartbeat(claim: Claim) -> bool:
    """Refresh the lease; False when this worker no longer holds the search."""
    return lease_heartbeat(SEARCH_LEASE, claim.search_id, claim.token)


def search_release(claim: Claim) -> bool:
    """Give the claim back unused (the sandbox system is being built): the search is queued again,
    its failures untouched, for its task to come back later. False when this worker no longer held it."""
    return lease_release(SEARCH_LEASE, claim.search_id, claim.token)


def search_locked(claim: Claim) -> GenerationSearch | None:
    """The search, locked for the caller's transaction, while this claim still holds it."""
    search: GenerationSearch | None = lease_locked(SEARCH_LEASE, claim.search_id, claim.token)
    return search


class Heartbeat(LeaseHeartbeat):
    """Refreshes a search claim's lease from a thread while a step runs; notices when it was lost."""

    def __init__(self, claim: Claim, interval: float) -> None:
        super().__init__(lambda: search_heartbeat(claim), f"search {claim.search_id}", interval)
        self.claim = claim
