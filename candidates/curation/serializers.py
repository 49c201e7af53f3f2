from django.conf import settings
from rest_framework import serializers

from ..models import Decision, DecisionReason, Release, ReleaseItem, Revision, Verdict


class DecisionSerializer(serializers.ModelSerializer):
    candidate = serializers.CharField(source="candidate.external_id")
    decided_by = serializers.CharField(source="decided_by.get_username")

    class Meta:
        model = Decision
        fields = ["id", "candidate", "verdict", "reason", "note", "candidate_revision", "decided_by", "decided_at",
                  "flag_warning"]


class DecisionRequestSerializer(serializers.Serializer):
    candidate = serializers.CharField(help_text="The candidate's id", max_length=200)
    verdict = serializers.ChoiceField(choices=Verdict.choices)
    reason = serializers.ChoiceField(choices=DecisionReason.choices)
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=settings.VERIHARM_MAX_COMMENT_CHARS)
    revision = serializers.IntegerField(
        required=False, min_value=1, max_value=2**31 - 1, help_text="The revision decided on; refused if the candidate has moved on"
    )
    acknowledge_flags = serializers.BooleanField(
        required=False, default=False,
        help_text="Approve a flagged candidate anyway (its tests failed their reference check); without it such "
                  "an approval is refused with the flags named. The decision keeps the warning.",
    )


class RevisionSerializer(serializers.ModelSerializer):
    candidate = serializers.CharField(source="candidate.external_id")
    author = serializers.SerializerMethodField()

    class Meta:
        model = Revision
        fields = ["candidate", "number", "instruction", "harm_test", "reason", "author", "created_at"]

    def get_author(self, obj: Revision) -> str | None:
        return obj.author.get_username() if obj.author_id else None


class RevisionRequestSerializer(serializers.Serializer):
    candidate = serializers.CharField(max_length=200)
    # The same bound as the pipeline format's text fields: a revision must re-export as a valid line.
    instruction = serializers.CharField(trim_whitespace=False, max_length=settings.VERIHARM_PIPELINE_MAX_TEXT_CHARS)
    harm_test = serializers.CharField(trim_whitespace=False, max_length=settings.VERIHARM_PIPELINE_MAX_TEXT_CHARS)
    reason = serializers.CharField(max_length=2000)
    base_revision = serializers.IntegerField(min_value=1, max_value=2**31 - 1, help_text="The revision the edit starts from")


class ReleaseItemSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="external_id")
    current_revision = serializers.IntegerField(source="candidate.revision")

    class Meta:
        model = ReleaseItem
        fields = ["id", "position", "revision", "current_revision", "content_hash"]


class ReleaseSerializer(serializers.ModelSerializer):
    frozen = serializers.BooleanField(source="is_frozen")
    created_by = serializers.CharField(source="created_by.get_username")
    frozen_by = serializers.SerializerMethodField()
    previous = serializers.SerializerMethodField()
    instances = serializers.SerializerMethodField()

    class Meta:
        model = Release
        fields = [
            "id", "name", "version", "description", "frozen", "created_by", "created_at", "frozen_by", "frozen_at",
            "checksum", "previous", "instances", "changelog",
        ]

    def get_frozen_by(self, obj: Release) -> str | None:
        return obj.frozen_by.get_username() if obj.frozen_by_id else None

    def get_previous(self, obj: Release) -> str | None:
        return obj.changelog.get("previous")

    def get_instances(self, obj: Release) -> int:
        count = getattr(obj, "item_count", None)
        return count if count is not None else obj.items.count()


class ReleaseDetailSerializer(ReleaseSerializer):
    items = serializers.SerializerMethodField()

    class Meta(ReleaseSerializer.Meta):
        fields = ReleaseSerializer.Meta.fields + ["items"]

    def get_items(self, obj: Release) -> list[dict]:
        items = obj.items.select_related("candidate").order_by("position")
        return ReleaseItemSerializer(items, many=True).data


class ReleaseCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    version = serializers.CharField(max_length=50)
    description = serializers.CharField(required=False, allow_blank=True, default="",
                                        max_length=settings.VERIHARM_MAX_DESCRIPTION_CHARS)


class ReleaseUpdateSerializer(serializers.Serializer):
    description = serializers.CharField(allow_blank=True, max_length=settings.VERIHARM_MAX_DESCRIPTION_CHARS)


class BundleImportRequestSerializer(serializers.Serializer):
    bundle = serializers.FileField(help_text="A release bundle (.tar.gz) exported by VeriHarm Review")
