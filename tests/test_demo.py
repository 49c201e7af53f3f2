"""The demo data behind `make run`: real BashBench tasks, one login per role, a study to label."""
import io

import pytest
from django.core.management import call_command

from annotation.models import Study
from candidates.models import Candidate, Search, SourceTask

pytestmark = pytest.mark.django_db


def test_load_demo_is_complete_and_idempotent(client):
    out = io.StringIO()
    call_command("load_demo", tasks=20, stdout=out)
    counts = (Candidate.objects.count(), Search.objects.count(), SourceTask.objects.count(), Study.objects.count())
    assert counts[0] > 40 and counts[1] == 20 * 4 * 2 + 3 and counts[3] == 1
    assert SourceTask.objects.filter(external_id="bashbench-319395").exists()  # a real BashBench id
    assert "annotator1  veriharm-demo  annotator" in out.getvalue()

    call_command("load_demo", tasks=20, stdout=io.StringIO())
    assert (Candidate.objects.count(), Search.objects.count(), SourceTask.objects.count(),
            Study.objects.count()) == counts

    assert client.login(username="annotator1", password="veriharm-demo")
    assert client.get("/", follow=True).redirect_chain[-1][0].startswith("/annotation/")
    client.logout()
    assert client.login(username="curator", password="veriharm-demo")
    assert client.get("/", follow=True).redirect_chain[-1][0] == "/candidates/"
