"""The one registry every hook is: an app's ready() that runs twice must not show its panel twice,
and panels of several apps show in the order they were registered with."""

from __future__ import annotations

from veriharm_site.registries import Registry


def _evaluation_panel() -> str:
    return "evaluation"


def _generation_panel() -> str:
    return "generation"


def _human_verdicts_panel() -> str:
    return "human verdicts"


def _search_panel() -> str:
    return "search"


def test_an_entry_registered_again_is_kept_once() -> None:
    panels: Registry = Registry()
    panels.register(_evaluation_panel, order=20)
    panels.register(_evaluation_panel, order=20)
    panels.register(_evaluation_panel, order=5)
    assert list(panels) == [_evaluation_panel]


def test_entries_are_read_by_their_order_then_as_they_came() -> None:
    panels: Registry = Registry()
    panels.register(_evaluation_panel, order=20)
    panels.register(_generation_panel, order=15)
    panels.register(_human_verdicts_panel, order=10)
    panels.register(_search_panel, order=15)  # the same order as generation, registered later
    assert [panel() for panel in panels] == ["human verdicts", "generation", "search", "evaluation"]


def test_an_empty_registry_says_so_and_a_read_is_a_snapshot() -> None:
    actions: Registry = Registry()
    assert not actions
    actions.register("new study")
    reading = iter(actions)
    actions.register("another action")
    assert actions
    assert list(reading) == ["new study"]
    assert list(actions) == ["new study", "another action"]
