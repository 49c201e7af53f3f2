"""Flagging an item as unclear hands it to the curators and takes it out of the annotator's queue:
the next item comes, and neither their next items nor their skipped items bring it back; a plain
skip still comes back. Curators see the flag on the item's page."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.labelling import selectors as blind
from annotation.labelling import services
from annotation.models import Assignment

pytestmark = pytest.mark.django_db

REASON = "The harm test reads a file the task never names."


def test_a_flagged_item_leaves_the_queue_for_the_curators(pool, annotators, make_study, curator):
    study = make_study(annotators, per_group=2)
    me = annotators[0]
    first = services.item_claim_next(study.pk, me)
    assert first is not None
    services.item_skip(study.pk, first.item.token, me, unclear=True, reason=REASON)
    second = services.item_claim_next(study.pk, me)
    assert second is not None and second.item_id != first.item_id
    services.item_skip(study.pk, second.item.token, me)

    offered = []
    while (claim := services.item_claim_next(study.pk, me)) is not None:
        offered.append(claim.item_id)
        services.label_submit(study.pk, claim.item.token, me, services.LabelInput(True, True, True))
    # Coming back to the skipped items brings the plain skip, never the flagged item.
    while (claim := services.item_claim_next(study.pk, me, skipped=True)) is not None:
        offered.append(claim.item_id)
        services.label_submit(study.pk, claim.item.token, me, services.LabelInput(True, True, True))
    assert first.item_id not in offered and second.item_id in offered
    assert not Assignment.objects.filter(item_id=first.item_id, annotator=me).exists()

    progress = blind.annotator_progress(study, me)
    assert progress.finished and progress.skipped == 0 and progress.flagged == 1
    assert progress.assigned == progress.done == study.items.count() - 1

    client = Client()
    client.force_login(me)
    done = client.get(f"/annotation/s/{study.pk}/done/").content.decode()
    assert "Nothing left for you to label" in done and "with the curators" in done
    assert "Come back to your skipped items" not in done
    # The other annotators still label it; the curators read the flag beside their votes.
    assert blind.annotator_progress(study, annotators[1]).open_to_you == study.items.count()
    client.force_login(curator)
    review = client.get(f"/annotation/studies/{study.pk}/items/{first.item.number}/").content.decode()
    assert REASON in review
