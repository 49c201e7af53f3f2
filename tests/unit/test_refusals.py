"""Every refusal carries its field and message, however many problems it names."""

from __future__ import annotations

import dataclasses
import importlib

import pytest

from annotation.studies.services import StudyRefused
from evaluation.runs.refusals import LaunchRefused, error_in_words
from veriharm_site.refusals import Refused


def _every_refusal() -> list[type[Refused]]:
    # Every page and API route, so every service they reach (and its refusals) is loaded.
    importlib.import_module("veriharm_site.urls")
    found, todo = [], [Refused]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_no_refusal_replaces_the_constructor_that_sets_its_message():
    # A dataclass generates an __init__ that never calls Refused's, leaving field and message unset.
    refusals = _every_refusal()
    assert LaunchRefused in refusals and StudyRefused in refusals
    assert [cls.__qualname__ for cls in refusals if dataclasses.is_dataclass(cls)] == []


def test_a_launch_refusal_names_each_problem_under_its_field_and_all_of_them_in_its_message():
    refused = LaunchRefused(["repetitions must be from 1 to 20", "the selection matches no candidate"])
    assert refused.message == "repetitions must be from 1 to 20; the selection matches no candidate"
    assert str(refused) == refused.message and refused.field == "repetitions"
    assert refused.error_pairs() == [
        ("repetitions", "repetitions must be from 1 to 20"),
        ("", "the selection matches no candidate"),
    ]


def test_the_launch_page_says_a_refusal_in_words_not_by_api_field():
    assert error_in_words("budget_usd must be an amount in USD, got 'x'") == (
        "The USD budget must be an amount in USD, got 'x'"
    )
    assert error_in_words("test_timeout must be at least 1") == "The test timeout must be at least 1"
    assert error_in_words("the selection matches no candidate") == "the selection matches no candidate"


def test_a_study_refusal_names_each_field():
    refused = StudyRefused({"name": "is required", "seed": "must be a whole number"})
    assert refused.message == "name: is required; seed: must be a whole number"
    assert refused.error_pairs() == [("name", "is required"), ("seed", "must be a whole number")]


def test_a_refusal_without_a_message_is_a_mistake_caught_where_it_is_made():
    with pytest.raises(ValueError, match="needs a message"):
        Refused("field", "")
