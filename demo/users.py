"""Demo accounts, one per role (three annotators), with printed logins.

For local trials only: production settings (VERIHARM_DEMO_ALLOWED = False) refuse them, since
their names are public. Their passwords are random unless the caller names one (`make run`
passes the README's `veriharm-demo`).
"""

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from veriharm_site.roles import ADMIN, ANNOTATOR, CURATOR, VIEWER, ensure_roles

DEMO_USERS: list[tuple[str, str]] = [
    ("annotator1", ANNOTATOR),
    ("annotator2", ANNOTATOR),
    ("annotator3", ANNOTATOR),
    ("viewer", VIEWER),
    ("curator", CURATOR),
    ("admin", ADMIN),
]


class DemoRefused(Exception):
    """Demo users or data asked for where they must not exist."""


def demo_refusal() -> str | None:
    """Why demo users and data may not be loaded here, or None when they may."""
    if getattr(settings, "VERIHARM_DEMO_ALLOWED", False):
        return None
    return (
        f"demo users and data are refused under these settings ({settings.SETTINGS_MODULE}): their names "
        "are public. Create real accounts with `manage.py createsuperuser` and the admin instead."
    )


@transaction.atomic
def demo_users_ensure(password: str | None = None) -> list[tuple[str, str, str]]:
    """Create (or reset) the demo accounts; returns (username, password, role) rows. Each account
    gets its own random password unless `password` is given."""
    refusal = demo_refusal()
    if refusal:
        raise DemoRefused(refusal)
    ensure_roles()
    User = get_user_model()
    rows = []
    for username, role in DEMO_USERS:
        chosen = password or secrets.token_urlsafe(12)
        user, _ = User.objects.get_or_create(username=username)
        user.set_password(chosen)
        user.is_staff = role == ADMIN
        user.is_superuser = role == ADMIN
        user.save()
        user.groups.set([Group.objects.get(name=role)])
        rows.append((username, chosen, role))
    return rows
