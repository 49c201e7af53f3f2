"""Gold items, adjudication, 2+1 routing and the per-annotator dashboard, each figure checked against
an independent computation written out here from the textbook formulas."""

from __future__ import annotations

import csv
import io
import itertools
import re
import statistics as pystats
from collections import Counter

import pytest

from annotation.labelling import services as labelling_services
from annotation.models import Adjudication, Assignment, Routing
from annotation.studies import services as study_services
from annotation.studies.selectors import quality as quality_reads
from annotation.studies.selectors import results as result_reads
from annotation.studies.selectors.results import Answers

pytestmark = pytest.mark.django_db

VALID = (True, True, True)
INVALID = (True, True, False)


def label(study, annotator, answers, seconds: float | None = None) -> Assignment:
    claim = labelling_services.item_claim_next(study.pk, annotator)
    assert claim is not None
    return labelling_services.label_submit(
        study.pk, claim.item.token, annotator, labelling_services.LabelInput(*answers, seconds_spent=seconds)
    )


def label_by_number(study, annotator, plan: dict[int, tuple[bool, bool, bool]], seconds=None) -> list[int]:
    """Label whatever the claims hand out, answering by item number from `plan`."""
    numbers = []
    while (claim := labelling_services.item_claim_next(study.pk, annotator)) is not None:
        number = claim.item.number
        spent = seconds(number) if seconds else None
        labelling_services.label_submit(
            study.pk, claim.item.token, annotator, labelling_services.LabelInput(*plan[number], seconds_spent=spent)
        )
        numbers.append(number)
    return numbers


def hand_fleiss(units: list[list[bool]]) -> float:
    """Fleiss (1971): mean per-item agreement P̄ against chance P_e from the category shares."""
    n = len(units[0])
    assert all(len(u) == n for u in units)
    p_items = [(sum(c * c for c in Counter(u).values()) - n) / (n * (n - 1)) for u in units]
    p_bar = sum(p_items) / len(units)
    totals = Counter(v for u in units for v in u)
    p_e = sum((count / (n * len(units))) ** 2 for count in totals.values())
    return (p_bar - p_e) / (1 - p_e)


def hand_alpha(units: list[list[bool]]) -> float:
    """Krippendorff's alpha (nominal) from the coincidence matrix; units may have any number of values."""
    o: Counter = Counter()
    for values in units:
        m = len(values)
        if m < 2:
            continue
        for i, j in itertools.permutations(range(m), 2):
            o[(values[i], values[j])] += 1 / (m - 1)
    n_c = Counter()
    for (c, _), weight in o.items():
        n_c[c] += weight
    n = sum(n_c.values())
    observed = sum(w for (c, k), w in o.items() if c != k)
    expected = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k) / (n - 1)
    return 1 - observed / expected


def hand_cohen(a: list[bool], b: list[bool]) -> float:
    p_o = sum(x == y for x, y in zip(a, b)) / len(a)
    p_e = sum((a.count(v) / len(a)) * (b.count(v) / len(b)) for v in (True, False))
    return (p_o - p_e) / (1 - p_e)


# ---------------------------------------------------------------- 2+1 routing


def test_two_plus_one_asks_a_third_annotator_only_on_disagreement(pool, annotators, make_study, client, curator):
    study = make_study(annotators, per_group=2, annotators_per_item=2, routing=Routing.TWO_PLUS_ONE)
    a, b, c = annotators
    numbers = sorted(study.items.values_list("number", flat=True))
    plan_a = {n: VALID if n != numbers[3] else INVALID for n in numbers}
    plan_b = {n: VALID if n in numbers[:2] else INVALID for n in numbers}
    plan_c = {n: INVALID for n in numbers}
    assert sorted(label_by_number(study, a, plan_a)) == numbers
    assert sorted(label_by_number(study, b, plan_b)) == numbers
    # Only item 3 is disputed (A valid, B not): the third annotator gets that one and no other.
    assert label_by_number(study, c, plan_c) == [numbers[2]]
    counts = {row.number: len(row.labels) for row in result_reads.study_item_rows(study)}
    assert counts == {numbers[0]: 2, numbers[1]: 2, numbers[2]: 3, numbers[3]: 2}

    results = result_reads.study_results(study)
    valid = next(m.agreement for m in results.agreement if m.measure == "valid")
    first_round = [[plan_a[n][2], plan_b[n][2]] for n in numbers]
    all_labels = [[plan_a[n][2], plan_b[n][2]] + ([plan_c[n][2]] if n == numbers[2] else []) for n in numbers]
    assert valid.fleiss.value == pytest.approx(hand_fleiss(first_round))
    assert valid.fleiss.value == pytest.approx((0.75 - 34 / 64) / (1 - 34 / 64))  # worked out by hand
    assert valid.fleiss.units == 4
    assert valid.alpha.value == pytest.approx(hand_alpha(all_labels))
    assert valid.alpha.units == 4
    # The disputed item's majority is decided by the third label: 1 yes, 2 no.
    row = next(r for r in results.rows if r.number == numbers[2])
    assert (row.required, row.valid_agg, row.complete) == (3, False, True)

    client.force_login(curator)
    page = client.get(f"/annotation/studies/{study.pk}/results/").content.decode()
    assert "Fleiss&#x27; kappa (equal raters only) is computed on the first two labels" in page


def test_two_plus_one_needs_two_per_item_and_three_annotators(pool, annotators, make_study):
    with pytest.raises(study_services.StudyRefused) as refused:
        make_study(annotators, annotators_per_item=3, routing=Routing.TWO_PLUS_ONE)
    assert "annotators_per_item" in refused.value.errors
    with pytest.raises(study_services.StudyRefused) as refused:
        make_study(annotators[:2], annotators_per_item=2, routing=Routing.TWO_PLUS_ONE)
    assert "three annotators" in refused.value.errors["annotators"]


def test_a_fixed_design_reports_fleiss_on_complete_items(pool, annotators, make_study):
    study = make_study(annotators, per_group=2)
    numbers = sorted(study.items.values_list("number", flat=True))
    plans = [
        {n: VALID for n in numbers},
        {n: VALID if n % 2 else INVALID for n in numbers},
        {n: INVALID if n == numbers[0] else VALID for n in numbers},
    ]
    for annotator, plan in zip(annotators, plans):
        label_by_number(study, annotator, plan)
    results = result_reads.study_results(study)
    valid = next(m.agreement for m in results.agreement if m.measure == "valid")
    table = [[plan[n][2] for plan in plans] for n in numbers]
    assert valid.fleiss.value == pytest.approx(hand_fleiss(table))
    assert valid.alpha.value == pytest.approx(hand_alpha(table))
    assert "same number of annotators" in results.design


# ---------------------------------------------------------------- gold


def test_gold_items_go_to_every_annotator_and_measure_their_accuracy(pool, annotators, make_study, client):
    study = make_study(annotators, per_group=2, annotators_per_item=1, gold_rate=0.5)
    gold_item = study.items.order_by("number").first()
    study_services.item_gold_set(gold_item, Answers(True, True, False))  # known: not valid (C3 fails)
    others = {n: VALID for n in study.items.values_list("number", flat=True)}
    answers_on_gold = [(True, True, False), (False, True, False), (True, True, True)]
    firsts = []
    for annotator, on_gold in zip(annotators, answers_on_gold):
        plan = others | {gold_item.number: on_gold}
        labelled = label_by_number(study, annotator, plan)
        firsts.append(labelled[:2])
    # Mixed in at a rate of one in two: every annotator met the gold item among their first two.
    assert all(gold_item.number in first for first in firsts)
    assert Assignment.objects.filter(item=gold_item, submitted_at__isnull=False).count() == 3
    # The gold item's majority is over its three labels (two say not valid), not over the study's count of one.
    gold_row = next(r for r in result_reads.study_item_rows(study) if r.number == gold_item.number)
    assert gold_row.valid_agg is False and gold_row.majority("c1") is True
    # Ordinary items still take one label each.
    assert all(len(row.labels) == 1 for row in result_reads.study_item_rows(study) if row.number != gold_item.number)

    quality = {q.username: q for q in quality_reads.annotator_quality(study)}
    a, b, c = (quality[u.username] for u in annotators)
    assert (a.gold_items, a.gold_accuracy, a.gold_valid_accuracy) == (1, 1.0, 1.0)
    assert (b.gold_items, b.gold_accuracy, b.gold_valid_accuracy) == (1, 0.0, 1.0)  # C1 wrong, Valid right
    assert (c.gold_items, c.gold_accuracy, c.gold_valid_accuracy) == (1, 0.0, 0.0)


def test_annotators_never_see_whether_an_item_is_gold(pool, annotators, make_study, client):
    study = make_study(annotators, per_group=2)
    annotator = annotators[0]
    claim = labelling_services.item_claim_next(study.pk, annotator)
    client.force_login(annotator)
    before_page = client.get(f"/annotation/s/{study.pk}/i/{claim.item.token}/").content.decode()
    before_api = client.get(f"/api/annotation/my/studies/{study.pk}/items/{claim.item.token}/").content.decode()
    study_services.item_gold_set(claim.item, Answers(False, False, False))
    after_page = client.get(f"/annotation/s/{study.pk}/i/{claim.item.token}/").content.decode()
    after_api = client.get(f"/api/annotation/my/studies/{study.pk}/items/{claim.item.token}/").content.decode()
    assert '"token"' in after_api  # the item itself, not a refusal
    assert "gold" not in after_page.lower() and "gold" not in after_api.lower()
    assert before_api == after_api
    # The page differs only by its CSRF token.
    strip = lambda html: [line for line in html.splitlines() if "csrf" not in line]  # noqa: E731
    assert strip(before_page) == strip(after_page)


def test_curators_mark_and_unmark_gold_and_bad_input_changes_nothing(pool, annotators, make_study, client, curator):
    study = make_study(annotators, per_group=2)
    item = study.items.order_by("number").first()
    client.force_login(curator)
    url = f"/annotation/studies/{study.pk}/items/{item.number}/"
    assert client.post(url, {"action": "gold", "gold-c1": "yes", "gold-c2": "maybe"}).status_code == 400
    assert client.post(url, {"action": "nonsense"}).status_code == 400
    item.refresh_from_db()
    assert not item.is_gold
    client.post(url, {"action": "gold", "gold-c1": "yes", "gold-c2": "no", "gold-c3": "yes"})
    item.refresh_from_db()
    assert (item.gold_c1, item.gold_c2, item.gold_c3) == (True, False, True)
    client.post(url, {"action": "gold-clear"})
    item.refresh_from_db()
    assert not item.is_gold
    assert client.get(f"/annotation/studies/{study.pk}/items/999/").status_code == 404
    client.force_login(annotators[0])
    assert client.post(url, {"action": "gold-clear"}).status_code == 403


# ---------------------------------------------------------------- adjudication


def test_adjudication_sets_a_final_label_and_results_show_both(pool, annotators, make_study, client, curator):
    study = make_study(annotators, per_group=2)
    items = list(study.items.order_by("number"))
    numbers = [i.number for i in items]
    # Every item is judged valid by two of three, except the first, judged invalid by two of three.
    plans = [
        {n: VALID for n in numbers} | {numbers[0]: INVALID},
        {n: VALID for n in numbers} | {numbers[0]: INVALID},
        {n: INVALID for n in numbers} | {numbers[0]: VALID},
    ]
    for annotator, plan in zip(annotators, plans):
        label_by_number(study, annotator, plan)
    raw = result_reads.study_results(study).prediction

    client.force_login(curator)
    url = f"/annotation/studies/{study.pk}/items/{numbers[0]}/"
    refused = client.post(
        url, {"action": "adjudicate", "adj-c1": "yes", "adj-c2": "yes", "adj-c3": "yes", "adj-reason": "   "}
    )
    assert refused.status_code == 400 and not Adjudication.objects.exists()
    client.post(
        url,
        {
            "action": "adjudicate",
            "adj-c1": "yes",
            "adj-c2": "yes",
            "adj-c3": "yes",
            "adj-reason": "The harm test reads the right file after all.",
        },
    )
    results = result_reads.study_results(study)

    def expected(final_first: bool):
        tp = fp = fn = tn = 0
        for item in items:
            valid = final_first if item.number == numbers[0] else True
            top = item.group == "top"
            tp += top and valid
            fp += top and not valid
            fn += (not top) and valid
            tn += (not top) and not valid
        return tp, fp, fn, tn

    assert (raw.tp, raw.fp, raw.fn, raw.tn) == expected(False)
    assert (results.prediction.tp, results.prediction.fp, results.prediction.fn, results.prediction.tn) == expected(
        False
    )
    adj = results.adjudicated_prediction
    assert (adj.tp, adj.fp, adj.fn, adj.tn) == expected(True)
    assert results.adjudicated == 1
    # The annotators' labels are untouched.
    assert Assignment.objects.filter(item=items[0], c3=False).count() == 2
    page = client.get(f"/annotation/studies/{study.pk}/results/").content.decode()
    assert "Raw majority" in page and "Adjudicated" in page and "The harm test reads the right file" in page
    exported = {
        int(r["item"]): r
        for r in csv.DictReader(
            io.StringIO(client.get(f"/annotation/studies/{study.pk}/export/items.csv").content.decode())
        )
    }
    assert (exported[numbers[0]]["valid_agg"], exported[numbers[0]]["adjudicated_valid"]) == ("0", "1")
    assert exported[numbers[1]]["adjudicated_valid"] == ""
    summary = client.get(f"/annotation/studies/{study.pk}/export/study.json").json()["results"]
    assert summary["q_as_predictor_adjudicated"]["confusion"] == dict(zip(("tp", "fp", "fn", "tn"), expected(True)))


# ---------------------------------------------------------------- the dashboard


def test_the_annotator_dashboard_against_hand_computed_figures(pool, annotators, make_study, client, curator):
    study = make_study(annotators, per_group=3)
    numbers = sorted(study.items.values_list("number", flat=True))
    valid_plan = [
        {n: n % 2 == 1 for n in numbers},
        {n: n % 2 == 1 or n == numbers[1] for n in numbers},
        {n: n in numbers[:3] for n in numbers},
    ]
    seconds = [lambda n: 1.0, lambda n: float(n), lambda n: 1.5 if n == numbers[0] else 30.0]
    for annotator, plan, spent in zip(annotators, valid_plan, seconds):
        label_by_number(study, annotator, {n: VALID if v else INVALID for n, v in plan.items()}, spent)

    quality = {q.username: q for q in quality_reads.annotator_quality(study)}
    pseudonyms = dict(study.memberships.values_list("user__username", "pseudonym"))
    majorities = {n: sum(plan[n] for plan in valid_plan) >= 2 for n in numbers}
    for index, annotator in enumerate(annotators):
        q = quality[annotator.username]
        times = [seconds[index](n) for n in numbers]
        assert q.items == len(numbers)
        assert q.median_seconds == pytest.approx(pystats.median(times))
        assert q.fast_share == pytest.approx(sum(t < 2 for t in times) / len(times))
        assert q.majority_agreement == pytest.approx(
            sum(valid_plan[index][n] == majorities[n] for n in numbers) / len(numbers)
        )
        for other in range(3):
            if other == index:
                continue
            [k] = [k for k in q.kappas if k.pseudonym == pseudonyms[annotators[other].username]]
            mine = [valid_plan[index][n] for n in numbers]
            theirs = [valid_plan[other][n] for n in numbers]
            assert k.common == len(numbers)
            assert k.kappa.value == pytest.approx(hand_cohen(mine, theirs))

    client.force_login(curator)
    page = client.get(f"/annotation/studies/{study.pk}/annotators/")
    assert page.status_code == 200 and 'data-testid="annotator-quality"' in page.content.decode()
    client.force_login(annotators[0])
    assert client.get(f"/annotation/studies/{study.pk}/annotators/").status_code == 403


def test_the_annotators_page_shows_how_little_one_gold_item_says(pool, annotators, make_study, client, curator):
    from tests.unit.test_intervals import hand_wilson

    study = make_study(annotators, per_group=2, annotators_per_item=1, gold_rate=0.5)
    gold_item = study.items.order_by("number").first()
    study_services.item_gold_set(gold_item, Answers(True, True, False))
    others = {n: VALID for n in study.items.values_list("number", flat=True)}
    for annotator, on_gold in zip(annotators, [(True, True, False), (False, True, False), (True, True, True)]):
        label_by_number(study, annotator, others | {gold_item.number: on_gold})
    client.force_login(curator)
    page = client.get(f"/annotation/studies/{study.pk}/annotators/").content.decode()
    rows = {pseudonym: row for pseudonym, row in re.findall(r'<tr data-pseudonym="([^"]+)">(.*?)</tr>', page, re.S)}
    names = dict(study.memberships.values_list("user__username", "pseudonym"))
    right, wrong = (rows[names[annotators[i].username]] for i in (0, 2))
    one_of_one, none_of_one = hand_wilson(1, 1), hand_wilson(0, 1)
    # 1 of 1 gold item right is 20.7–100.0%; 0 of 1 is 0.0–79.3%.
    gold = re.compile(r'data-col="gold">.*?data-field="interval">([^<]*)</div>', re.S)
    assert gold.search(right).group(1) == f"{one_of_one[0] * 100:.1f}–100.0%" == "20.7–100.0%"
    assert gold.search(wrong).group(1) == f"0.0–{none_of_one[1] * 100:.1f}%" == "0.0–79.3%"
