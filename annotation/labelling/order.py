"""The order in which one annotator meets a study's items, gold items mixed in (pure: no database)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence


def annotator_order(item_ids: Sequence[int], seed: int, annotator_id: int) -> list[int]:
    """The order in which one annotator meets the items: a shuffle seeded by (study seed, annotator)."""
    order = sorted(item_ids)
    random.Random(f"{seed}:annotator:{annotator_id}").shuffle(order)
    return order


def mix_gold(order: Sequence[int], gold: set[int], rate: float) -> list[int]:
    """`order` with its gold items spread so that, while any are left, about `rate` of the items met
    so far are gold (the k-th item is gold when fewer than rate * k, rounded, came before it); with
    a rate of 0 the gold items come last."""
    regular = [pk for pk in order if pk not in gold]
    golden = [pk for pk in order if pk in gold]
    mixed: list[int] = []
    taken = 0
    while regular or golden:
        if golden and (not regular or taken < math.floor(rate * (len(mixed) + 1) + 0.5)):
            mixed.append(golden.pop(0))
            taken += 1
        else:
            mixed.append(regular.pop(0))
    return mixed
