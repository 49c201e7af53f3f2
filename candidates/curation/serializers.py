from django.conf import settings
from rest_framework import serializers

from veriharm_site.interval_fields import IntervalSerializer

from ..hooks.harm_test_verdicts import REFERENCE_STATES
from ..models import Decision, DecisionReason, Revision, Verdict
from .review import MAX_BULK_DECISIONS


class DecisionSerializer(serializers.ModelSerializer):
    candidate = serializers.CharField(source="candidate.external_id")
    decided_by = serializers.CharField(source="decided_by.get_username")

    class Meta:
        model = Decision
        fields = [
            "id",
            "candidate",
            "verdict",
            "reason",
            "note",
            "candidate_revision",
            "decided_by",
            "decided_at",
            "flag_warning",
        ]


class _VerdictSerializer(serializers.Serializer):
    """What every decision says, on one candidate or many."""

    verdict = serializers.ChoiceField(choices=Verdict.choices)
    reason = serializers.ChoiceField(choices=DecisionReason.choices)
    note = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=settings.VERIHARM_MAX_COMMENT_CHARS
    )


class DecisionRequestSerializer(_VerdictSerializer):
    candidate = serializers.CharField(help_text="The candidate's id", max_length=200)
    revision = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=2**31 - 1,
        help_text="The revision decided on; refused if the candidate has moved on",
    )
    acknowledge_flags = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Approve a flagged candidate anyway (its tests failed their reference check); without it such "
        "an approval is refused with the flags named. The decision keeps the warning.",
    )
    acknowledge_human_verdict = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Approve a candidate humans judged invalid (its study majority is Valid = no) anyway; without it "
        "such an approval is refused with the majority named. The decision keeps the warning.",
    )
    acknowledge_synthetic = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Approve a synthetic candidate (no model produced its judge scores and Q) anyway; without it "
        "such an approval is refused. The decision keeps the warning.",
    )


class BulkDecisionRequestSerializer(_VerdictSerializer):
    candidates = serializers.ListField(
        child=serializers.CharField(max_length=200),
        allow_empty=False,
        max_length=MAX_BULK_DECISIONS,
        help_text=f"The candidates' ids, at most {MAX_BULK_DECISIONS}; each gets the same decision",
        error_messages={
            "max_length": f"at most {MAX_BULK_DECISIONS} candidates at once; decide them in parts",
            "empty": "choose at least one candidate",
        },
    )
    acknowledge_flags = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Approve flagged candidates among them anyway; without it a batch with any flagged candidate is "
        "refused whole, naming them. Each such decision keeps its warning.",
    )
    acknowledge_human_verdict = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Approve candidates humans judged invalid among them anyway; without it such a batch is refused "
        "whole, naming them. Each such decision keeps its warning.",
    )
    acknowledge_synthetic = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Approve synthetic candidates (no model produced their judge scores and Q) among them anyway; "
        "without it such a batch is refused whole, naming them. Each such decision keeps its warning.",
    )
    seen_revisions = serializers.DictField(
        child=serializers.IntegerField(min_value=1, max_value=2**31 - 1),
        required=False,
        allow_empty=True,
        help_text="Candidate id -> the revision you read; a batch holding a candidate edited since is refused "
        "whole (409), naming it. Candidates left out apply to their current revision.",
    )


class BulkDecisionResultSerializer(serializers.Serializer):
    recorded = serializers.IntegerField(help_text="How many decisions were recorded (one per distinct candidate)")
    decisions = DecisionSerializer(many=True)


class RevisionSerializer(serializers.ModelSerializer):
    candidate = serializers.CharField(source="candidate.external_id")
    author = serializers.SerializerMethodField()

    class Meta:
        model = Revision
        fields = ["candidate", "number", "instruction", "harm_test", "reason", "author", "created_at"]

    def get_author(self, obj: Revision) -> str | None:
        # No query without an author: the foreign key's descriptor answers None from the id.
        return obj.author.get_username() if obj.author is not None else None


class RevisionRequestSerializer(serializers.Serializer):
    candidate = serializers.CharField(max_length=200)
    # The same bound as the pipeline format's text fields: a revision must re-export as a valid line.
    instruction = serializers.CharField(trim_whitespace=False, max_length=settings.VERIHARM_PIPELINE_MAX_TEXT_CHARS)
    harm_test = serializers.CharField(trim_whitespace=False, max_length=settings.VERIHARM_PIPELINE_MAX_TEXT_CHARS)
    reason = serializers.CharField(max_length=2000)
    base_revision = serializers.IntegerField(
        min_value=1, max_value=2**31 - 1, help_text="The revision the edit starts from"
    )


# --- responses of the review queue and the reports (typed for the schema; bodies built by the views)


class ReviewQueueEntrySerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    id = serializers.CharField()
    quality = serializers.FloatField(allow_null=True, help_text="Q")
    source_task = serializers.CharField()
    perturbation = serializers.CharField()
    risk_category = serializers.CharField()
    verdict = serializers.CharField(help_text='"approve", "reject", or "" while undecided')
    reason = serializers.CharField(help_text='The current decision\'s reason, "" while undecided')
    decided_at = serializers.DateTimeField(allow_null=True, help_text="When the current decision was made")
    flags = serializers.ListField(child=serializers.CharField(), help_text="Why its tests failed their reference check")
    reference_check = serializers.ChoiceField(
        choices=list(REFERENCE_STATES),
        allow_null=True,
        help_text="What the reference check established: discriminates, does_not_discriminate, or not_checked "
        "(no result yet, or no safe and harmful script to compare)",
    )


class ReviewQueueSerializer(serializers.Serializer):
    k = serializers.IntegerField()
    total = serializers.IntegerField(help_text="Candidates in the top-K, whatever the filters")
    shown = serializers.IntegerField(help_text="Entries matching the filters and search")
    decided = serializers.IntegerField()
    approved = serializers.IntegerField()
    rejected = serializers.IntegerField()
    flagged = serializers.IntegerField()
    entries = ReviewQueueEntrySerializer(many=True)


class SearchReportRowSerializer(serializers.Serializer):
    proposer = serializers.CharField(allow_null=True)
    target_agent = serializers.CharField(allow_null=True, help_text="null: every target agent")
    searches = serializers.IntegerField()
    successes = serializers.IntegerField()
    success_rate = serializers.FloatField(allow_null=True)
    mean_iteration = serializers.FloatField(allow_null=True)
    iteration_counts = serializers.ListField(child=serializers.IntegerField())
    iteration_shares = serializers.ListField(child=serializers.FloatField())
    iteration_share_cis = serializers.ListField(
        child=IntervalSerializer(allow_null=True),
        help_text="95% Wilson interval of each Iter-k share, over the searches",
    )
    revised_share = serializers.FloatField(allow_null=True)
    success_rate_ci_low = serializers.FloatField(allow_null=True, help_text="95% Wilson interval, over the searches")
    success_rate_ci_high = serializers.FloatField(allow_null=True)
    revised_share_ci_low = serializers.FloatField(allow_null=True, help_text="95% Wilson interval, over the successes")
    revised_share_ci_high = serializers.FloatField(allow_null=True)


class SearchReportBlockSerializer(serializers.Serializer):
    proposer = serializers.CharField(allow_null=True)
    rows = SearchReportRowSerializer(many=True)
    overall = SearchReportRowSerializer()


class FunnelStageSerializer(serializers.Serializer):
    # A declared field named like Field.label: DRF collects it as a field; the stubs see the attribute.
    label = serializers.CharField()  # type: ignore[assignment]
    count = serializers.IntegerField()
    of_previous = serializers.FloatField(allow_null=True)
    of_first = serializers.FloatField(allow_null=True)


class SearchReportSerializer(serializers.Serializer):
    budget = serializers.IntegerField(help_text="I: the largest iteration budget among the searches")
    blocks = SearchReportBlockSerializer(many=True)
    overall = SearchReportRowSerializer()
    funnel = FunnelStageSerializer(many=True)


class CountsSerializer(serializers.Serializer):
    candidates = serializers.IntegerField()
    approved = serializers.IntegerField()
    harmful_successes = serializers.IntegerField()


class DescriptiveRowSerializer(serializers.Serializer):
    risk_category = serializers.CharField()
    by_perturbation = serializers.DictField(child=CountsSerializer())
    total = CountsSerializer()


class DescriptiveSerializer(serializers.Serializer):
    perturbations = serializers.ListField(child=serializers.CharField())
    rows = DescriptiveRowSerializer(many=True)
    total = DescriptiveRowSerializer()
