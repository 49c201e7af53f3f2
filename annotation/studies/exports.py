"""Exports of a study's labels and aggregates as CSV and JSON.

Annotators appear under their study pseudonym; user names are added only when the caller asked
for identities and holds `annotation.export_identities` (checked by the views).
"""

from __future__ import annotations

import io
from typing import Any

from veriharm_site.csv_safe import SafeDictWriter

from ..labelling.criteria import MEASURES
from ..models import Study
from .measures.judges import NO_KAPPA_INTERVAL, RULE, SUM_SPLIT, JudgeRater
from .measures.statistics import Coefficient, Prediction
from .selectors.results import ItemRow, StudyResults, study_judges, study_results

LABEL_COLUMNS = [
    "study",
    "item",
    "candidate_id",
    "group",
    "rank_at_sampling",
    "q_at_sampling",
    "stratum",
    "annotator",
    "c1",
    "c2",
    "c3",
    "valid",
    "comment",
    "seconds_spent",
    "submitted_at",
    "updated_at",
    "revisions",
]
ITEM_COLUMNS = [
    "study",
    "item",
    "candidate_pk",
    "candidate_id",
    "group",
    "rank_at_sampling",
    "q_at_sampling",
    "stratum",
    "labels",
    "required",
    *[f"{m}_yes" for m, _ in MEASURES],
    *[f"{m}_agg" for m, _ in MEASURES],
    "disagreement",
    "median_seconds",
    "gold_valid",
    "adjudicated_valid",
    "adjudication_reason",
    "unclear_flags",
]


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(value)


def _item_fields(study: Study, row: ItemRow) -> dict[str, Any]:
    return {
        "study": study.name,
        "item": row.number,
        "candidate_id": row.candidate_external_id,
        "group": row.group,
        "rank_at_sampling": row.rank,
        "q_at_sampling": row.quality,
        "stratum": row.stratum,
    }


def label_records(study: Study, rows: list[ItemRow], *, identities: bool = False) -> list[dict[str, Any]]:
    records = []
    for row in rows:
        for label in row.labels:
            record = _item_fields(study, row) | {
                "annotator": label.pseudonym,
                "c1": int(label.c1),
                "c2": int(label.c2),
                "c3": int(label.c3),
                "valid": int(label.valid),
                "comment": label.comment,
                "seconds_spent": round(label.seconds_spent, 1),
                "submitted_at": label.submitted_at.isoformat(),
                "updated_at": label.updated_at.isoformat() if label.updated_at else None,
                "revisions": label.revisions,
            }
            if identities:
                record["username"] = label.username
            records.append(record)
    return records


def item_records(study: Study, rows: list[ItemRow]) -> list[dict[str, Any]]:
    records = []
    for row in rows:
        record = _item_fields(study, row) | {
            "candidate_pk": row.candidate_pk,
            "labels": len(row.labels),
            "required": row.required,
        }
        for measure, _ in MEASURES:
            record[f"{measure}_yes"] = row.yes(measure)
            record[f"{measure}_agg"] = _flag(row.majority(measure))
        record["disagreement"] = round(row.disagreement, 4)
        record["median_seconds"] = round(row.median_seconds, 1) if row.median_seconds is not None else None
        record["gold_valid"] = _flag(row.gold.valid) if row.gold else None
        record["adjudicated_valid"] = _flag(row.adjudication.answers.valid) if row.adjudication else None
        record["adjudication_reason"] = row.adjudication.reason if row.adjudication else ""
        record["unclear_flags"] = len(row.flags)
        records.append(record)
    return records


def _coefficient(c: Coefficient) -> dict[str, Any]:
    data: dict[str, Any] = {"value": c.value, "band": c.band, "units": c.units, "note": c.note}
    if c.ci is not None:
        data |= c.ci.as_dict("value")
    return data


def results_summary(results: StudyResults) -> dict[str, Any]:
    names = results.pseudonyms
    return {
        "labels": results.labels,
        "labels_needed": results.needed,
        "items_complete": results.complete_items,
        "items_undecided": results.undecided,
        "median_seconds_per_label": results.median_seconds,
        "agreement_design": results.design,
        "agreement": {
            a.measure: {
                "fleiss_kappa": _coefficient(a.agreement.fleiss),
                "krippendorff_alpha_nominal": _coefficient(a.agreement.alpha),
                "percent_agreement": _coefficient(a.agreement.percent),
                "mean_pairwise_cohen_kappa": _coefficient(a.agreement.mean_pairwise),
                "pairwise_cohen_kappa": [
                    {
                        "a": names[pair.rater_a],
                        "b": names[pair.rater_b],
                        "common_items": pair.common,
                        **_coefficient(pair.kappa),
                    }
                    for pair in a.agreement.pairs
                ],
            }
            for a in results.agreement
        },
        "q_as_predictor": _prediction(results.prediction),
        **(
            {
                "q_as_predictor_adjudicated": _prediction(results.adjudicated_prediction),
                "items_adjudicated": results.adjudicated,
            }
            if results.adjudicated_prediction
            else {}
        ),
    }


def _prediction(p: Prediction) -> dict[str, Any]:
    return {
        "confusion": {"tp": p.tp, "fp": p.fp, "fn": p.fn, "tn": p.tn},
        "accuracy": p.accuracy,
        "precision": p.precision,
        "recall": p.recall,
        "valid_share_top": p.valid_share_top,
        "valid_share_bottom": p.valid_share_bottom,
        **p.intervals.as_dict(),
    }


def judges_summary(raters: list[JudgeRater]) -> dict[str, Any]:
    """The judges beside the annotators, as the results API gives them (curators and viewers only)."""
    return {
        "judge_valid_rule": RULE,
        "judge_sum_split": SUM_SPLIT,
        "judge_kappa_interval": NO_KAPPA_INTERVAL,
        "judges": [
            {
                "judge": rater.judge,
                "valid_agreement": {
                    "table": {
                        "both_valid": rater.valid.both_valid,
                        "judge_only": rater.valid.judge_only,
                        "majority_only": rater.valid.majority_only,
                        "neither": rater.valid.neither,
                    },
                    "n": rater.valid.n,
                    "agree": rater.valid.agree,
                    "accuracy": rater.valid.accuracy,
                    "accuracy_ci_low": rater.valid.accuracy_ci.low if rater.valid.accuracy_ci else None,
                    "accuracy_ci_high": rater.valid.accuracy_ci.high if rater.valid.accuracy_ci else None,
                    "cohen_kappa": _coefficient(rater.valid.kappa),
                    "left_out_no_majority": rater.valid.no_majority,
                    "left_out_unscored": rater.valid.unscored,
                },
                "sum_as_predictor": _prediction(rater.prediction),
                "sum_left_out_unscored": rater.unpredicted,
            }
            for rater in raters
        ],
    }


def study_json(study: Study, *, identities: bool = False) -> dict[str, Any]:
    results = study_results(study)
    return {
        "study": {
            "id": study.pk,
            "name": study.name,
            "status": study.status,
            "seed": study.seed,
            "top_k": study.top_k,
            "per_group": study.per_group,
            "stratify_by": study.stratify_by,
            "annotators_per_item": study.annotators_per_item,
            "ranked_at_sampling": study.ranked_at_sampling,
            "routing": study.routing,
            "gold_rate": study.gold_rate,
            "sampling": study.strata_report,
            "drawn_from": study.drawn_from,
            "drawn_filter": study.drawn_filter,
        },
        # As the results API gives them: the judges beside the annotators, on the judges' scores now.
        "results": results_summary(results) | judges_summary(study_judges(results.rows)),
        "items": item_records(study, results.rows),
        "labels": label_records(study, results.rows, identities=identities),
    }


def csv_text(records: list[dict[str, Any]], columns: list[str]) -> str:
    extra = [key for key in (records[0] if records else {}) if key not in columns]
    buffer = io.StringIO()
    writer = SafeDictWriter(buffer, fieldnames=columns + extra, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return buffer.getvalue()
