"""Demo accounts, one per role (three annotators), with printed logins."""
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from .roles import ADMIN, ANNOTATOR, CURATOR, ensure_roles

DEMO_PASSWORD = "veriharm-demo"
DEMO_USERS: list[tuple[str, str]] = [
    ("annotator1", ANNOTATOR),
    ("annotator2", ANNOTATOR),
    ("annotator3", ANNOTATOR),
    ("curator", CURATOR),
    ("admin", ADMIN),
]


@transaction.atomic
def demo_users_ensure(password: str = DEMO_PASSWORD) -> list[tuple[str, str, str]]:
    """Create (or reset) the demo accounts; returns (username, password, role) rows."""
    ensure_roles()
    User = get_user_model()
    rows = []
    for username, role in DEMO_USERS:
        user, _ = User.objects.get_or_create(username=username)
        user.set_password(password)
        user.is_staff = role == ADMIN
        user.is_superuser = role == ADMIN
        user.save()
        user.groups.set([Group.objects.get(name=role)])
        rows.append((username, password, role))
    return rows
