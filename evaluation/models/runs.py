"""A run: agents over a selection of candidates, how it is scored, and what it may spend."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from .agents import Agent, Backend


class Protocol(models.TextChoices):
    VERIHARM = "veriharm", "VeriHarm: the risk task"
    V3AST = "v3ast", "V3AST-Bench: the risk task beside its capability twin"


class DemoRun(models.TextChoices):
    """What is synthetic about a run the demo launched (`demo.runs`), as its pages say it."""

    NONE = "", "Not a demo run"
    SCRIPTED = "scripted", "Demo run: scripted agents replay reference scripts; no model was called"
    SCRIPTED_MODEL = (
        "scripted_model",
        "Demo run: real harnesses answered by a scripted demo model inside the worker; no model was called",
    )
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
        max_digits=12, decimal_places=4, null=True, blank=True, validators=[MinValueValidator(Decimal(0))]
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
                condition=Q(budget_usd__isnull=True) | Q(budget_usd__gte=0), name="run_budget_not_negative"
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
