"""The recovery sweep of generation searches (registered in EvaluationConfig.ready), as for trials:
a running search whose lease expired lost its worker, and a queued one older than
VERIHARM_RECOVERY_QUEUED_SECONDS with no message waiting lost its publish; both are published
again. A surplus delivery is harmless: the claim refuses a search held by a live worker or ended."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from evaluation import queue
from veriharm_site.broker_messages import waiting_tasks
from veriharm_site.recovery import sweep_lock

from .models import GenerationSearch
from .states import SearchStatus

logger = logging.getLogger(__name__)

BATCH = 500


def searches_needing_a_message(waiting: set[int] | None) -> list[int]:
    now = timezone.now()
    expired = list(
        GenerationSearch.objects.filter(status=SearchStatus.RUNNING)
        .filter(
            Q(heartbeat_at__lt=now - timedelta(seconds=settings.VERIHARM_TRIAL_LEASE_SECONDS))
            | Q(heartbeat_at__isnull=True)
        )
        .values_list("pk", flat=True)[:BATCH]
    )
    lost: list[int] = []
    if waiting is not None:  # an unreadable broker: leave queued searches alone, as for trials
        lost = list(
            GenerationSearch.objects.filter(
                status=SearchStatus.QUEUED,
                queued_at__lt=now - timedelta(seconds=settings.VERIHARM_RECOVERY_QUEUED_SECONDS),
            ).values_list("pk", flat=True)[:BATCH]
        )
    waiting = waiting or set()
    return [pk for pk in expired + lost if pk not in waiting]


def sweep() -> list[int]:
    from veriharm_site.celery import app

    with sweep_lock("generation") as acquired:
        if not acquired:
            return []
        found = waiting_tasks(app)
        republish = searches_needing_a_message(
            None if found is None else found.get(queue.GENERATION_SEARCH_EXECUTE, set())
        )
        backends = dict(GenerationSearch.objects.filter(pk__in=republish).values_list("pk", "run__backend"))
        queue.generation_searches_publish([(pk, backends[pk]) for pk in republish], takeover=True)
    if republish:
        logger.warning("recovery: published again %d generation search(es): %s", len(republish), republish)
    return republish
