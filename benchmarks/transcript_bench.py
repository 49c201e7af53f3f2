#!/usr/bin/env python
"""The trial page of a 2,000-step trial: server time, and first paint in headless Chromium.

Seeds one finished trial of 2,000 transcript steps (commands with their output, a model message
every tenth step; `tests/evaluation/transcript_helpers.py`). Then, as a logged-in curator:

- server: the trial page's first page of steps, its last page and a search within the transcript,
  each requested --requests times through Django's test client; median and p95 in ms, the SQL
  queries of one request and the size of the HTML;
- browser: the first page loaded --requests times in Chromium from a local server, read from the
  Navigation Timing and Paint Timing entries: time to the first byte of the answer, first paint,
  first contentful paint, DOMContentLoaded and load (ms from the start of the navigation).

    python benchmarks/transcript_bench.py [--requests 15] [--steps 2000] [--keep]

Works in its own database, postgres://postgres@127.0.0.1:5432/veriharm_bench_transcript unless
BENCH_DATABASE_URL says otherwise, dropped and created afresh (and dropped at the end unless --keep).
Needs Chromium (VERIHARM_CHROMIUM, default /usr/bin/chromium).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/veriharm_bench_transcript"
CHROMIUM = os.environ.get("VERIHARM_CHROMIUM", "/usr/bin/chromium")
# Figures a reader expects of a page: the server's answer and the first paint well under a second.
SERVER_GOAL_MS, PAINT_GOAL_MS = 300.0, 1000.0


def _database(url: str, *, create: bool) -> None:
    import psycopg

    server, _, name = url.rpartition("/")
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if create:
            conn.execute(f'CREATE DATABASE "{name}"')


def _setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ["CELERY_BROKER_URL"] = "memory://"  # the launch's one message is never consumed
    os.environ["VERIHARM_LAUNCH_WAITS_FOR_SANDBOX"] = "false"  # no trial runs: the trial is recorded by hand
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "veriharm_site.settings.local")
    os.environ["DJANGO_DEBUG"] = "false"
    os.environ["DJANGO_ALLOWED_HOSTS"] = "testserver,127.0.0.1,localhost"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _curator() -> Any:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from veriharm_site.roles import CURATOR, ensure_roles

    ensure_roles()
    user, _ = get_user_model().objects.get_or_create(username="bench-curator")
    user.groups.add(Group.objects.get(name=CURATOR))
    return user


def _stats(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _server(client: Any, url: str, requests: int) -> str:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    timings = []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    with CaptureQueriesContext(connection) as queries:
        size = len(client.get(url).content)
    median, p95 = _stats(timings)
    met = "met" if p95 < SERVER_GOAL_MS else "NOT met"
    return (
        f"median {median:7.1f} ms  p95 {p95:7.1f} ms  queries {len(queries):3d}  html {size / 1024:6.0f} KiB  "
        f"goal p95 < {SERVER_GOAL_MS:.0f} ms: {met}"
    )


class _LocalServer(threading.Thread):
    """The site (its static files included) on a free port of 127.0.0.1, for the browser."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        from django.contrib.staticfiles.handlers import StaticFilesHandler
        from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
        from django.core.wsgi import get_wsgi_application

        class Quiet(WSGIRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadedWSGIServer(("127.0.0.1", 0), Quiet, allow_reuse_address=False)
        self.httpd.set_app(StaticFilesHandler(get_wsgi_application()))
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"

    def run(self) -> None:
        self.httpd.serve_forever(poll_interval=0.1)

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


_TIMING = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const paint = Object.fromEntries(performance.getEntriesByType("paint").map(e => [e.name, e.startTime]));
  return {ttfb: nav.responseStart, fp: paint["first-paint"], fcp: paint["first-contentful-paint"],
          dcl: nav.domContentLoadedEventEnd, load: nav.loadEventEnd};
}"""


def _browser(url: str, session: tuple[str, str], requests: int) -> list[str]:
    from playwright.sync_api import sync_playwright

    figures: dict[str, list[float]] = {"ttfb": [], "fp": [], "fcp": [], "dcl": [], "load": []}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        context.add_cookies([{"name": session[0], "value": session[1], "url": url}])
        page = context.new_page()
        page.goto(url)  # the first load fetches the stylesheets and scripts; the figures are of a reader's next ones
        for _ in range(requests):
            page.goto(url, wait_until="load")
            # Paint entries can be recorded after the load event: wait until both are there.
            page.wait_for_function("performance.getEntriesByType('paint').length >= 2")
            timing = page.evaluate(_TIMING)
            for name in figures:
                figures[name].append(float(timing[name] or 0.0))
        browser.close()
    names = {
        "ttfb": "first byte",
        "fp": "first paint",
        "fcp": "first contentful paint",
        "dcl": "DOMContentLoaded",
        "load": "load",
    }
    lines = []
    for key, label in names.items():
        median, p95 = _stats(figures[key])
        goal = (
            f"  goal p95 < {PAINT_GOAL_MS:.0f} ms: {'met' if p95 < PAINT_GOAL_MS else 'NOT met'}" if key == "fp" else ""
        )
        lines.append(f"  {label:<24} median {median:7.1f} ms  p95 {p95:7.1f} ms{goal}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=15)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--keep", action="store_true", help="keep the benchmark database")
    args = parser.parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    _database(url, create=True)
    try:
        _setup_django(url)
        from django.conf import settings
        from django.test import Client

        from tests.evaluation.transcript_helpers import NEEDLE, long_transcript_trial

        started = time.perf_counter()
        trial = long_transcript_trial(args.steps)
        print(f"seeded a trial of {trial.steps.count():,} steps in {time.perf_counter() - started:.1f} s")
        client = Client()
        client.force_login(_curator())
        page = f"/evaluation/trials/{trial.pk}/"
        last = (args.steps + 99) // 100
        client.get(page)  # load templates and modules once, as a running server has
        print("server (Django test client):")
        for label, path in (
            ("first page of steps", page),
            (f"last page ({last})", f"{page}?page={last}"),
            ("search in the transcript", f"{page}?q={NEEDLE}"),
        ):
            print(f"  {label:<26} {_server(client, path, args.requests)}")
        server = _LocalServer()
        server.start()
        try:
            session = (settings.SESSION_COOKIE_NAME, client.cookies[settings.SESSION_COOKIE_NAME].value)
            print(f"browser (Chromium, 1440 x 900, first page of steps, {args.requests} loads):")
            for line in _browser(server.url + page, session, args.requests):
                print(line)
        finally:
            server.stop()
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            _database(url, create=False)


if __name__ == "__main__":
    main()
