"""Real headless Chromium (Debian's) driven by Playwright against Django's live server."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.conftest import PASSWORD

# The evaluation pages' tests need the sandbox these prepare.
from tests.evaluation.conftest import sandboxes_ready  # noqa: F401

# Playwright's sync API runs an event loop in the test thread; the ORM calls the tests make
# between page actions are synchronous and safe there.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("VERIHARM_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not os.path.exists(CHROMIUM):
        raise RuntimeError(
            f"Chromium not found at {CHROMIUM}: run scripts/system_packages.sh (apt-get install chromium)"
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def new_page(browser: Browser):
    """A factory of pages, each in its own context (its own cookies: one per user)."""
    contexts = []

    def make() -> Page:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(15_000)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


def login(page: Page, base_url: str, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{base_url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")
