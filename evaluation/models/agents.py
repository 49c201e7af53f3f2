"""The systems under evaluation: an agent, its kind, its network and the backends it runs on."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


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
