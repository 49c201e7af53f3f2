"""Delete kept final states past VERIHARM_FINAL_STATE_RETENTION_DAYS (workers also do it after each trial)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from evaluation.trials.final_states import prune_expired, prune_unreferenced


class Command(BaseCommand):
    help = (
        "Delete the archives of kept final states whose retention has ended (their records stay), "
        "and archives no trial recorded."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        total = 0
        while pruned := prune_expired():
            total += pruned
        self.stdout.write(f"Deleted {total} expired final state(s).")
        orphans = prune_unreferenced()
        self.stdout.write(
            f"Deleted {orphans} archive(s) no trial recorded (older than VERIHARM_FINAL_STATE_ORPHAN_HOURS)."
        )
