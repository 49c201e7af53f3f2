"""Claiming a row of leased work, keeping and giving back its lease, and writing under it.

A `Lease` says how a model holds its leases: its status field and values, and the fields of the
token, the heartbeat, the worker's name, the start and the time it was queued. The rules are the
same for every model:

- a missing row or a finished one is refused (MISSING, FINISHED);
- a running row whose heartbeat is within the lease is someone else's (BUSY), unless the claim
  names the row's own token as `abandoned`: an attempt of this very task that lost the database
  mid-work and ended without releasing its lease, which nobody heartbeats any more, so it is taken
  back at once instead of after the lease expires;
- a running row whose lease expired is taken over, and the claim says so (its worker died: what it
  left behind may need cleaning up);
- every write after the claim is conditional on the token (`lease_held`, `lease_locked`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Model, Q, QuerySet
from django.utils import timezone

# What a claim's hooks may answer instead of taking the row: a refusal value of the app's own.
Refusal = StrEnum


class ClaimRefused(StrEnum):
    """Why a delivery does not take the work (apps with more reasons keep their own, same values)."""

    MISSING = "missing"
    FINISHED = "finished"
    BUSY = "busy"  # another worker holds a live lease


@dataclass(frozen=True)
class Lease:
    """How rows of `model` are leased: which status values mean queued, running and finished, and
    which fields hold the lease (the defaults are the names every leased model here uses)."""

    model: type[Model]
    queued: str
    running: str
    finished: tuple[str, ...]
    status_field: str = "status"
    token_field: str = "lease_token"
    heartbeat_field: str = "heartbeat_at"
    worker_field: str = "worker"
    started_field: str = "started_at"
    queued_at_field: str = "queued_at"
    # One lease length for all leased work: the heartbeat interval is checked against it at start.
    lease_seconds_setting: str = "VERIHARM_TRIAL_LEASE_SECONDS"

    def objects(self) -> QuerySet[Any]:
        return self.model._default_manager.all()

    def lease_seconds(self) -> float:
        return float(getattr(settings, self.lease_seconds_setting))

    def expired_before(self, now: datetime) -> datetime:
        return now - timedelta(seconds=self.lease_seconds())

    def running_q(self) -> Q:
        return Q(**{self.status_field: self.running})

    def expired_q(self, now: datetime) -> Q:
        """Running rows whose heartbeat is older than a lease, or never came."""
        before = self.expired_before(now)
        stale = Q(**{f"{self.heartbeat_field}__lt": before}) | Q(**{f"{self.heartbeat_field}__isnull": True})
        return self.running_q() & stale


@dataclass(frozen=True)
class Taken:
    """A claim that took the row: the row as saved, its new token, and whom it was taken from."""

    row: Any
    token: str
    # The previous holder's worker name ("an unknown worker" if it gave none) when the row was running:
    # its lease had expired, or its own abandoned attempt is taken back (`taken_back`).
    previous: str = ""
    taken_back: bool = False

    @property
    def took_over(self) -> bool:
        """Another worker's expired lease was taken: its leftovers may need cleaning up."""
        return bool(self.previous) and not self.taken_back


# A hook sees the locked row and the claim's time; it answers a refusal (having written what that
# refusal means) or None to go on.
BeforeBusy = Callable[[Any, datetime], "Refusal | None"]
BeforeTake = Callable[[Any, datetime, str], "Refusal | None"]
# Called on the row just before it is saved as taken: the names of the fields it changed itself.
OnTake = Callable[[Any, datetime], list[str]]


def lease_claim(
    lease: Lease,
    pk: int,
    worker: str = "",
    *,
    abandoned: str = "",
    before_busy: BeforeBusy | None = None,
    before_take: BeforeTake | None = None,
    on_take: OnTake | None = None,
) -> Taken | Refusal:
    """Take row `pk` for `worker` under a fresh token, or say why not, in one transaction with the
    row locked. `before_busy` may refuse before the busy check (e.g. work whose parent was
    cancelled); `before_take` after it, knowing the previous holder (e.g. an attempt budget spent);
    `on_take` adds the app's own changes to the take (e.g. counting the attempt)."""
    with transaction.atomic():
        row = lease.objects().select_for_update().filter(pk=pk).first()
        if row is None:
            return ClaimRefused.MISSING
        status = getattr(row, lease.status_field)
        if status in lease.finished:
            return ClaimRefused.FINISHED
        now = timezone.now()
        if before_busy is not None:
            refused = before_busy(row, now)
            if refused is not None:
                return refused
        previous = ""
        running = status == lease.running
        taken_back = running and bool(abandoned) and getattr(row, lease.token_field) == abandoned
        if running:
            beat = getattr(row, lease.heartbeat_field)
            if not taken_back and beat is not None and beat > lease.expired_before(now):
                return ClaimRefused.BUSY
            previous = getattr(row, lease.worker_field) or "an unknown worker"
        if before_take is not None:
            refused = before_take(row, now, previous)
            if refused is not None:
                return refused
        changed = on_take(row, now) if on_take is not None else []
        setattr(row, lease.status_field, lease.running)
        setattr(row, lease.token_field, secrets.token_hex(16))
        setattr(row, lease.worker_field, worker[:200])
        setattr(row, lease.started_field, getattr(row, lease.started_field) or now)
        setattr(row, lease.heartbeat_field, now)
        fields = [lease.status_field, lease.token_field, lease.worker_field, lease.started_field, lease.heartbeat_field]
        row.save(update_fields=[*changed, *fields])
        return Taken(row=row, token=getattr(row, lease.token_field), previous=previous, taken_back=taken_back)


def lease_held(lease: Lease, pk: int, token: str) -> QuerySet[Any]:
    """The row while `token` still holds it: every write under a lease goes through this."""
    return lease.objects().filter(lease.running_q(), pk=pk, **{lease.token_field: token})


def lease_locked(lease: Lease, pk: int, token: str) -> Any | None:
    """The row, locked for the caller's transaction, while `token` still holds it."""
    return lease_held(lease, pk, token).select_for_update().first()


def lease_heartbeat(lease: Lease, pk: int, token: str) -> bool:
    """Extend the lease; False means it was lost (taken over, or the work ended elsewhere)."""
    return lease_held(lease, pk, token).update(**{lease.heartbeat_field: timezone.now()}) == 1


def lease_release(lease: Lease, pk: int, token: str, on_release: Callable[[Any], list[str]] | None = None) -> bool:
    """Give the claim back unused: the row is queued anew (its queue time now, as the sweep cannot
    see a task's delayed retry), for its task to come back later. `on_release` undoes the app's own
    part of the take and names the fields it changed. False when `token` no longer held the row."""
    with transaction.atomic():
        row = lease_locked(lease, pk, token)
        if row is None:
            return False
        changed = on_release(row) if on_release is not None else []
        setattr(row, lease.status_field, lease.queued)
        setattr(row, lease.token_field, "")
        setattr(row, lease.heartbeat_field, None)
        setattr(row, lease.queued_at_field, timezone.now())
        fields = [lease.status_field, lease.token_field, lease.heartbeat_field, lease.queued_at_field]
        row.save(update_fields=[*dict.fromkeys([*changed, *fields])])
        return True


def row_lock_claim(lease: Lease, pk: int, on_take: OnTake | None = None) -> Any | Refusal:
    """Mark row `pk` running for work held by its row lock instead of a token (the work locks the row
    for its whole transaction, so a dead worker's lock ends with its connection and no heartbeat is
    needed); only the lease's status and start fields are used. A row another transaction has
    locked is being worked on right now (BUSY); a missing or finished one is refused as by
    `lease_claim`. Returns the row as saved."""
    with transaction.atomic():
        row = lease.objects().select_for_update(skip_locked=True).filter(pk=pk).first()
        if row is None:
            return ClaimRefused.BUSY if lease.objects().filter(pk=pk).exists() else ClaimRefused.MISSING
        if getattr(row, lease.status_field) in lease.finished:
            return ClaimRefused.FINISHED
        now = timezone.now()
        changed = on_take(row, now) if on_take is not None else []
        setattr(row, lease.status_field, lease.running)
        setattr(row, lease.started_field, getattr(row, lease.started_field) or now)
        row.save(update_fields=[lease.status_field, *changed, lease.started_field])
        return row
