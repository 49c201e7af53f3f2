"""API shapes of studies and their results, for curators and viewers; the shape of one submitted
label is the annotator's own (`labelling.serializers.SubmittedLabelSerializer`), with its author's
pseudonym added."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from candidates.hooks.harm_test_verdicts import REFERENCE_STATES

from ..labelling.serializers import SubmittedLabelSerializer
from ..models import DrawnFrom, StratifyBy
from .drawing import MAX_CHOSEN
from .services import MAX_ANNOTATORS_PER_ITEM, MAX_CLAIM_TIMEOUT_MINUTES, MAX_GROUP_SIZE, MAX_NAME


class StudyCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=MAX_NAME)
    description = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=settings.VERIHARM_MAX_DESCRIPTION_CHARS
    )
    top_k = serializers.IntegerField(min_value=1, max_value=MAX_GROUP_SIZE, required=False)
    per_group = serializers.IntegerField(min_value=1, max_value=MAX_GROUP_SIZE, default=25)
    stratify_by = serializers.ChoiceField(choices=StratifyBy.values, default=StratifyBy.PERTURBATION)
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, required=False)
    annotators_per_item = serializers.IntegerField(min_value=1, max_value=MAX_ANNOTATORS_PER_ITEM, default=3)
    claim_timeout_minutes = serializers.IntegerField(min_value=1, max_value=MAX_CLAIM_TIMEOUT_MINUTES, default=30)
    annotators = serializers.ListField(
        child=serializers.CharField(max_length=150),
        required=False,
        max_length=1000,
        help_text="User names; by default every user who may annotate blind",
    )
    drawn_from = serializers.ChoiceField(
        choices=DrawnFrom.values,
        required=False,
        help_text="groups: per_group of the top-K and of the bottom-K (default); filter: per_group of the ranked "
        "candidates `filter` matches; chosen: every candidate of `candidates`. Filtered and chosen studies are "
        "one stratum",
    )
    filter = serializers.DictField(
        child=serializers.CharField(allow_blank=True, max_length=200),
        required=False,
        help_text="The ranking's query parameters (q, group, k, perturbation, risk_category, target_agent, "
        "proposer), as GET /api/candidates/ takes them; with drawn_from filter",
    )
    candidates = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        max_length=MAX_CHOSEN,
        help_text="Candidate ids; with drawn_from chosen",
    )


class StratumSerializer(serializers.Serializer):
    group = serializers.CharField()
    name = serializers.CharField(allow_blank=True)
    pool = serializers.IntegerField()
    quota = serializers.FloatField()
    allocated = serializers.IntegerField()
    realised = serializers.IntegerField()


class MemberSerializer(serializers.Serializer):
    username = serializers.CharField()
    pseudonym = serializers.CharField()
    done = serializers.IntegerField()
    claimed = serializers.BooleanField()


class StudySerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    name = serializers.CharField()
    description = serializers.CharField()
    status = serializers.CharField()
    created_at = serializers.DateTimeField()
    seed = serializers.IntegerField()
    top_k = serializers.IntegerField()
    per_group = serializers.IntegerField()
    stratify_by = serializers.CharField()
    annotators_per_item = serializers.IntegerField()
    claim_timeout_minutes = serializers.IntegerField()
    ranked_at_sampling = serializers.IntegerField()
    drawn_from = serializers.CharField(help_text="groups (top-K and bottom-K), filter or chosen")
    drawn_filter = serializers.DictField(
        child=serializers.CharField(),
        help_text="The ranking's query parameters a filtered study was drawn with, as they stand in its URL",
    )


class StudyDetailSerializer(StudySerializer):
    sampling_rule = serializers.CharField(source="strata_report.rule", default="")
    # Set on the instance by the view from selectors.strata_rows and selectors.member_rows.
    strata = StratumSerializer(many=True)
    members = MemberSerializer(many=True, source="member_rows")


class LabelRowSerializer(SubmittedLabelSerializer):
    annotator = serializers.CharField(source="pseudonym")
    submitted_at = serializers.DateTimeField()


class AgentResultSerializer(serializers.Serializer):
    agent = serializers.CharField()
    model = serializers.CharField()
    harness = serializers.CharField()
    r_task = serializers.IntegerField(allow_null=True)
    r_harm = serializers.IntegerField(allow_null=True)
    stale = serializers.BooleanField(help_text="The trial ran an earlier revision of the candidate")
    trial = serializers.IntegerField()


class HarmTestVerdictSerializer(serializers.Serializer):
    results = AgentResultSerializer(many=True, help_text="Each agent's latest finished trial")
    harm_observed = serializers.BooleanField(allow_null=True)
    reference_check = serializers.ChoiceField(
        choices=list(REFERENCE_STATES),
        help_text="What the reference check established: discriminates, does_not_discriminate, or not_checked "
        "(no result yet, or no safe and harmful script to compare)",
    )
    reference_detail = serializers.CharField(help_text="The facts of the reference check, in words")
    tests_valid = serializers.BooleanField(
        allow_null=True,
        help_text="The reference check's verdict on the tests: discriminates (true), does not (false), not checked (null)",
    )
    disagrees = serializers.BooleanField(help_text="Valid_agg and tests_valid are both decided and differ")


class ItemRowSerializer(serializers.Serializer):
    item = serializers.IntegerField(source="number")
    candidate_pk = serializers.IntegerField()
    candidate_id = serializers.CharField(source="candidate_external_id")
    source_task = serializers.CharField(help_text="The source task's id")
    group = serializers.CharField()
    rank_at_sampling = serializers.IntegerField(source="rank")
    q_at_sampling = serializers.FloatField(source="quality")
    stratum = serializers.CharField()
    labels = LabelRowSerializer(many=True)
    majorities = serializers.DictField(child=serializers.BooleanField(allow_null=True))
    valid_agg = serializers.BooleanField(allow_null=True)
    disagreement = serializers.FloatField()

    harm_tests = serializers.SerializerMethodField(
        help_text="What the harm tests say of the candidate; null for readers who may not see evaluations"
    )

    @extend_schema_field(HarmTestVerdictSerializer(allow_null=True))
    def get_harm_tests(self, row: Any) -> dict[str, Any] | None:
        verdicts = self.context.get("verdicts")
        if verdicts is None:
            return None
        verdict = verdicts[row.candidate_pk]
        return HarmTestVerdictSerializer(
            {
                "results": [asdict(result) for result in verdict.results],
                "harm_observed": verdict.harm_observed,
                "reference_check": verdict.reference.value,
                "reference_detail": verdict.reference_detail,
                "tests_valid": verdict.tests_valid,
                "disagrees": verdict.disagrees_with(row.valid_agg),
            }
        ).data


# --- the results summary and the study export (typed for the schema; bodies built by annotation.exports)


class CoefficientSerializer(serializers.Serializer):
    value = serializers.FloatField(allow_null=True)
    band = serializers.CharField(help_text="Landis and Koch")
    units = serializers.IntegerField(help_text="How many units it was computed on")
    note = serializers.CharField(allow_blank=True)
    value_ci_low = serializers.FloatField(
        required=False, help_text="Percent agreement only: 95% bootstrap interval over the items"
    )
    value_ci_high = serializers.FloatField(required=False)


class PairwiseKappaSerializer(CoefficientSerializer):
    a = serializers.CharField(help_text="Pseudonym")
    b = serializers.CharField(help_text="Pseudonym")
    common_items = serializers.IntegerField()


class AgreementSerializer(serializers.Serializer):
    fleiss_kappa = CoefficientSerializer()
    krippendorff_alpha_nominal = CoefficientSerializer()
    percent_agreement = CoefficientSerializer()
    mean_pairwise_cohen_kappa = CoefficientSerializer()
    pairwise_cohen_kappa = PairwiseKappaSerializer(many=True)


class ConfusionSerializer(serializers.Serializer):
    tp = serializers.IntegerField()
    fp = serializers.IntegerField()
    fn = serializers.IntegerField()
    tn = serializers.IntegerField()


class PredictionSerializer(serializers.Serializer):
    confusion = ConfusionSerializer()
    accuracy = serializers.FloatField(allow_null=True)
    precision = serializers.FloatField(allow_null=True)
    recall = serializers.FloatField(allow_null=True)
    valid_share_top = serializers.FloatField(allow_null=True)
    valid_share_bottom = serializers.FloatField(allow_null=True)
    # 95% intervals: bootstrap over the items (seeded) for accuracy, precision and recall, Wilson for
    # the valid shares; null when the figure is undefined
    accuracy_ci_low = serializers.FloatField(allow_null=True)
    accuracy_ci_high = serializers.FloatField(allow_null=True)
    precision_ci_low = serializers.FloatField(allow_null=True)
    precision_ci_high = serializers.FloatField(allow_null=True)
    recall_ci_low = serializers.FloatField(allow_null=True)
    recall_ci_high = serializers.FloatField(allow_null=True)
    valid_share_top_ci_low = serializers.FloatField(allow_null=True)
    valid_share_top_ci_high = serializers.FloatField(allow_null=True)
    valid_share_bottom_ci_low = serializers.FloatField(allow_null=True)
    valid_share_bottom_ci_high = serializers.FloatField(allow_null=True)


class ResultsSummarySerializer(serializers.Serializer):
    labels = serializers.IntegerField()
    labels_needed = serializers.IntegerField()
    items_complete = serializers.IntegerField()
    items_undecided = serializers.IntegerField()
    median_seconds_per_label = serializers.FloatField(allow_null=True)
    agreement = serializers.DictField(child=AgreementSerializer(), help_text="Per measure: c1, c2, c3, valid")
    q_as_predictor = PredictionSerializer()


class JudgeValidTableSerializer(serializers.Serializer):
    both_valid = serializers.IntegerField()
    judge_only = serializers.IntegerField(help_text="The judge valid, the human majority invalid")
    majority_only = serializers.IntegerField(help_text="The judge invalid, the human majority valid")
    neither = serializers.IntegerField()


class JudgeValidAgreementSerializer(serializers.Serializer):
    table = JudgeValidTableSerializer()
    n = serializers.IntegerField(help_text="Items with both a human majority and this judge's scores")
    agree = serializers.IntegerField()
    accuracy = serializers.FloatField(allow_null=True)
    accuracy_ci_low = serializers.FloatField(allow_null=True, help_text="95% Wilson interval")
    accuracy_ci_high = serializers.FloatField(allow_null=True)
    cohen_kappa = CoefficientSerializer(help_text="No interval: see judge_kappa_interval")
    left_out_no_majority = serializers.IntegerField()
    left_out_unscored = serializers.IntegerField()


class JudgeRaterSerializer(serializers.Serializer):
    judge = serializers.CharField()
    valid_agreement = JudgeValidAgreementSerializer(help_text="The judge's Valid against Valid_agg")
    sum_as_predictor = PredictionSerializer(help_text="Figure 3 with the judge's sum in place of Q")
    sum_left_out_unscored = serializers.IntegerField()


class StudyResultsSerializer(ResultsSummarySerializer):
    """The results summary and, beside the annotators, each judge that scored the study's candidates."""

    judge_valid_rule = serializers.CharField()
    judge_sum_split = serializers.CharField()
    judge_kappa_interval = serializers.CharField()
    judges = JudgeRaterSerializer(many=True)


class ExportedStudySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    status = serializers.CharField()
    seed = serializers.IntegerField()
    top_k = serializers.IntegerField()
    per_group = serializers.IntegerField()
    stratify_by = serializers.CharField()
    annotators_per_item = serializers.IntegerField()
    ranked_at_sampling = serializers.IntegerField()
    sampling = serializers.DictField(help_text="What the sampler saw: pool size, quota, allocation per stratum")
    drawn_from = serializers.CharField(help_text="groups (top-K and bottom-K), filter or chosen")
    drawn_filter = serializers.DictField(
        child=serializers.CharField(),
        help_text="The ranking's query parameters a filtered study was drawn with, as they stand in its URL",
    )


class StudyExportSerializer(serializers.Serializer):
    study = ExportedStudySerializer()
    results = StudyResultsSerializer()
    items = serializers.ListField(child=serializers.DictField(), help_text="The columns of items.csv")
    labels = serializers.ListField(child=serializers.DictField(), help_text="The columns of labels.csv")
