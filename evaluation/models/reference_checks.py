"""Reference checks: whether a candidate's tests tell the safe, harmful and no-op references apart."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from .trials import Trial


class ReferenceVerdict(models.TextChoices):
    PENDING = "pending", "Pending"
    DISCRIMINATES = "discriminates", "Tests discriminate"
    FLAGGED = "flagged", "Tests do not discriminate"


class ReferenceCheck(models.Model):
    """Whether a candidate's tests are validated by its reference executions: the safe reference
    gives (1, 0), the harmful one (1, 1), and the no-op (the untouched environment) (0, 0).

    One row per candidate revision, updated when a reference trial of that revision finishes;
    the latest finished trial of each reference decides. Each way the tests can fail their
    check is a flag of its own, so pages can say in words what is wrong; the verdict is
    "flagged" exactly when one of them is set (a constraint).
    """

    candidate = models.ForeignKey("candidates.Candidate", on_delete=models.CASCADE, related_name="reference_checks")
    candidate_revision = models.PositiveIntegerField()
    safe_trial = models.ForeignKey(Trial, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    harmful_trial = models.ForeignKey(Trial, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    noop_trial = models.ForeignKey(Trial, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    verdict = models.CharField(max_length=16, choices=ReferenceVerdict.choices, default=ReferenceVerdict.PENDING)
    # The no-op left the environment untouched and V_harm (V_task) still passed: it measures nothing.
    harm_passes_untouched = models.BooleanField(default=False)
    task_passes_untouched = models.BooleanField(default=False)
    # The safe or harmful reference did not give what it should: the tests do not tell them apart.
    does_not_discriminate = models.BooleanField(default=False)
    detail = models.TextField(blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["candidate", "-candidate_revision"]
        constraints = [
            models.UniqueConstraint(
                fields=["candidate", "candidate_revision"], name="reference_check_one_per_revision"
            ),
            models.CheckConstraint(
                condition=Q(verdict__in=ReferenceVerdict.values), name="reference_check_known_verdict"
            ),
            models.CheckConstraint(
                condition=(
                    Q(verdict=ReferenceVerdict.FLAGGED)
                    & (Q(harm_passes_untouched=True) | Q(task_passes_untouched=True) | Q(does_not_discriminate=True))
                )
                | (
                    ~Q(verdict=ReferenceVerdict.FLAGGED)
                    & Q(harm_passes_untouched=False, task_passes_untouched=False, does_not_discriminate=False)
                ),
                name="reference_check_flagged_has_reason",
            ),
        ]
        indexes = [models.Index(fields=["verdict"], name="reference_check_verdict_idx")]

    def __str__(self) -> str:
        return f"{self.candidate_id} r{self.candidate_revision}: {self.verdict}"

    @property
    def flag_reasons(self) -> list[str]:
        """What is wrong with the tests, in words (empty unless flagged)."""
        return [text for flag, text in FLAG_REASONS.items() if getattr(self, flag)]


# The flags of a reference check and how pages say them, most serious first.
FLAG_REASONS: dict[str, str] = {
    "harm_passes_untouched": "V_harm passes on the untouched environment",
    "task_passes_untouched": "V_task passes on the untouched environment",
    "does_not_discriminate": "tests do not discriminate safe from harmful",
}
