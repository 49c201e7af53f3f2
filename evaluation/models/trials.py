"""One trial of an agent on a candidate: its status, the inputs it was pinned to, its outcome and its
transcript."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from evaluation.models.taxonomy import NO_VERDICT_ENDS, VERDICT_ENDS, TrialEnd
from evaluation.v3ast.labels import LABELS, Outcome, TwinOutcome

from .agents import Agent
from .runs import Run


class TrialStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    UNRESOLVED = "unresolved", "Unresolved"
    CANCELLED = "cancelled", "Cancelled"


FINISHED_STATUSES = (TrialStatus.DONE, TrialStatus.UNRESOLVED, TrialStatus.CANCELLED)
# Trials in these statuses carry an outcome label; cancelled ones never had evidence collected.
LABELLED_STATUSES = (TrialStatus.DONE, TrialStatus.UNRESOLVED)


# The trials that count in a run: each slot's latest, the ones no retry has replaced.
CURRENT = Q(retried_by__isnull=True)


class TrialKind(models.TextChoices):
    RISK = "risk", "Risk task"
    TWIN = "twin", "Capability twin"


RISK_OUTCOMES = [o.value for o in Outcome]
TWIN_OUTCOMES = [o.value for o in TwinOutcome]
OUTCOME_CHOICES = [(value, LABELS[value]) for value in dict.fromkeys(RISK_OUTCOMES + TWIN_OUTCOMES)]


SHA256_PATTERN = r"^[0-9a-f]{64}$"


class TrialInputs(models.Model):
    """Exactly what a trial handed to the sandbox: the instruction, both tests and the environment.

    Content-addressed: `digest` is the sha256 of the canonical JSON of the four parts, so the
    trials of one candidate revision (every agent, every repetition) share one row, and a row
    never changes once written. Each part carries its own sha256 so a reader can check one text
    against a release record or a test file without the others.
    """

    digest = models.CharField(max_length=64, unique=True)
    instruction = models.TextField()
    instruction_sha256 = models.CharField(max_length=64)
    task_test = models.TextField()
    task_test_sha256 = models.CharField(max_length=64)
    # None for a capability twin, which runs its task test alone (unlike an empty harm test).
    harm_test = models.TextField(null=True, blank=True)  # noqa: DJ001
    harm_test_sha256 = models.CharField(max_length=64, blank=True, default="")
    # The canonical JSON text of the environment object (workdir, files, setup, image, network).
    environment = models.TextField()
    environment_sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "trial inputs"
        constraints = [
            models.CheckConstraint(
                condition=Q(digest__regex=SHA256_PATTERN)
                & Q(instruction_sha256__regex=SHA256_PATTERN)
                & Q(task_test_sha256__regex=SHA256_PATTERN)
                & Q(environment_sha256__regex=SHA256_PATTERN)
                & (
                    (Q(harm_test__isnull=True) & Q(harm_test_sha256=""))
                    | (Q(harm_test__isnull=False) & Q(harm_test_sha256__regex=SHA256_PATTERN))
                ),
                name="trial_inputs_hashes",
            ),
        ]

    def __str__(self) -> str:
        return f"inputs {self.digest[:12]}"


class Trial(models.Model):
    """One agent on one candidate, once: r_task and r_harm of the final state.

    A risk trial runs the perturbed task t~ and both tests; a twin trial runs the candidate's
    capability twin and only its task test (r_harm stays empty). `outcome` is the V3AST label of
    the run, with `outcome_reason` saying what evidence gave it; r_task and r_harm stay beside it.

    Claimed by a worker with a lease (`lease_token`, refreshed through
    `heartbeat_at`); only the holder of the current lease may record an
    outcome, so a duplicate delivery or a worker that lost its lease cannot
    record a second one. A re-evaluation creates new trials; these are never
    overwritten once finished.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="trials")
    candidate = models.ForeignKey("candidates.Candidate", on_delete=models.CASCADE, related_name="trials")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="trials")
    kind = models.CharField(max_length=8, choices=TrialKind.choices, default=TrialKind.RISK)
    repetition = models.PositiveSmallIntegerField(default=1)
    # The candidate revision whose text the trial runs (the frozen one for a release run): results of
    # an older revision than the candidate's current one are stale.
    candidate_revision = models.PositiveIntegerField()
    # Pinned at launch: what the trial runs, whatever is edited afterwards. Empty only for trials
    # recorded before inputs were pinned.
    inputs = models.ForeignKey(TrialInputs, null=True, blank=True, on_delete=models.PROTECT, related_name="trials")
    # The agent as launched: kind, model, harness, config, network, time limit and, for a reference
    # agent, the script it runs; with the sha256 of its canonical JSON.
    agent_config = models.JSONField(default=dict, blank=True)
    agent_config_sha256 = models.CharField(max_length=64, blank=True, default="")
    # The sandbox system and verifier runtime the recorded attempt ran on, as the backend names them.
    system_identity = models.TextField(blank=True, default="")
    end = models.CharField(max_length=20, choices=TrialEnd.choices, blank=True, default="")
    # Why the final state was not kept, when it was not (over the size cap, keeping turned off).
    final_state_note = models.TextField(blank=True, default="")
    status = models.CharField(max_length=16, choices=TrialStatus.choices, default=TrialStatus.QUEUED)
    r_task = models.PositiveSmallIntegerField(null=True, blank=True)
    r_harm = models.PositiveSmallIntegerField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=OUTCOME_CHOICES, blank=True, default="")
    outcome_reason = models.TextField(blank=True, default="")
    agent_exit_code = models.IntegerField(null=True, blank=True)
    agent_timed_out = models.BooleanField(default=False)
    # The harness ended the run because it used up its model calls: not a stop of the agent's own.
    agent_hit_step_limit = models.BooleanField(default=False)
    agent_duration = models.FloatField(null=True, blank=True)
    agent_output = models.TextField(blank=True, default="")
    task_exit_code = models.IntegerField(null=True, blank=True)
    task_timed_out = models.BooleanField(default=False)
    task_duration = models.FloatField(null=True, blank=True)
    task_output = models.TextField(blank=True, default="")
    harm_exit_code = models.IntegerField(null=True, blank=True)
    harm_timed_out = models.BooleanField(default=False)
    harm_duration = models.FloatField(null=True, blank=True)
    harm_output = models.TextField(blank=True, default="")
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    lease_token = models.CharField(max_length=64, blank=True, default="")
    worker = models.CharField(max_length=200, blank=True, default="")
    queued_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A retry of a trial that ended without a verdict: a new row in the same run and slot, since the
    # finished one never changes. One retry per trial (a double submit cannot add a second), and
    # `retry` counts them in the slot, 0 for the trial as launched.
    retry_of = models.OneToOneField("self", null=True, blank=True, on_delete=models.CASCADE, related_name="retried_by")
    retry = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["run", "candidate", "agent", "repetition", "retry"]
        indexes = [
            models.Index(fields=["run", "status"], name="trial_run_status_idx"),
            models.Index(fields=["candidate", "agent", "-finished_at"], name="trial_candidate_latest_idx"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "candidate", "agent", "kind", "repetition", "retry"], name="trial_one_per_slot"
            ),
            models.CheckConstraint(
                condition=(Q(retry=0) & Q(retry_of__isnull=True)) | (Q(retry__gte=1) & Q(retry_of__isnull=False)),
                name="trial_retry_has_its_original",
            ),
            models.CheckConstraint(condition=Q(status__in=TrialStatus.values), name="trial_known_status"),
            models.CheckConstraint(condition=Q(kind__in=TrialKind.values), name="trial_known_kind"),
            models.CheckConstraint(condition=Q(repetition__gte=1), name="trial_repetition_positive"),
            models.CheckConstraint(
                condition=(Q(r_task__isnull=True) | Q(r_task__in=(0, 1)))
                & (Q(r_harm__isnull=True) | Q(r_harm__in=(0, 1))),
                name="trial_binary_results",
            ),
            # A finished risk trial has both results, a finished twin trial only r_task; any other has neither.
            models.CheckConstraint(
                condition=(
                    Q(status=TrialStatus.DONE)
                    & Q(r_task__isnull=False)
                    & (
                        (Q(kind=TrialKind.RISK) & Q(r_harm__isnull=False))
                        | (Q(kind=TrialKind.TWIN) & Q(r_harm__isnull=True))
                    )
                )
                | (~Q(status=TrialStatus.DONE) & Q(r_task__isnull=True) & Q(r_harm__isnull=True)),
                name="trial_done_has_results",
            ),
            # One end per finished trial, and the status follows from it: only verdicts are done.
            models.CheckConstraint(
                condition=(Q(status__in=(TrialStatus.QUEUED, TrialStatus.RUNNING)) & Q(end=""))
                | (Q(status=TrialStatus.DONE) & Q(end__in=VERDICT_ENDS))
                | (Q(status=TrialStatus.UNRESOLVED) & Q(end__in=NO_VERDICT_ENDS))
                | (Q(status=TrialStatus.CANCELLED) & Q(end=TrialEnd.CANCELLED)),
                name="trial_end_fits_status",
            ),
            # Exactly the trials with evidence (or its recorded absence) carry a label of their own kind.
            models.CheckConstraint(
                condition=(
                    Q(status__in=LABELLED_STATUSES)
                    & (
                        (Q(kind=TrialKind.RISK) & Q(outcome__in=RISK_OUTCOMES))
                        | (Q(kind=TrialKind.TWIN) & Q(outcome__in=TWIN_OUTCOMES))
                    )
                )
                | (~Q(status__in=LABELLED_STATUSES) & Q(outcome="")),
                name="trial_outcome_fits_kind",
            ),
        ]

    def __str__(self) -> str:
        twin = " twin" if self.kind == TrialKind.TWIN else ""
        return f"{self.agent_id} on {self.candidate_id}{twin} #{self.repetition} (run {self.run_id})"

    @property
    def finished(self) -> bool:
        return self.status in FINISHED_STATUSES

    @property
    def stale(self) -> bool:
        """Evaluated on an older revision of the candidate (needs `candidate` loaded)."""
        return self.candidate_revision != self.candidate.revision


class TranscriptStep(models.Model):
    """One step of an agent's run, written as it happens so a crash keeps what came before."""

    class Kind(models.TextChoices):
        MESSAGE = "message", "Model message"
        COMMAND = "command", "Command"
        NOTE = "note", "Harness note"

    trial = models.ForeignKey(Trial, on_delete=models.CASCADE, related_name="steps")
    attempt = models.PositiveSmallIntegerField()
    index = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    content = models.TextField(blank=True, default="")
    command = models.TextField(blank=True, default="")
    exit_code = models.IntegerField(null=True, blank=True)
    timed_out = models.BooleanField(default=False)
    duration = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["trial", "attempt", "index"]
        constraints = [
            models.UniqueConstraint(fields=["trial", "attempt", "index"], name="step_one_per_index"),
        ]

    def __str__(self) -> str:
        return f"step {self.index} ({self.kind}) of trial {self.trial_id}, attempt {self.attempt}"
