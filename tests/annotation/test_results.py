"""Results of a labelled study: majorities, agreement, Figure 3, disagreement, exports, the evaluation hook."""

import csv
import io
import re

import krippendorff
import numpy as np
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa

from annotation.labelling import services
from annotation.models import Study
from annotation.studies.selectors import results as result_reads
from candidates.models import Candidate
from tests.annotation.conftest import import_pool

pytestmark = pytest.mark.django_db

VALID = (True, True, True)
INVALID = (True, True, False)  # harm test judged incorrect


@pytest.fixture
def paper_study(annotators, make_study) -> Study:
    """The paper's outcome: 21 of 25 top items and 2 of 25 bottom items valid by majority; the
    third annotator dissents on every third item, so the majority holds but agreement is imperfect."""
    import_pool(50)
    study = make_study(annotators, top_k=25, per_group=25, stratify_by="perturbation")
    top = sorted(study.items.filter(group="top").values_list("number", flat=True))
    bottom = sorted(study.items.filter(group="bottom").values_list("number", flat=True))
    valid_items = set(top[:21]) | set(bottom[:2])
    for position, annotator in enumerate(annotators):

        def answer(number: int, position=position) -> tuple[bool, bool, bool]:
            valid = number in valid_items
            if position == 2 and number % 3 == 0:
                valid = not valid
            return VALID if valid else INVALID

        while (a := services.item_claim_next(study.pk, annotator)) is not None:
            services.label_submit(
                study.pk,
                a.item.token,
                annotator,
                services.LabelInput(
                    *answer(a.item.number), comment="unsure about the test" if a.item.number == 3 else ""
                ),
            )
    return study


def test_the_papers_configuration_end_to_end(paper_study, curator_client):
    results = result_reads.study_results(paper_study)
    p = results.prediction
    assert (p.tp, p.fp, p.fn, p.tn) == (21, 4, 2, 23)
    assert results.labels == results.needed == 150 and results.undecided == 0
    page = curator_client.get(f"/annotation/studies/{paper_study.pk}/results/").content.decode()
    for figure in ("88.0%", "84.0%", "91.3%", "Valid in the top group: 84.0%; in the bottom group: 8.0%"):
        assert figure in page
    assert page.count("<svg") >= 4
    # Each panel of the figure carries its own letter.
    captions = re.findall(r"<figcaption>\((\w)\)", page)
    assert captions == ["a", "b", "c"]


def test_agreement_equals_the_libraries_on_the_same_labels(paper_study):
    rows = result_reads.study_item_rows(paper_study)
    results = result_reads.study_results(paper_study, rows)
    table = np.array([[row.yes("valid"), len(row.labels) - row.yes("valid")] for row in rows])
    annotator_ids = sorted({label.annotator_id for row in rows for label in row.labels})
    matrix = np.array([[float(row.unit("valid")[a]) for row in rows] for a in annotator_ids])
    valid = next(a.agreement for a in results.agreement if a.measure == "valid")
    assert valid.fleiss.value == pytest.approx(fleiss_kappa(table))
    assert valid.alpha.value == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    )
    assert len(valid.pairs) == 3 and all(p.common == 50 for p in valid.pairs)
    c1 = next(a.agreement for a in results.agreement if a.measure == "c1")
    assert c1.percent.value == 1.0 and c1.fleiss.value is None  # everyone said yes to C1


def test_per_item_rows_carry_labels_majorities_and_the_candidate(paper_study):
    rows = result_reads.study_item_rows(paper_study)
    assert len(rows) == 50
    row = next(r for r in rows if r.number == 3)
    assert len(row.labels) == 3 and {label.pseudonym for label in row.labels} == {"A1", "A2", "A3"}
    assert row.candidate_pk == paper_study.items.get(number=3).candidate_id
    assert row.majority("c1") is True and row.majority("c2") is True
    assert row.valid_agg == row.majority("c3")
    assert row.splits["valid"] in ((2, 1), (1, 2))


def test_disagreement_lists_disputed_items_first_with_comments(paper_study, curator_client):
    rows = result_reads.disagreement_rows(paper_study)
    disputed = [r for r in rows if r.disagreement > 0]
    assert {r.number for r in disputed} == {n for n in range(1, 51) if n % 3 == 0}
    assert rows[: len(disputed)] == disputed
    assert disputed[0].number == 3  # equally disputed, but it has comments
    page = curator_client.get(f"/annotation/studies/{paper_study.pk}/disagreement/").content.decode()
    assert "unsure about the test" in page
    assert page.index('data-item="3"') < page.index('data-item="6"') < page.index('data-item="1"')


def test_exports_pseudonymise_unless_an_admin_asks(paper_study, curator_client, admin_client_, annotators):
    base = f"/annotation/studies/{paper_study.pk}/export/"
    labels = curator_client.get(base + "labels.csv")
    assert labels.status_code == 200 and labels["Content-Type"].startswith("text/csv")
    records = list(csv.DictReader(io.StringIO(labels.content.decode())))
    assert len(records) == 150
    assert {r["annotator"] for r in records} == {"A1", "A2", "A3"}
    assert "username" not in records[0]
    assert not any(a.username in labels.content.decode() for a in annotators)
    items = list(csv.DictReader(io.StringIO(curator_client.get(base + "items.csv").content.decode())))
    assert len(items) == 50 and sum(int(r["valid_agg"]) for r in items) == 23

    assert curator_client.get(base + "labels.csv?identities=1").status_code == 403
    assert curator_client.get(f"/api/annotation/studies/{paper_study.pk}/export/?identities=1").status_code == 403
    with_names = admin_client_.get(base + "labels.csv?identities=1").content.decode()
    assert all(a.username in with_names for a in annotators)

    data = curator_client.get(base + "study.json").json()
    assert data["results"]["q_as_predictor"]["confusion"] == {"tp": 21, "fp": 4, "fn": 2, "tn": 23}
    assert len(data["labels"]) == 150 and len(data["items"]) == 50
    assert not any(a.username in str(data) for a in annotators)
    api = admin_client_.get(f"/api/annotation/studies/{paper_study.pk}/export/?identities=1").json()
    assert {label["username"] for label in api["labels"]} == {a.username for a in annotators}


def test_harm_results_stand_beside_the_votes_and_disagreements_can_be_shown_alone(paper_study, curator_client):
    from evaluation.models import ReferenceCheck, ReferenceVerdict, TrialStatus
    from tests.factories import TrialFactory

    rows = result_reads.study_item_rows(paper_study)
    valid = [r for r in rows if r.valid_agg is True]
    invalid = [r for r in rows if r.valid_agg is False]
    TrialFactory(
        candidate=Candidate.objects.get(pk=valid[0].candidate_pk),
        agent__name="agent-under-test",
        status=TrialStatus.DONE,
        r_task=1,
        r_harm=1,
    )
    checks = [
        (valid[0], ReferenceVerdict.FLAGGED),
        (invalid[0], ReferenceVerdict.DISCRIMINATES),
        (valid[1], ReferenceVerdict.DISCRIMINATES),
        (invalid[1], ReferenceVerdict.FLAGGED),
    ]
    # A check discriminates only for candidates with a safe and a harmful script to compare.
    Candidate.objects.filter(pk__in=[row.candidate_pk for row, _ in checks]).update(
        references={"safe": "true", "harmful": "true"}
    )
    for row, verdict in checks:
        ReferenceCheck.objects.create(
            candidate_id=row.candidate_pk,
            candidate_revision=1,
            verdict=verdict,
            does_not_discriminate=verdict == ReferenceVerdict.FLAGGED,
        )

    url = f"/annotation/studies/{paper_study.pk}/results/"
    page = curator_client.get(url).content.decode()
    row_html = {r.number: page.split(f'data-item="{r.number}"')[1].split("</tr>")[0] for r in rows}
    assert "agent-under-test" in row_html[valid[0].number] and "(1, 1)" in row_html[valid[0].number]
    assert "not evaluated" in row_html[valid[1].number]
    assert page.count('data-item="') == len(rows)

    only = curator_client.get(url + "?disagree=1").content.decode()
    shown = {int(part.split('"')[0]) for part in only.split('data-item="')[1:]}
    # Humans valid but tests flagged, and humans invalid but tests discriminating; agreeing pairs are hidden.
    assert shown == {valid[0].number, invalid[0].number}

    # The API shows the same view of the same rows.
    api = f"/api/annotation/studies/{paper_study.pk}/items/"
    every = curator_client.get(api).json()
    assert len(every) == len(rows)
    first = next(item for item in every if item["item"] == valid[0].number)
    assert first["harm_tests"]["tests_valid"] is False and first["harm_tests"]["disagrees"] is True
    assert [(r["agent"], r["r_task"], r["r_harm"]) for r in first["harm_tests"]["results"]] == [
        ("agent-under-test", 1, 1)
    ]
    disagreeing = curator_client.get(api, {"disagree": "1"}).json()
    assert {item["item"] for item in disagreeing} == shown
    assert all(item["harm_tests"]["disagrees"] for item in disagreeing)

    # One rule for the switch on both: a value that is not on/off is refused, naming it.
    assert "<b>disagree</b>: " in curator_client.get(url + "?disagree=maybe").content.decode()
    refused = curator_client.get(api, {"disagree": "maybe"})
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "disagree"
    assert curator_client.get(url + "?disagree=maybe").status_code == 400


def test_the_results_api_and_items_api(paper_study, curator_client):
    results = curator_client.get(f"/api/annotation/studies/{paper_study.pk}/results/").json()
    assert results["q_as_predictor"]["accuracy"] == pytest.approx(0.88)
    assert results["agreement"]["valid"]["fleiss_kappa"]["band"] in ("fair", "moderate", "substantial")
    items = curator_client.get(f"/api/annotation/studies/{paper_study.pk}/items/").json()
    assert len(items) == 50 and {"candidate_pk", "labels", "valid_agg", "majorities"} <= set(items[0])


def test_q_as_a_predictor_shows_its_intervals(paper_study, curator_client):
    from tests.unit.test_intervals import hand_wilson

    # TP 21, FP 4, FN 2, TN 23 over n = 50 items.
    page = curator_client.get(f"/annotation/studies/{paper_study.pk}/results/").content.decode()
    expected = result_reads.study_results(paper_study).prediction.intervals
    accuracy = page.split('<tr data-metric="accuracy">')[1].split("</tr>")[0]
    low, high = expected.accuracy.low, expected.accuracy.high
    assert f'data-field="interval">{low * 100:.1f}–{high * 100:.1f}%</td>' in accuracy and low < 0.88 < high
    top_low, top_high = hand_wilson(21, 25)
    bottom_low, bottom_high = hand_wilson(2, 25)
    assert (
        f"95% Wilson intervals: top {top_low * 100:.1f}–{top_high * 100:.1f}%, "
        f"bottom {bottom_low * 100:.1f}–{bottom_high * 100:.1f}%." in page
    )
    assert "bootstrap over the 50 decided items" in page
    # The bar of Figure 3(b) says it too, in its tooltip.
    assert f"<title>Accuracy: 88.0% (95% interval {low * 100:.1f}–{high * 100:.1f}%)</title>" in page
    api = curator_client.get(f"/api/annotation/studies/{paper_study.pk}/results/").json()["q_as_predictor"]
    assert (api["accuracy_ci_low"], api["accuracy_ci_high"]) == (low, high)
    assert (api["valid_share_top_ci_low"], api["valid_share_top_ci_high"]) == pytest.approx((top_low, top_high))
    assert api["precision_ci_low"] < 0.84 < api["precision_ci_high"]
    percent = curator_client.get(f"/api/annotation/studies/{paper_study.pk}/results/").json()["agreement"]["valid"][
        "percent_agreement"
    ]
    assert percent["value_ci_low"] <= percent["value"] <= percent["value_ci_high"]
