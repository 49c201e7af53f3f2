"""The trial page's transcript at thousands of steps: a page of folded steps at a time, a search
within it that links each step it finds to its page, and the agent's configuration readable."""

from __future__ import annotations

import json
import re

import pytest

from evaluation.models import TranscriptStep, Trial
from tests.evaluation.transcript_helpers import NEEDLE, NEEDLE_AT, long_transcript_trial

pytestmark = pytest.mark.django_db


@pytest.fixture
def trial() -> Trial:
    return long_transcript_trial(2000)


def _step_indexes(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'data-testid="step" data-index="(\d+)"', html)]


def test_the_page_shows_one_page_of_folded_steps_each_on_one_line(trial, curator_client):
    html = curator_client.get(f"/evaluation/trials/{trial.pk}/").content.decode()
    assert _step_indexes(html) == list(range(1, 101))
    assert "2000 steps" in html and "Steps 1–100 of 2000, page 1 of 20" in html
    transcript = html[html.index('data-testid="transcript"') :]
    assert "<details open" not in transcript and transcript.count("<details>") == 100
    # The folded line: the command, the exit status (a failing one marked) and the duration.
    seventh = re.search(r'id="step-1-7".*?</summary>', html, re.S).group(0)
    assert "$ ls -la /srv/data/part-0007" in seventh and "exit 1" in seventh and "step-failed" in seventh
    assert "0.07 s" in seventh
    tenth = re.search(r'id="step-1-10".*?</summary>', html, re.S).group(0)
    assert "Step 10: looking at the next part." in tenth and "+1 line" in tenth
    assert 'data-testid="step-exit"></span>' in tenth  # a message ran nothing: no exit status


def test_a_later_page_holds_the_later_steps_and_past_the_last_shows_the_last(trial, curator_client):
    html = curator_client.get(f"/evaluation/trials/{trial.pk}/?page=16").content.decode()
    assert _step_indexes(html) == list(range(1501, 1601))
    last = curator_client.get(f"/evaluation/trials/{trial.pk}/?page=21").content.decode()
    assert _step_indexes(last) == list(range(1901, 2001))


def test_a_search_finds_a_step_on_another_page_and_links_to_its_page(trial, curator_client):
    response = curator_client.get(f"/evaluation/trials/{trial.pk}/", {"q": NEEDLE.upper()})
    html = response.content.decode()
    assert response.status_code == 200 and _step_indexes(html) == [NEEDLE_AT]
    assert "1 of 2000 steps hold" in html and f"<mark>{NEEDLE}</mark>" in html
    link = re.search(r'href="(\?page=\d+#step-1-\d+)" data-testid="step-context"', html).group(1)
    assert link == f"?page=16#step-1-{NEEDLE_AT}"  # steps 1501 to 1600
    context = curator_client.get(f"/evaluation/trials/{trial.pk}/{link.split('#')[0]}").content.decode()
    assert NEEDLE_AT in _step_indexes(context)


def test_a_search_matching_only_the_output_shows_where_it_matched(trial, curator_client):
    html = curator_client.get(f"/evaluation/trials/{trial.pk}/", {"q": "notes.txt:12"}).content.decode()
    assert _step_indexes(html) == [NEEDLE_AT]
    line = re.search(r'data-testid="step-line">.*?</span>\s*</span>', html, re.S).group(0)
    assert "<mark>notes.txt:12</mark>" in line


def test_a_search_that_finds_nothing_says_so_and_wildcards_are_plain_text(trial, curator_client):
    html = curator_client.get(f"/evaluation/trials/{trial.pk}/", {"q": "part-%"}).content.decode()
    assert _step_indexes(html) == [] and "No step holds “part-%”." in html
    assert "0 of 2000 steps hold" in html


@pytest.mark.parametrize(
    ("params", "named"),
    [({"q": "x" * 201}, "q"), ({"page": "0"}, "page"), ({"page": "abc"}, "page"), ({"q": "ok", "page": "-1"}, "page")],
)
def test_a_bad_parameter_is_refused_with_400_naming_it(trial, curator_client, params, named):
    response = curator_client.get(f"/evaluation/trials/{trial.pk}/", params)
    assert response.status_code == 400
    html = response.content.decode()
    assert named in html and 'data-testid="transcript"' not in html


def test_the_agent_configuration_reads_as_text_with_its_playbook_indented(trial, curator_client):
    html = curator_client.get(f"/evaluation/trials/{trial.pk}/").content.decode()
    config = re.search(r'data-testid="agent-config".*?</details></td>', html, re.S).group(0)
    assert "<dt>config.command</dt>" in config and "<dt>kind</dt>" in config
    # The script keeps its lines, and the JSON string in it is a folded, indented object.
    assert "python3 - {task_file} &lt;&lt;&#x27;END&#x27;\nimport json\nPLAYBOOK = json.loads(" in config
    assert 'data-testid="embedded-json"><summary>JSON, ' in config
    assert "\n  &quot;Archive the logs of service 0&quot;: {\n    &quot;harmful&quot;: " in config
    assert "\\n" not in config.split("embedded-json")[0]  # no escaped newline before the JSON


def test_the_api_still_lists_every_step_of_the_trial(trial, curator_client):
    steps = curator_client.get(f"/api/evaluation/trials/{trial.pk}/").json()["steps"]
    assert len(steps) == 2000 and steps[NEEDLE_AT - 1]["command"] == f"grep -rn {NEEDLE} /srv/data"


def test_markup_in_a_step_and_in_a_search_is_shown_as_text(trial, curator_client):
    # Long enough a JSON literal to be shown indented: its text is escaped too.
    literal = json.dumps({"k": "<img src=x onerror=alert(1)>", "pad": "p" * 200})
    TranscriptStep.objects.create(
        trial=trial,
        attempt=1,
        index=2001,
        kind="command",
        command=f"cat page.html '{literal}'",
        content="<script>alert('step')</script>",
    )
    for params in ({"page": "21"}, {"q": "<script>"}):
        html = curator_client.get(f"/evaluation/trials/{trial.pk}/", params).content.decode()
        assert 'data-testid="embedded-json"' in html and "&lt;img src=x onerror=alert(1)&gt;" in html
        assert "&lt;/script&gt;" in html
        assert "<script>alert(" not in html and "<img src=x" not in html
