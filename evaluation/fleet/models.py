"""What each Celery worker says of itself while it runs (`evaluation.fleet.heartbeat`)."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q


class WorkerHeartbeat(models.Model):
    """One worker, by its Celery node name (`celery@host`): one row however often it restarts."""

    name = models.CharField(max_length=200, unique=True)
    host = models.CharField(max_length=200)
    pid = models.PositiveIntegerField()
    queues = models.JSONField(default=list)
    # The sandbox backends whose queues it consumes (VERIHARM_SANDBOX_QUEUES).
    backends = models.JSONField(default=list)
    concurrency = models.PositiveSmallIntegerField()
    started_at = models.DateTimeField()
    beat_at = models.DateTimeField()
    # Set by a worker that shut down cleanly; a killed one only stops beating.
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "evaluation"
        ordering = ["host", "name"]
        constraints = [
            models.CheckConstraint(condition=Q(beat_at__gte=F("started_at")), name="worker_beats_after_start"),
            models.CheckConstraint(condition=Q(concurrency__gte=1), name="worker_runs_something"),
            models.CheckConstraint(condition=~Q(host=""), name="worker_names_its_host"),
        ]

    def __str__(self) -> str:
        return self.name
