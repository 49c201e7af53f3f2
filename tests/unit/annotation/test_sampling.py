"""Stratified sampling with largest-remainder rounding, and the items' numbers (pure)."""

from collections import Counter

import pytest

from annotation.studies import sampling


def test_largest_remainder_by_hand():
    # n = 25 from strata of 70, 50, 30 (N = 150): quotas 11.67, 8.33, 5.0 -> floors 11, 8, 5 = 24;
    # the one seat left goes to the largest remainder (.67, stratum a).
    allocation = sampling.largest_remainder({"a": 70, "b": 50, "c": 30}, 25)
    assert {name: seats for name, (_, seats) in allocation.items()} == {"a": 12, "b": 8, "c": 5}
    assert allocation["a"][0] == pytest.approx(70 * 25 / 150)


def test_largest_remainder_ties_go_to_the_larger_pool_then_the_name():
    # Quotas 1.5, 1.5, 1.0 (n = 4 of 3 + 3 + 2): two floors of 1 and one of 1 = 3; one seat left,
    # tied remainders .5 and .5 of equal pools: the name decides.
    seats = {k: v for k, (_, v) in sampling.largest_remainder({"y": 3, "x": 3, "z": 2}, 4).items()}
    assert seats == {"x": 2, "y": 1, "z": 1}
    # Quotas .6 and .4 of pools 3 and 2 (n = 1 of 5): the larger remainder wins.
    assert {k: v for k, (_, v) in sampling.largest_remainder({"small": 2, "big": 3}, 1).items()} == {
        "small": 0,
        "big": 1,
    }


def test_allocation_never_exceeds_a_stratum_and_adds_up():
    sizes = {"a": 1, "b": 1, "c": 7, "d": 13, "e": 2}
    for n in range(0, sum(sizes.values()) + 1):
        allocation = sampling.largest_remainder(sizes, n)
        assert sum(seats for _, seats in allocation.values()) == n
        assert all(seats <= sizes[name] for name, (_, seats) in allocation.items())
    with pytest.raises(ValueError):
        sampling.largest_remainder(sizes, 25)


def test_the_same_inputs_give_the_same_sample_and_strata_are_respected():
    pool = [(pk, ["u", "d"][pk % 3 == 0]) for pk in range(1, 151)]  # 50 "d", 100 "u"
    first = sampling.stratified_sample(pool, 25, seed=7, group="top")
    again = sampling.stratified_sample(list(reversed(pool)), 25, seed=7, group="top")
    other = sampling.stratified_sample(pool, 25, seed=8, group="top")
    assert first.chosen == again.chosen
    assert first.chosen != other.chosen
    assert len(set(first.chosen)) == 25
    strata = {s.name: s for s in first.strata}
    assert (strata["d"].allocated, strata["u"].allocated) == (8, 17)  # quotas 8.33 and 16.67
    counts = Counter(dict(pool)[pk] for pk in first.chosen)
    assert counts == {"d": 8, "u": 17}


def test_item_numbers_are_a_seeded_permutation():
    ids = [10, 20, 30, 40, 50, 60]
    numbers = sampling.item_numbers(ids, seed=3)
    assert sorted(numbers.values()) == [1, 2, 3, 4, 5, 6]
    assert numbers == sampling.item_numbers(list(reversed(ids)), seed=3)
