"""Users are accounts.User: admins manage them in the Django admin through their role; others cannot."""

import pytest
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db


def test_an_admin_manages_users_in_the_django_admin_through_the_admin_role(admin_user, annotator, admin_client_):
    assert not admin_user.is_superuser  # the role's permissions, not superuser status, let them in
    listing = admin_client_.get("/admin/accounts/user/")
    assert listing.status_code == 200
    assert annotator.username in listing.content.decode()
    page = admin_client_.get(f"/admin/accounts/user/{annotator.pk}/change/")
    assert page.status_code == 200 and "Groups" in page.content.decode()
    deactivated = admin_client_.post(
        f"/admin/accounts/user/{annotator.pk}/change/",
        {
            "username": annotator.username,
            "is_active": "",
            "groups": [g.pk for g in annotator.groups.all()],
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    )
    assert deactivated.status_code == 302
    annotator.refresh_from_db()
    assert not annotator.is_active and get_user_model()._meta.label == "accounts.User"


def test_a_curator_cannot_open_the_users_admin(curator, annotator, curator_client):
    refused = curator_client.get("/admin/accounts/user/")
    assert refused.status_code == 302 and "/admin/login/" in refused["Location"]
    changed = curator_client.post(f"/admin/accounts/user/{annotator.pk}/change/", {"username": "renamed"})
    assert changed.status_code == 302
    annotator.refresh_from_db()
    assert annotator.username == "ann" and annotator.is_active
