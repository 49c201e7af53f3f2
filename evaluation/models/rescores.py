"""A trial's kept final state, and re-scores of it against a later revision's tests."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from evaluation.models.storage import final_state_storage
from evaluation.models.taxonomy import NO_VERDICT_ENDS, VERDICT_ENDS, TrialEnd

from .trials import SHA256_PATTERN, Trial, TrialInputs


class FinalState(models.Model):
    """The agent's final state of one trial, kept compressed so its tests can be run again later.

    Kept up to VERIHARM_FINAL_STATE_MAX_MB and for VERIHARM_FINAL_STATE_RETENTION_DAYS; `archive` is
    emptied (and `pruned_at` set) when the retention ends, the row stays as the record of what was kept.
    """

    trial = models.OneToOneField(Trial, on_delete=models.CASCADE, related_name="final_state")
    archive = models.FileField(storage=final_state_storage, max_length=300, blank=True)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    pruned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["expires_at"], name="final_state_expiry_idx", condition=Q(pruned_at__isnull=True))
        ]
        constraints = [
            models.CheckConstraint(condition=Q(sha256__regex=SHA256_PATTERN), name="final_state_sha256"),
            models.CheckConstraint(
                condition=Q(pruned_at__isnull=False) | ~Q(archive=""), name="final_state_kept_or_pruned"
            ),
        ]

    def __str__(self) -> str:
        return f"final state of trial {self.trial_id}"

    @property
    def available(self) -> bool:
        return self.pruned_at is None and bool(self.archive)


class RescoreStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class Rescore(models.Model):
    """A finished trial's kept final state scored again against another revision's tests.

    No agent runs: the tests of `inputs` (the trial's instruction and environment with that
    revision's tests) run on the kept state, each on its own copy, with the trial's verifier.
    The original verdict stays on the trial; this is a second result beside it.
    """

    trial = models.ForeignKey(Trial, on_delete=models.CASCADE, related_name="rescores")
    candidate_revision = models.PositiveIntegerField()
    inputs = models.ForeignKey(TrialInputs, on_delete=models.PROTECT, related_name="rescores")
    status = models.CharField(max_length=8, choices=RescoreStatus.choices, default=RescoreStatus.QUEUED)
    end = models.CharField(max_length=20, choices=TrialEnd.choices, blank=True, default="")
    r_task = models.PositiveSmallIntegerField(null=True, blank=True)
    r_harm = models.PositiveSmallIntegerField(null=True, blank=True)
    task_exit_code = models.IntegerField(null=True, blank=True)
    task_timed_out = models.BooleanField(default=False)
    task_output = models.TextField(blank=True, default="")
    harm_exit_code = models.IntegerField(null=True, blank=True)
    harm_timed_out = models.BooleanField(default=False)
    harm_output = models.TextField(blank=True, default="")
    system_identity = models.TextField(blank=True, default="")
    error = models.TextField(blank=True, default="")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["trial", "-created_at"]
        constraints = [
            # Scoring one state against the same tests twice gives nothing new.
            models.UniqueConstraint(fields=["trial", "inputs"], name="rescore_one_per_tests"),
            models.CheckConstraint(condition=Q(status__in=RescoreStatus.values), name="rescore_known_status"),
            models.CheckConstraint(
                condition=(
                    Q(status=RescoreStatus.DONE) & Q(end__in=VERDICT_ENDS) & Q(r_task__in=(0, 1)) & Q(r_harm__in=(0, 1))
                )
                | (
                    Q(status=RescoreStatus.DONE)
                    & Q(end__in=NO_VERDICT_ENDS)
                    & Q(r_task__isnull=True)
                    & Q(r_harm__isnull=True)
                )
                | (~Q(status=RescoreStatus.DONE) & Q(r_task__isnull=True) & Q(r_harm__isnull=True)),
                name="rescore_done_has_results",
            ),
        ]

    def __str__(self) -> str:
        return f"re-score of trial {self.trial_id} against revision {self.candidate_revision}"

    @property
    def flipped(self) -> bool | None:
        """Whether the verdict differs from the trial's own; None when either has none."""
        if self.r_task is None or self.trial.r_task is None:
            return None
        return (self.r_task, self.r_harm) != (self.trial.r_task, self.trial.r_harm)
