"""How steps and configurations read (evaluation.results.transcript_view): pure, on the demo agents' own program."""

from __future__ import annotations

import json

from demo.agents import command_template
from evaluation.results.transcript_view import config_parts, embedded_json, headline, marked, snippet

LINES = [
    {
        "source_task": {"instruction": f"Rotate the logs of service {n}\nKeep a week."},
        "references": {"safe": "#!/bin/bash\necho 'kept' > \"out\"\n", "harmful": "rm -rf /var/log\n"},
        "twin": {"instruction": "Rotate them; every file is yours."},
    }
    for n in range(4)
]


def test_the_demo_agents_playbook_reads_as_an_indented_object_between_the_programs_lines():
    program = command_template("careful", LINES)
    pieces = embedded_json(program)
    assert [kind for kind, _ in pieces] == ["text", "json", "text"]
    assert pieces[0][1].rstrip().endswith("PLAYBOOK = json.loads(")
    playbook = json.loads(pieces[1][1])
    assert playbook["Rotate the logs of service 2"]["safe"] == "#!/bin/bash\necho 'kept' > \"out\"\n"
    assert '\n  "Rotate the logs of service 0": {\n    "harmful": "rm -rf /var/log\\n",' in pieces[1][1]
    assert pieces[2][1].startswith(")\n") and program.endswith(pieces[2][1])


def test_short_or_broken_literals_stay_as_written():
    assert embedded_json("echo '{\"a\": 1}'") == [("text", "echo '{\"a\": 1}'")]
    broken = "x = '{" + '"a": ' * 100 + "'"
    assert embedded_json(broken) == [("text", broken)]


def test_a_configuration_is_listed_by_key_with_its_script_on_lines_of_its_own():
    parts = config_parts({"kind": "command", "config": {"command": "a\nb", "env": {}}, "time_limit": 600})
    assert [(p.key, p.text, p.block) for p in parts] == [
        ("kind", '"command"', False),
        ("config.command", "a\nb", True),
        ("config.env", "{}", False),
        ("time_limit", "600", False),
    ]


def test_a_steps_line_is_its_commands_first_line_or_its_messages():
    assert headline("cd /srv\nls -la", "output").text == "cd /srv" and headline("cd /srv\nls", "").more_lines == 1
    assert headline("", "\n  The model said this.\nAnd more.").text == "The model said this."
    long = headline("y" * 500, "")
    assert long.cut and len(long.text) == 161 and long.text.endswith("…")


def test_marks_are_the_only_markup_in_a_searched_text():
    assert marked("<b>Needle</b> and needle", "needle") == (
        "&lt;b&gt;<mark>Needle</mark>&lt;/b&gt; and <mark>needle</mark>"
    )
    assert marked("<i>", "") == "&lt;i&gt;"
    assert snippet("a " * 100 + "needle" + " b" * 100, "NEEDLE", width=10) == "…a a a a a needle b b b b b…"
