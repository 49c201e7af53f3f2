"""A run's selection read in words on its page (pure)."""

from evaluation.runs.selection import selection_in_words


def test_each_kind_of_selection_reads_as_a_phrase():
    assert selection_in_words({"kind": "top_k", "k": 150}) == "the top 150 of the ranking"
    assert selection_in_words({"kind": "ids", "ids": ["a"]}) == "1 candidate id: a"
    assert selection_in_words({"kind": "ids", "ids": [f"c{i}" for i in range(7)]}) == (
        "7 candidate ids: c0, c1, c2, c3, c4 and 2 more"
    )
    assert selection_in_words(
        {"kind": "filter", "group": "top", "risk_category": "exfiltration", "q": "curl", "k": 10}
    ) == ("the first 10 of the ranking filtered by top group, risk category exfiltration, matching \u201ccurl\u201d")
    assert selection_in_words({"kind": "filter"}) == "the ranking"
    assert selection_in_words({"kind": "study", "study": 4}) == "the items of study 4"
    assert selection_in_words({"kind": "release", "release": 2}) == "the records of release 2"
    assert selection_in_words({"kind": "rerun", "run": 3, "of": {"kind": "top_k", "k": 5}}) == (
        "those of run 3, which were the top 5 of the ranking"
    )
    assert selection_in_words({}) == "an unrecorded selection"
