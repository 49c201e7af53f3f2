"""The order in which each annotator meets a study's items, and the gold items mixed into it (pure)."""

from annotation.labelling.order import annotator_order, mix_gold


def test_each_annotator_has_an_order_of_their_own():
    ids = list(range(1, 51))
    orders = [annotator_order(ids, seed=5, annotator_id=a) for a in (1, 2, 3)]
    assert all(sorted(order) == ids for order in orders)
    assert len({tuple(order) for order in orders}) == 3
    assert orders[0] == annotator_order(list(reversed(ids)), seed=5, annotator_id=1)


def test_gold_is_spread_at_the_rate_and_comes_last_at_zero():
    order = list(range(10))
    mixed = mix_gold(order, {7, 8, 9}, 0.25)
    assert sorted(mixed) == order
    assert [mixed.index(g) for g in (7, 8, 9)] == [1, 5, 9]  # about one in four while gold is left
    assert mix_gold(list(range(6)), {0, 1}, 0) == [2, 3, 4, 5, 0, 1]
