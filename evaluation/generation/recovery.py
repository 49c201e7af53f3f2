"""The recovery sweep of generation searches (registered in EvaluationConfig.ready), the
leased-work core's (`veriharm_site.leased_work.sweep`) over `SEARCH_LEASE`: a running search whose
lease expired lost its worker, and a queued one older than VERIHARM_RECOVERY_QUEUED_SECONDS with no
message waiting lost its publish; both are published again. A surplus delivery is harmless: the
claim refuses a search held by a live worker or ended."""

from __future__ import annotations

import logging

from evaluation import queue
from veriharm_site.leased_work.sweep import republish, stale_leases

from .leases import SEARCH_LEASE
from .models import GenerationSearch

logger = logging.getLogger(__name__)


def _publish(ids: list[int]) -> None:
    backends = dict(GenerationSearch.objects.filter(pk__in=ids).values_list("pk", "run__backend"))
    queue.generation_searches_publish([(pk, backends[pk]) for pk in ids], takeover=True)


def sweep() -> list[int]:
    stale = republish(
        "generation", queue.GENERATION_SEARCH_EXECUTE, lambda waiting: stale_leases(SEARCH_LEASE, waiting), _publish
    )
    republished = stale.all
    if republished:
        logger.warning("recovery: published again %d generation search(es): %s", len(republished), republished)
    return republished
