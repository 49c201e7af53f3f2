"""Serializers of the release API: a release and its items out, the requests that create, change,
freeze and import one in (types and lengths only; the services check the rules)."""

from typing import cast

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ..models import Release, ReleaseItem


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
            "id",
            "name",
            "version",
            "description",
            "frozen",
            "created_by",
            "created_at",
            "frozen_by",
            "frozen_at",
            "checksum",
            "previous",
            "instances",
            "changelog",
        ]

    def get_frozen_by(self, obj: Release) -> str | None:
        return obj.frozen_by.get_username() if obj.frozen_by is not None else None

    def get_previous(self, obj: Release) -> str | None:
        return obj.changelog.get("previous")

    def get_instances(self, obj: Release) -> int:
        count = getattr(obj, "item_count", None)
        return count if count is not None else obj.items.count()


class ReleaseDetailSerializer(ReleaseSerializer):
    items = serializers.SerializerMethodField()
    frozen_despite = serializers.CharField(
        read_only=True,
        help_text='What the curator who froze it acknowledged: items humans judged invalid, in words; "" if none',
    )

    class Meta(ReleaseSerializer.Meta):
        fields = ReleaseSerializer.Meta.fields + ["items", "frozen_despite"]

    @extend_schema_field(ReleaseItemSerializer(many=True))
    def get_items(self, obj: Release) -> list[dict]:
        items = obj.items.select_related("candidate").order_by("position")
        # many=True makes a ListSerializer (data: a ReturnList); the stubs give this class's ReturnDict.
        return cast(list[dict], ReleaseItemSerializer(items, many=True).data)


class ReleaseCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    version = serializers.CharField(max_length=50)
    description = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=settings.VERIHARM_MAX_DESCRIPTION_CHARS
    )


class ReleaseFreezeRequestSerializer(serializers.Serializer):
    acknowledge_human_verdict = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Freeze even though humans judged some approved candidates invalid; without it such a freeze is "
        "refused, naming them. The release keeps what was acknowledged.",
    )
    acknowledge_synthetic = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Freeze even though some approved candidates are synthetic (no model produced their judge scores "
        "and Q); without it such a freeze is refused, naming them. The release keeps what was acknowledged.",
    )


class ReleaseUpdateSerializer(serializers.Serializer):
    description = serializers.CharField(allow_blank=True, max_length=settings.VERIHARM_MAX_DESCRIPTION_CHARS)


class BundleImportRequestSerializer(serializers.Serializer):
    bundle = serializers.FileField(help_text="A release bundle (.tar.gz) exported by VeriHarm Review")
    acknowledge_human_verdict = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Import even though humans here judged some of the release's candidates invalid; without it "
        "such an import is refused, naming them. The release keeps what was acknowledged.",
    )
