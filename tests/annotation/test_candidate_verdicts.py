"""The human verdicts on a candidate's page: its row in every study that sampled it, newest study
first, the same rows as each study's results, in the same queries however many studies there are."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import StudyItem
from annotation.studies.selectors import results as result_reads
from tests.annotation.conftest import label_all


def _rows_of(candidate_pk: int) -> tuple[list, int]:
    with CaptureQueriesContext(connection) as queries:
        rows = result_reads.candidate_item_rows(candidate_pk)
    return rows, len(queries)


def test_a_candidate_sampled_by_several_studies_shows_each_studys_row(pool, annotators, make_study):
    first = make_study(annotators)
    label_all(first, annotators[0], lambda n: (True, True, n % 2 == 0))
    label_all(first, annotators[1], lambda n: (True, False, True))
    second = make_study(annotators)
    label_all(second, annotators[2], lambda n: (False, True, True))
    shared = (
        StudyItem.objects.filter(study=first)
        .filter(candidate_id__in=StudyItem.objects.filter(study=second).values("candidate_id"))
        .values_list("candidate_id", flat=True)
        .first()
    )
    assert shared is not None  # the same seed samples the same candidates

    rows, queries_two = _rows_of(shared)
    assert [study.pk for study, _ in rows] == [second.pk, first.pk]
    for study, row in rows:
        [expected] = [r for r in result_reads.study_item_rows(study) if r.candidate_pk == shared]
        assert row == expected
    assert [len(row.labels) for _, row in rows] == [1, 2]
    assert [label.pseudonym for label in rows[1][1].labels] == sorted(label.pseudonym for label in rows[1][1].labels)

    make_study(annotators)
    rows, queries_three = _rows_of(shared)
    assert len(rows) == 3 and queries_three == queries_two
