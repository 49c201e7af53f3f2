"""The agreement policy (`annotation.studies.measures.agreement`): pure, and under 2+1 routing Fleiss' kappa is taken
on the first round of labels while the other figures use every label."""

from __future__ import annotations

import ast
from pathlib import Path

from annotation.studies.measures import agreement

ROOT = Path(__file__).resolve().parents[2]

# Five items: the first two raters of each; a third rater only on the items they disagreed on.
FIRST_ROUND = [
    {1: True, 2: True},
    {1: True, 2: False},
    {1: False, 2: False},
    {1: False, 2: True},
    {1: True, 2: True},
]
ALL_LABELS = [
    {1: True, 2: True},
    {1: True, 2: False, 3: True},
    {1: False, 2: False},
    {1: False, 2: True, 3: False},
    {1: True, 2: True},
]


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = "annotation.studies.measures." * bool(node.level) + (node.module or "")
            names |= (
                {base.rstrip(".")}
                if node.module
                else {f"annotation.studies.measures.{alias.name}" for alias in node.names}
            )
    return names


def test_the_policy_reads_no_database():
    # The policy and the statistics it relies on import neither Django nor any module that reads
    # the database, so the figures follow from the labels handed in alone.
    for module in ("agreement", "statistics"):
        imported = _imported_modules(ROOT / "annotation" / "studies" / "measures" / f"{module}.py")
        assert not {name for name in imported if name.split(".")[0] == "django"}, module
        assert imported <= {
            "__future__",
            "annotation.studies.measures.statistics",
            "collections",
            "collections.abc",
            "dataclasses",
            "functools",
            "itertools",
            "krippendorff",
            "numpy",
            "statsmodels.stats.inter_rater",
            "typing",
            "veriharm_site.intervals",
            "warnings",
        }, module


def test_two_plus_one_takes_fleiss_on_the_first_round_and_the_rest_on_every_label():
    figures = agreement.measure_agreement(ALL_LABELS, FIRST_ROUND, two_plus_one=True, annotators_per_item=3)
    on_first_round = agreement.measure_agreement(FIRST_ROUND, FIRST_ROUND, two_plus_one=False, annotators_per_item=2)
    # Fixed routing with three per item finds only two complete items among these: not the first round.
    fixed = agreement.measure_agreement(ALL_LABELS, FIRST_ROUND, two_plus_one=False, annotators_per_item=3)

    assert figures.fleiss == on_first_round.fleiss
    assert figures.fleiss.units == 5
    assert fixed.fleiss.units == 2
    assert figures.alpha == fixed.alpha
    assert figures.alpha != on_first_round.alpha


def test_the_design_sentence_follows_the_routing():
    assert "2+1 routing" in agreement.design(two_plus_one=True, annotators_per_item=3)
    fixed = agreement.design(two_plus_one=False, annotators_per_item=4)
    assert "items with all 4 labels" in fixed
    assert "2+1" not in fixed
