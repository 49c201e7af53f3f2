"""Seeded stratified sampling of a study's items and their numbers (pure: no database).

Allocation is proportional with the largest-remainder (Hamilton) rounding rule: each stratum
first gets the floor of its exact quota n * N_s / N; the seats left over go one each to the
strata with the largest fractional remainders, ties broken by the larger pool, then by the
stratum's name. No stratum is ever asked for more candidates than it holds.
"""

from __future__ import annotations

import math
import random
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

ROUNDING_RULE = (
    "proportional allocation, rounded by largest remainder (ties: larger pool, then name); "
    "simple random sample without replacement inside each stratum"
)


@dataclass(frozen=True)
class StratumAllocation:
    name: str
    pool: int
    quota: float  # the exact proportional share n * N_s / N
    allocated: int


@dataclass(frozen=True)
class GroupSample:
    group: str
    pool: int
    strata: list[StratumAllocation]
    chosen: list[int]


def largest_remainder(sizes: Mapping[str, int], n: int) -> dict[str, tuple[float, int]]:
    """Exact quota and allocated seats per stratum; the seats add up to n (n <= total)."""
    total = sum(sizes.values())
    if n > total:
        raise ValueError(f"cannot allocate {n} from a pool of {total}")
    if total == 0:
        return {}
    quotas = {name: n * size / total for name, size in sizes.items()}
    seats = {name: math.floor(quota) for name, quota in quotas.items()}
    left = n - sum(seats.values())
    by_remainder = sorted(sizes, key=lambda name: (-(quotas[name] - seats[name]), -sizes[name], name))
    for name in by_remainder[:left]:
        seats[name] += 1
    return {name: (quotas[name], seats[name]) for name in sizes}


def stratified_sample(pool: Sequence[tuple[int, str]], n: int, seed: int, group: str) -> GroupSample:
    """Draw n ids from `pool` ((id, stratum) pairs); the same pool, n, seed and group give the same ids."""
    members: dict[str, list[int]] = {}
    for pk, stratum in pool:
        members.setdefault(stratum, []).append(pk)
    allocation = largest_remainder({name: len(ids) for name, ids in members.items()}, n)
    strata = []
    chosen: list[int] = []
    for name in sorted(members):
        quota, seats = allocation[name]
        # A generator per stratum: adding a stratum elsewhere does not reshuffle this one.
        rng = random.Random(f"{seed}:{group}:{name}")
        chosen.extend(rng.sample(sorted(members[name]), seats))
        strata.append(StratumAllocation(name=name, pool=len(members[name]), quota=quota, allocated=seats))
    return GroupSample(group=group, pool=len(pool), strata=strata, chosen=sorted(chosen))


def item_numbers(ids: Sequence[int], seed: int) -> dict[int, int]:
    """Numbers 1..len(ids) in a seeded random order, so an item's number says nothing of its group."""
    order = sorted(ids)
    random.Random(f"{seed}:numbers").shuffle(order)
    return {pk: number for number, pk in enumerate(order, start=1)}


def random_seed() -> int:
    """A fresh seed for a study whose creator gave none (kept on the study, so its sample can be redrawn)."""
    return secrets.randbelow(2**31)
