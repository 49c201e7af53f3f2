"""The web login pauses a username at one address after repeated failures (django-axes)."""

from __future__ import annotations

import pytest
from django.conf import settings

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def attempt(client, username: str, password: str, address: str = "203.0.113.7"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def logged_in_as(client) -> str | None:
    response = client.get("/", REMOTE_ADDR="203.0.113.7")
    user = response.wsgi_request.user
    return user.username if user.is_authenticated else None


def test_repeated_failures_lock_the_login_even_with_the_right_password(client, curator):
    limit = settings.AXES_FAILURE_LIMIT
    assert 3 <= limit <= 10
    for _ in range(limit - 1):
        response = attempt(client, curator.username, "wrong")
        assert response.status_code == 200 and b"match. Please try again" in response.content
    response = attempt(client, curator.username, "wrong")  # the limit-th failure locks
    assert response.status_code == 429
    response = attempt(client, curator.username, PASSWORD)
    assert response.status_code == 429 and b"Too many login attempts" in response.content
    assert logged_in_as(client) is None
    # The same user at another address is not locked out by someone else's guesses.
    assert attempt(client, curator.username, PASSWORD, address="198.51.100.2").status_code == 302


def test_a_successful_login_resets_the_count(client, curator):
    limit = settings.AXES_FAILURE_LIMIT
    for _ in range(limit - 1):
        attempt(client, curator.username, "wrong")
    assert attempt(client, curator.username, PASSWORD).status_code == 302
    client.logout()
    for _ in range(limit - 1):
        assert attempt(client, curator.username, "wrong").status_code == 200
    assert attempt(client, curator.username, PASSWORD).status_code == 302
