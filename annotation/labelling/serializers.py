"""API shapes of the annotator's blind labelling. Every field is listed explicitly: nothing about
the group, Q, judges, provenance, the candidate's id or other annotators may ever be added to them
(`tests/annotation/annotator_payloads.json` pins them)."""

from __future__ import annotations

from rest_framework import serializers

from ..write_rules.refusals import MAX_REASON
from .services import MAX_COMMENT, MAX_SECONDS_SPENT


class ProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField()
    assigned = serializers.IntegerField()
    claimed = serializers.BooleanField()
    open_to_you = serializers.IntegerField()
    skipped = serializers.IntegerField(help_text="Items you set aside (not flagged) that still need a label")
    flagged = serializers.IntegerField(
        help_text="Items you flagged as unclear: they went to the curators and are out of your queue"
    )
    finished = serializers.BooleanField()


class AnnotatorStudySerializer(serializers.Serializer):
    id = serializers.IntegerField(source="study.pk")
    name = serializers.CharField(source="study.name")
    status = serializers.CharField(source="study.status")
    progress = ProgressSerializer()


class SegmentSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["equal", "delete", "insert"])
    text = serializers.CharField()


class DiffSerializer(serializers.Serializer):
    left = SegmentSerializer(many=True, help_text="t_seed: equal and deleted text")
    right = SegmentSerializer(many=True, help_text="t~: equal and inserted text")
    inserted_words = serializers.IntegerField()
    deleted_words = serializers.IntegerField()


class OwnLabelSerializer(serializers.Serializer):
    c1 = serializers.BooleanField(allow_null=True)
    c2 = serializers.BooleanField(allow_null=True)
    c3 = serializers.BooleanField(allow_null=True)
    valid = serializers.BooleanField(allow_null=True)
    comment = serializers.CharField()
    submitted = serializers.BooleanField()
    revisions = serializers.IntegerField()
    seconds_spent = serializers.FloatField()


class EnvironmentSerializer(serializers.Serializer):
    workdir = serializers.CharField()
    files = serializers.DictField(child=serializers.CharField(allow_blank=True))
    setup = serializers.CharField(allow_blank=True)


class BlindItemSerializer(serializers.Serializer):
    study = serializers.IntegerField(source="study.pk")
    token = serializers.CharField()
    number = serializers.IntegerField()
    source_instruction = serializers.CharField(help_text="t_seed, the unmodified task")
    instruction = serializers.CharField(help_text="t~, the perturbed task")
    diff = DiffSerializer()
    harm_test = serializers.CharField()
    harm_summary = serializers.CharField(allow_blank=True)
    environment = EnvironmentSerializer()
    # Declared fields, which the metaclass takes off the class (Field.label is another thing).
    label = OwnLabelSerializer(source="own")  # type: ignore[assignment]
    claim_expires_at = serializers.DateTimeField(source="own.expires_at")


class NextItemSerializer(serializers.Serializer):
    item = BlindItemSerializer(allow_null=True)
    progress = ProgressSerializer()


class SavedLabelSerializer(serializers.Serializer):
    label = OwnLabelSerializer()  # type: ignore[assignment]  # a declared field, as above
    progress = ProgressSerializer()


class LabelInputSerializer(serializers.Serializer):
    c1 = serializers.BooleanField(help_text="C1 benign and realistic")
    c2 = serializers.BooleanField(help_text="C2 harm unintended")
    c3 = serializers.BooleanField(help_text="C3 harm test correct")
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=MAX_COMMENT)
    seconds_spent = serializers.FloatField(
        required=False, allow_null=True, min_value=0, max_value=MAX_SECONDS_SPENT, default=None
    )


class SkipInputSerializer(serializers.Serializer):
    unclear = serializers.BooleanField(default=False, help_text="Flag the item as unclear (needs a reason)")
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=MAX_REASON)


class SkippedItemSerializer(serializers.Serializer):
    item = serializers.IntegerField(source="number")
    token = serializers.CharField()
    skipped_at = serializers.DateTimeField()
    unclear = serializers.BooleanField()
    reason = serializers.CharField(allow_blank=True)
    open = serializers.BooleanField(help_text="A place is still free for you")


class SubmittedLabelSerializer(serializers.Serializer):
    """The answers of one submitted label."""

    c1 = serializers.BooleanField()
    c2 = serializers.BooleanField()
    c3 = serializers.BooleanField()
    valid = serializers.BooleanField()
    comment = serializers.CharField()
    seconds_spent = serializers.FloatField()
    revisions = serializers.IntegerField()


class OwnLabelRowSerializer(SubmittedLabelSerializer):
    item = serializers.IntegerField(source="item.number")
    token = serializers.CharField(source="item.token")
    updated_at = serializers.DateTimeField()
