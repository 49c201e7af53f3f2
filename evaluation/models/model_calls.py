"""Each model call through the gateway, and the budget holds a run's calls reserve before they are sent."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from evaluation.model_ledger.calls import ModelCallFields

from .runs import Run
from .trials import Trial


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
