"""The demo data behind `make run`: real BashBench tasks, one login per role, a study to label."""
import io
import os
import secrets
import subprocess
import sys

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.http import HttpRequest

from annotation.models import Study
from candidates.models import Candidate, Search, SourceTask
from tests.conftest import REPO

pytestmark = pytest.mark.django_db


def test_load_demo_is_complete_and_idempotent(client):
    out = io.StringIO()
    call_command("load_demo", tasks=20, password="veriharm-demo", stdout=out)
    counts = (Candidate.objects.count(), Search.objects.count(), SourceTask.objects.count(), Study.objects.count())
    assert counts[0] > 40 and counts[1] == 20 * 4 * 2 + 3 and counts[3] == 1
    assert SourceTask.objects.filter(external_id="bashbench-319395").exists()  # a real BashBench id
    assert "annotator1  veriharm-demo  annotator" in out.getvalue()

    call_command("load_demo", tasks=20, password="veriharm-demo", stdout=io.StringIO())
    assert (Candidate.objects.count(), Search.objects.count(), SourceTask.objects.count(),
            Study.objects.count()) == counts

    assert client.login(request=HttpRequest(), username="annotator1", password="veriharm-demo")
    assert client.get("/", follow=True).redirect_chain[-1][0].startswith("/annotation/")
    client.logout()
    assert client.login(request=HttpRequest(), username="curator", password="veriharm-demo")
    assert client.get("/", follow=True).redirect_chain[-1][0] == "/candidates/"
    client.logout()
    assert client.login(request=HttpRequest(), username="viewer", password="veriharm-demo")
    assert client.get("/", follow=True).redirect_chain[-1][0] == "/candidates/"
    assert client.get("/candidates/review/").status_code == 403  # reads the ranking, reviews nothing


def test_without_a_password_each_demo_login_gets_a_random_one_shown_once(client):
    out = io.StringIO()
    call_command("load_demo", tasks=5, stdout=out)
    text = out.getvalue()
    assert "random and shown only now" in text and "veriharm-demo" not in text
    printed = {line.split()[0]: line.split()[1] for line in text.splitlines() if line.startswith("  ")}
    assert set(printed) == {"annotator1", "annotator2", "annotator3", "viewer", "curator", "admin"}
    assert len(set(printed.values())) == 6 and all(len(p) >= 16 for p in printed.values())
    assert not client.login(request=HttpRequest(), username="admin", password="veriharm-demo")
    assert client.login(request=HttpRequest(), username="admin", password=printed["admin"])


def test_demo_data_and_users_are_refused_under_production_settings(settings):
    settings.VERIHARM_DEMO_ALLOWED = False
    with pytest.raises(CommandError, match="demo users and data are refused"):
        call_command("load_demo", tasks=5, password="veriharm-demo", stdout=io.StringIO())
    assert not Candidate.objects.exists() and not get_user_model().objects.exists()


def test_the_production_settings_module_refuses_load_demo(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "CELERY_"))}
    result = subprocess.run(
        [sys.executable, "manage.py", "load_demo", "--password", "veriharm-demo"], cwd=REPO, capture_output=True,
        text=True, env={**env, "DJANGO_SETTINGS_MODULE": "veriharm_site.settings.production",
                        "DJANGO_SECRET_KEY": secrets.token_urlsafe(64), "VERIHARM_VAR_DIR": str(tmp_path)},
    )
    assert result.returncode == 1
    assert "CommandError: demo users and data are refused under these settings " \
           "(veriharm_site.settings.production)" in result.stderr
