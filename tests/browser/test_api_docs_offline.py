"""/api/docs/ works without the internet: Swagger UI comes from the site's own static files."""

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import login

LOOPBACK = {"localhost", "127.0.0.1", "[::1]", "::1"}


@pytest.mark.django_db(transaction=True)
def test_the_api_docs_render_their_operations_with_the_network_off(live_server, new_page, curator):
    page = new_page()
    refused: list[str] = []

    def offline(route) -> None:
        url = route.request.url
        if urlsplit(url).scheme in ("http", "https", "ws", "wss") and urlsplit(url).hostname not in LOOPBACK:
            refused.append(url)
            route.abort("internetdisconnected")
        else:
            route.continue_()

    page.context.route("**/*", offline)
    login(page, live_server.url, curator.username)
    page.goto(f"{live_server.url}/api/docs/")
    operations = page.locator(".opblock")
    expect(operations.first).to_be_visible(timeout=20_000)
    assert operations.count() > 20
    expect(page.locator(".opblock-summary-path", has_text="/api/candidates/").first).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert refused == []
