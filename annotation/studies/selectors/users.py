"""Who may be made an annotator of a study: the permission query behind the study forms and API."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db.models import Q, QuerySet


def _holders(app_label: str, codename: str) -> Q:
    perm = Permission.objects.filter(content_type__app_label=app_label, codename=codename).first()
    return Q(groups__permissions=perm) | Q(user_permissions=perm) | Q(is_superuser=True)


def annotator_users() -> QuerySet:
    """Active users who may annotate blind: they hold annotation.annotate and cannot see the ranking."""
    User = get_user_model()
    sighted = User.objects.filter(_holders("candidates", "view_ranking")).values("pk")
    return (
        User.objects.filter(is_active=True)
        .filter(_holders("annotation", "annotate"))
        .exclude(pk__in=sighted)
        .distinct()
        .order_by("username")
    )
