"""Agents, runs of agents over candidates in sandboxes, and each trial's outcome and transcript."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from evaluation.model_ledger.calls import ModelCallFields
from evaluation.trials.storage import final_state_storage
from evaluation.trials.taxonomy import NO_VERDICT_ENDS, VERDICT_ENDS, TrialEnd

from .v3ast.scoring import LABELS, Outcome, TwinOutcome


class AgentKind(models.TextChoices):
    REFERENCE = "reference", "Reference script"
    COMMAND = "command", "Command in the sandbox"
    OPENAI_COMPATIBLE = "openai_compatible", "OpenAI-compatible bash-tool loop"
    HARNESS = "harness", "Harness in the sandbox (e.g. mini-swe-agent)"
    # Ran in another harness (Inspect AI, Harbor): its trials come from an imported log, never launched here.
    IMPORTED = "imported", "Imported from another harness's log"


class NetworkMode(models.TextChoices):
    """A sandbox's network (`evaluation.sandbox.network`); the host's is never one of them."""

    NONE = "none", "None: loopback only"
    MODEL = "model", "Model: loopback plus the trial's model gateway"


class Agent(models.Model):
    """A system under evaluation: a model driven by a harness.

    `model` and `harness` are recorded separately so results can be laid out as a
    model x harness matrix. `config` holds what the kind needs:
    reference: {"script": "safe" | "harmful" | "noop"} (noop: does nothing, runs on every candidate);
    command: {"command": template with {task_file} and {workdir}, "env": {...}, "gateway": upstream};
    harness: {"harness": "mini-swe-agent", "model", "gateway": upstream, "step_limit", "command_timeout"}
    (`evaluation.agents.harness`);
    openai_compatible: {"base_url", "model", "api_key_env", "max_steps", "temperature",
    "command_timeout", "system_prompt", "prices", "max_concurrency", "requests_per_minute", "max_retries"}.
    An upstream (`evaluation.gateway.config`) is {"api": "openai" | "anthropic", "base_url",
    "api_key_env": "VERIHARM_AGENT_KEY_...", "prices": {model: {"input", "output"}}, limits}.
    """

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=32, choices=AgentKind.choices)
    model = models.CharField(max_length=200, blank=True, default="")
    harness = models.CharField(max_length=200, blank=True, default="")
    config = models.JSONField(default=dict, blank=True)
    # The sandbox's network mode: "model" exactly for the agents that reach a model from inside
    # (a harness, a command with a gateway block), "none" for all others. Checked against the
    # config by `agents.factory.check_network`; the kinds' part is a constraint.
    network = models.CharField(max_length=8, choices=NetworkMode.choices, default=NetworkMode.NONE)
    time_limit = models.PositiveIntegerField(default=600, help_text="Seconds the agent may run in one trial")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=AgentKind.values), name="agent_known_kind"),
            models.CheckConstraint(condition=Q(time_limit__gte=1), name="agent_time_limit_positive"),
            models.CheckConstraint(condition=Q(network__in=NetworkMode.values), name="agent_known_network"),
            # Only agents that reach a model from inside the sandbox get the gateway, and a harness
            # always does.
            models.CheckConstraint(
                condition=(Q(network=NetworkMode.NONE) & ~Q(kind=AgentKind.HARNESS))
                | (Q(network=NetworkMode.MODEL) & Q(kind__in=[AgentKind.HARNESS, AgentKind.COMMAND])),
                name="agent_network_fits_kind",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Backend(models.TextChoices):
    """Where a run's trials ran. Only LOCAL and DOCKER are launched here (`LAUNCHABLE_BACKENDS`)."""

    LOCAL = "local", "Local (bubblewrap)"
    DOCKER = "docker", "Docker"
    # An imported run's trials ran in another harness's sandboxes (`Run.source` says which).
    EXTERNAL = "external", "Another harness (imported)"


LAUNCHABLE_BACKENDS = (Backend.LOCAL, Backend.DOCKER)


class Protocol(models.TextChoices):
    VERIHARM = "veriharm", "VeriHarm: the risk task"
    V3AST = "v3ast", "V3AST-Bench: the risk task beside its capability twin"


class DemoRun(models.TextChoices):
    """What is synthetic about a run the demo launched (`evaluation.demo.runs`), as its pages say it."""

    NONE = "", "Not a demo run"
    SCRIPTED = "scripted", "Demo run: scripted agents replay reference scripts; no model was called"
    REFERENCES = (
        "references",
        "Demo run: the reference scripts on demo candidates, whose judge scores and Q are generated",
    )


class Run(models.Model):
    """A set of candidates x agents x repetitions, one trial each, executed in the background.

    Under the V3AST protocol every candidate with a twin also gets a twin trial per agent and
    repetition, so eligibility (twin CAPABLE in all repetitions) can be read off the run.
    """

    name = models.CharField(max_length=200, blank=True, default="")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    backend = models.CharField(max_length=32, choices=Backend.choices)
    protocol = models.CharField(max_length=16, choices=Protocol.choices, default=Protocol.VERIHARM)
    repetitions = models.PositiveSmallIntegerField(default=1)
    agents = models.ManyToManyField(Agent, related_name="runs")
    # How the candidates were chosen, for the record: {"kind": "ids" | "filter" | "top_k" | "study" | "rerun", ...}.
    selection = models.JSONField(default=dict, blank=True)
    # Set when this run re-evaluates an earlier one; the earlier trials stay as they are.
    rerun_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reruns")
    test_timeout = models.PositiveIntegerField(default=120, help_text="Seconds each test may run")
    notes = models.TextField(blank=True, default="")
    cancelled_at = models.DateTimeField(null=True, blank=True)
    # A run on a frozen release evaluates the release's records, and keeps which release and checksum.
    release = models.ForeignKey(
        "candidates.Release", null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    release_checksum = models.CharField(max_length=64, blank=True, default="")
    # sha256 over every trial's (candidate, revision, inputs digest, agent configuration digest):
    # one value that names exactly what the run evaluated.
    inputs_sha256 = models.CharField(max_length=64, blank=True, default="")
    # USD the run's model calls may cost in all, set at launch; once the recorded cost reaches it
    # the model gateway refuses new calls and the trials still running end as stopped by budget.
    budget_usd = models.DecimalField(
        max_digits=12, decimal_places=4, null=True, blank=True, validators=[MinValueValidator(Decimal("0.0001"))]
    )
    demo = models.CharField(max_length=16, choices=DemoRun.choices, blank=True, default=DemoRun.NONE)
    # An imported run's source, as its pages say it: the harness, the log's file name and sha256,
    # its task and version, its own ids, model and solver, the release checksum it ran.
    source = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        permissions = [
            ("run_evaluations", "Can launch, cancel and re-run evaluations"),
            ("view_evaluations", "Can see evaluation results"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(backend__in=Backend.values), name="run_known_backend"),
            models.CheckConstraint(condition=Q(protocol__in=Protocol.values), name="run_known_protocol"),
            models.CheckConstraint(condition=Q(demo__in=DemoRun.values), name="run_known_demo"),
            models.CheckConstraint(condition=Q(repetitions__gte=1, repetitions__lte=100), name="run_repetitions_range"),
            models.CheckConstraint(condition=Q(test_timeout__gte=1), name="run_test_timeout_positive"),
            models.CheckConstraint(
                condition=Q(budget_usd__isnull=True) | Q(budget_usd__gt=0), name="run_budget_positive"
            ),
            models.CheckConstraint(
                condition=(Q(release__isnull=True) & Q(release_checksum=""))
                | (Q(release__isnull=False) & Q(release_checksum__regex=r"^[0-9a-f]{64}$")),
                name="run_release_has_checksum",
            ),
            # Exactly the imported runs name the log they came from.
            models.CheckConstraint(
                condition=(Q(backend=Backend.EXTERNAL) & Q(source__has_key="file_sha256"))
                | (~Q(backend=Backend.EXTERNAL) & Q(source={})),
                name="run_imported_has_source",
            ),
        ]

    def __str__(self) -> str:
        return self.name or f"Run {self.pk}"

    @property
    def cancelled(self) -> bool:
        return self.cancelled_at is not None

    @property
    def imported(self) -> bool:
        return self.backend == Backend.EXTERNAL


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


class ModelRoute(models.TextChoices):
    CHAT_COMPLETIONS = "chat_completions", "OpenAI chat completions"
    RESPONSES = "responses", "OpenAI responses"
    MESSAGES = "messages", "Anthropic messages"
    GENERATE_CONTENT = "generate_content", "Gemini generateContent"
    STREAM_GENERATE_CONTENT = "stream_generate_content", "Gemini streamGenerateContent"
    # Requests the gateway answers itself, never forwarded (evaluation/gateway/answers.py).
    HELLO = "hello", "Reachability probe (answered by the gateway)"
    MODELS = "models", "Model list (answered by the gateway)"
    COUNT_TOKENS = "count_tokens", "Token count (estimated by the gateway)"


class ModelCall(ModelCallFields):
    """One model call a trial's agent made through the model gateway, as the upstream answered it.

    Written once when the answer has been passed on (for a streamed answer, when the stream ended).
    Calls the gateway refused for the request itself (another route, another host, a bad body) or
    for a spent budget never reached a model and are not recorded here; those it refused or failed
    by its own doing (its limits, its key, its own error) are, with `gateway_failure`. Requests it
    answered itself (the hello probe, model lists, token counts) are recorded at no cost under their
    own routes, and the first request past the trial's call cap with its 403. `retries` counts the upstream attempts after the first (429, 5xx,
    unreachable); `cost_usd` is empty when the agent's price table has no entry for the model.
    """

    trial = models.ForeignKey(Trial, on_delete=models.CASCADE, related_name="model_calls")
    attempt = models.PositiveSmallIntegerField()
    route = models.CharField(max_length=30, choices=ModelRoute.choices)
    model = models.CharField(max_length=200, blank=True, default="")
    # The status the client received: the upstream's final one, or 502 / 504 when it never answered.
    status_code = models.PositiveSmallIntegerField()
    usage_reported = models.BooleanField(default=False)
    latency = models.FloatField(help_text="Seconds from the request to the end of the answer, retries included")
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["trial", "attempt", "created_at", "id"]
        indexes = [models.Index(fields=["trial", "attempt"], name="model_call_trial_attempt_idx")]
        constraints = [
            models.CheckConstraint(condition=Q(route__in=ModelRoute.values), name="model_call_known_route"),
            models.CheckConstraint(
                condition=Q(status_code__gte=100, status_code__lte=599), name="model_call_http_status"
            ),
            models.CheckConstraint(condition=Q(latency__gte=0), name="model_call_latency_non_negative"),
            models.CheckConstraint(
                condition=Q(cost_usd__isnull=True) | Q(cost_usd__gte=0), name="model_call_cost_non_negative"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.route} {self.model} for trial {self.trial_id} ({self.status_code})"


class ModelBudgetHold(models.Model):
    """A share of a run's budget held by one model call in flight, from before the gateway forwards
    it until the call is recorded; the budget check counts recorded costs and live holds together.
    A hold whose worker died lapses at `expires_at`."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="budget_holds")
    trial = models.ForeignKey(Trial, on_delete=models.CASCADE, related_name="budget_holds")
    amount_usd = models.DecimalField(max_digits=14, decimal_places=8)
    expires_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["run", "expires_at"], name="budget_hold_run_expiry_idx")]
        constraints = [models.CheckConstraint(condition=Q(amount_usd__gte=0), name="budget_hold_non_negative")]

    def __str__(self) -> str:
        return f"${self.amount_usd} held for trial {self.trial_id}"


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


# The fleet's and generation's models live with them; imported here so that Django finds them.
from .fleet.models import WorkerHeartbeat as WorkerHeartbeat  # noqa: E402
from .generation.models import GenerationBudgetHold as GenerationBudgetHold  # noqa: E402
from .generation.models import GenerationModelCall as GenerationModelCall  # noqa: E402
from .generation.models import GenerationRun as GenerationRun  # noqa: E402
from .generation.models import GenerationSearch as GenerationSearch  # noqa: E402
from .generation.models import GenerationStep as GenerationStep  # noqa: E402
