"""Every page names the site's icon, and /favicon.ico (which browsers ask for anyway) leads to it."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_favicon_ico_leads_to_the_svg_icon():
    client = Client()
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/favicon.svg"
    icon = client.get(response["Location"])
    assert icon.status_code == 200 and icon["Content-Type"] == "image/svg+xml"
    assert b"<svg" in b"".join(icon.streaming_content if icon.streaming else [icon.content])


def test_pages_link_the_icon(curator_client):
    for client, url in ((Client(), "/login/"), (curator_client, "/candidates/")):
        response = client.get(url)
        body = response.content.decode()
        assert response.status_code == 200, url
        assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in body, url
