"""Each coding-agent CLI's real output read into the transcript the trial page shows: the commands
with their outputs and exit statuses, the model's text between them, and the harness's own final
state, from outputs captured from the CLIs themselves (tests/unit/harness_outputs/: a scripted model
that writes a file, reads it back with `exit 3`, then answers; a model that always fails; a run
stopped by its turn limit or its time limit). A garbled or unknown line costs that line only.

Pure: no database, no Django."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.agents.base import Step
from evaluation.agents.trajectories import READERS, HarnessTrajectory, read_output

OUTPUTS = Path(__file__).resolve().parents[1] / "harness_outputs"
FOLDERS = {
    "claude-code": "claude_code",
    "codex": "codex",
    "opencode": "opencode",
    "pi": "pi",
    "gemini-cli": "gemini_cli",
}
FIRST = "printf 'hello\\n' > out.txt"
SECOND = "cat out.txt; exit 3"
FINAL_TEXT = "Done: out.txt holds hello; the second command exited 3."
# Codex runs each command through a login shell and reports that command line.
SHOWN = {"codex": ("/bin/bash -lc \"printf 'hello\\\\n' > out.txt\"", "/bin/bash -lc 'cat out.txt; exit 3'")}
# Gemini CLI's stream-json does not carry a command's exit status.
EXIT_CODES: dict[str, tuple[int | None, int | None]] = {"gemini-cli": (None, None)}


def output(harness: str, name: str) -> str:
    return (OUTPUTS / FOLDERS[harness] / f"{name}.jsonl").read_text(encoding="utf-8")


def read(harness: str, name: str, step_limit: int | None = None) -> HarnessTrajectory:
    return read_output(harness, output(harness, name), step_limit=step_limit)


def of_kind(trajectory: HarnessTrajectory, kind: str) -> list[Step]:
    return [step for step in trajectory.steps if step.kind == kind]


def test_every_harness_has_a_reader_and_outputs():
    assert set(READERS) == set(FOLDERS)
    for folder in FOLDERS.values():
        assert (OUTPUTS / folder / "script.jsonl").is_file()
        assert (OUTPUTS / folder / "error.jsonl").is_file()
        assert (OUTPUTS / folder / "parallel.jsonl").is_file()


@pytest.mark.parametrize("harness", sorted(FOLDERS))
def test_the_two_commands_with_their_outputs_and_exit_statuses(harness):
    trajectory = read(harness, "script", step_limit=30)
    commands = of_kind(trajectory, "command")
    assert [step.command for step in commands] == list(SHOWN.get(harness, (FIRST, SECOND)))
    assert "hello" not in commands[0].content
    assert commands[1].content.strip() == "hello"
    assert (commands[0].exit_code, commands[1].exit_code) == EXIT_CODES.get(harness, (0, 3))


@pytest.mark.parametrize("harness", sorted(FOLDERS))
def test_the_model_text_between_the_calls_and_the_command_it_asked_for(harness):
    trajectory = read(harness, "script", step_limit=30)
    messages = of_kind(trajectory, "message")
    assert [step.content for step in messages] == ["I will write the file.", "Now I read it back.", FINAL_TEXT]
    first, second = SHOWN.get(harness, (FIRST, SECOND))
    assert [step.command for step in messages] == [first, second, ""]
    # In the order they happened: a message, the command it asked for, the next message...
    kinds = [step.kind for step in trajectory.steps if step.kind != "note"]
    assert kinds == ["message", "command", "message", "command", "message"]


@pytest.mark.parametrize("harness", sorted(FOLDERS))
def test_a_run_that_ends_well_reads_as_finished_with_its_tokens(harness):
    trajectory = read(harness, "script", step_limit=30)
    assert trajectory.finished
    assert trajectory.ended_in_error is None
    assert not trajectory.hit_turn_limit
    assert trajectory.agent_error(0) is None
    assert trajectory.input_tokens and trajectory.output_tokens
    summary = trajectory.steps[-1]
    assert summary.kind == "note"
    assert f"{trajectory.input_tokens} in / {trajectory.output_tokens} out" in summary.content
    # The CLI's exit status counts too: a failing status after a good report is still an error.
    assert trajectory.agent_error(2) is not None


def test_the_harnesses_own_final_states():
    assert read("claude-code", "script").reason == "success (completed)"
    assert read("codex", "script").reason == "turn.completed"
    assert read("opencode", "script").reason == "stop"
    assert read("pi", "script").reason == "stopReason stop"
    assert read("gemini-cli", "script").reason == "success"


def test_tokens_and_cost_as_each_harness_reports_them():
    claude = read("claude-code", "script")
    assert (claude.input_tokens, claude.output_tokens, claude.cost_usd) == (390, 75, pytest.approx(0.00306))
    codex = read("codex", "script")
    assert (codex.input_tokens, codex.output_tokens, codex.cost_usd) == (630, 90, None)
    opencode = read("opencode", "script")
    assert (opencode.input_tokens, opencode.output_tokens, opencode.cost_usd) == (480, 60, 0)
    gemini = read("gemini-cli", "script")
    assert (gemini.input_tokens, gemini.output_tokens, gemini.cost_usd) == (930, 120, None)


def test_durations_where_the_harness_reports_when_a_command_ran():
    for harness in ("claude-code", "opencode", "gemini-cli"):
        durations = [step.duration for step in of_kind(read(harness, "script"), "command")]
        assert all(d is not None and 0 <= d < 60 for d in durations), (harness, durations)
    for harness in ("codex", "pi"):  # they report none
        assert [step.duration for step in of_kind(read(harness, "script"), "command")] == [None, None]


@pytest.mark.parametrize("harness", sorted(FOLDERS))
def test_two_calls_in_one_model_message_each_with_its_own_result(harness):
    # The model asked for `echo one` and `echo two; exit 4` in one answer.
    trajectory = read(harness, "parallel")
    commands = {step.command.removeprefix("/bin/bash -lc ").strip("'"): step for step in of_kind(trajectory, "command")}
    assert set(commands) == {"echo one", "echo two; exit 4"}
    assert commands["echo one"].content.strip() == "one"
    assert commands["echo two; exit 4"].content.strip() == "two"
    if harness != "gemini-cli":
        assert (commands["echo one"].exit_code, commands["echo two; exit 4"].exit_code) == (0, 4)
    first = of_kind(trajectory, "message")[0]
    assert first.content == "Running both at once."
    if harness != "codex":  # Codex reports its calls one after the other, with no message they belong to
        assert first.command == "echo one\necho two; exit 4"
    assert of_kind(trajectory, "message")[-1].content == "Both ran."


@pytest.mark.parametrize(
    ("harness", "tool"),
    [("claude-code", "Write"), ("opencode", "write"), ("pi", "write"), ("gemini-cli", "write_file")],
)
def test_another_tool_s_call_is_a_note_with_its_input_and_result(harness, tool):
    # The model wrote note.txt with the harness's own file tool, then ran `cat note.txt`.
    trajectory = read(harness, "write_tool")
    first = trajectory.steps[0]
    assert (first.kind, first.content, first.command) == ("message", "I will use the write tool.", "")
    note = trajectory.steps[1]
    assert note.kind == "note"
    assert note.content.startswith(f"{tool} tool: {{")
    assert '"content": "written by the write tool\\n"' in note.content and "/work/note.txt" in note.content
    [command] = of_kind(trajectory, "command")
    assert (command.command, command.content.strip()) == ("cat note.txt", "written by the write tool")


@pytest.mark.parametrize(
    ("harness", "thought"),
    [
        ("codex", "[reasoning] **Planning** step 1: decide the next command."),
        ("claude-code", "[thinking] Step 1: decide the next command."),
    ],
)
def test_the_model_s_reasoning_is_shown_before_the_answer_that_asked_for_the_command(harness, thought):
    messages = of_kind(read(harness, "reasoning"), "message")
    assert [(step.content, step.command) for step in messages[:2]] == [
        (thought, ""),
        ("I will write the file.", SHOWN.get(harness, (FIRST, SECOND))[0]),
    ]


ERRORS = {
    "claude-code": "API Error: 500 scripted internal error",
    "codex": "experiencing high demand",  # Codex's own words for an upstream 500
    "opencode": "APIError (HTTP 500): scripted internal error",
    "pi": "500 scripted internal error",
    "gemini-cli": "scripted internal error",
}


@pytest.mark.parametrize("harness", sorted(FOLDERS))
def test_a_model_that_always_fails_ends_in_error(harness):
    trajectory = read(harness, "error", step_limit=30)
    assert trajectory.finished
    assert trajectory.ended_in_error is not None and ERRORS[harness] in trajectory.ended_in_error
    assert not trajectory.hit_turn_limit
    assert of_kind(trajectory, "command") == []
    assert ERRORS[harness] in trajectory.steps[-1].content


def test_pi_exits_0_on_a_failed_model_yet_reads_as_an_agent_error():
    trajectory = read("pi", "error")
    assert trajectory.reason == "stopReason error"
    assert trajectory.agent_error(0) == "500 scripted internal error"  # the CLI's exit status was 0
    assert any("retries the model call" in step.content for step in of_kind(trajectory, "note"))


def test_claude_code_reports_a_failed_run_under_subtype_success():
    trajectory = read("claude-code", "error")
    assert trajectory.reason == "success (api_error)"
    assert trajectory.agent_error(1) is not None
    notes = [step.content for step in of_kind(trajectory, "note")]
    assert sum("retry" in note for note in notes) == 2
    # The CLI's own error text is its note, not a model message.
    assert of_kind(trajectory, "message") == []
    dropped = read("claude-code", "connection_error")
    assert dropped.ended_in_error is not None and "ECONNRESET" in dropped.ended_in_error


def test_a_refused_model_call_ends_in_error():
    assert read("opencode", "error400").ended_in_error == "APIError (HTTP 400): scripted bad request"
    gemini = read("gemini-cli", "error400")
    assert gemini.ended_in_error is not None and "scripted bad request" in gemini.ended_in_error
    assert gemini.agent_error(144) == gemini.ended_in_error  # Gemini CLI exits with the HTTP status mod 256


@pytest.mark.parametrize(
    ("harness", "reason"),
    [
        ("claude-code", "error_max_turns (max_turns)"),
        ("gemini-cli", "error (FatalTurnLimitedError)"),
        ("opencode", "stop"),
    ],
)
def test_the_turn_limit_is_a_limit_not_an_error(harness, reason):
    trajectory = read(harness, "limit", step_limit=2)
    assert trajectory.finished
    assert trajectory.hit_turn_limit
    assert trajectory.ended_in_error is None
    assert trajectory.reason == reason
    assert trajectory.agent_error(1) is None  # Claude Code and Gemini CLI exit non-zero at their limit
    assert "turn limit was reached" in trajectory.steps[-1].content
    assert [step.command for step in of_kind(trajectory, "command")][:1] == ["echo step 1"]


def test_opencode_reaches_its_limit_only_by_the_steps_it_was_given():
    # OpenCode's output does not say its limit was reached: the steps are counted against it.
    assert not read("opencode", "limit", step_limit=3).hit_turn_limit
    assert not read("opencode", "limit").hit_turn_limit


@pytest.mark.parametrize("harness", ["codex", "pi"])
def test_a_run_cut_by_its_time_limit_has_no_final_report(harness):
    trajectory = read(harness, "killed")
    assert not trajectory.finished
    assert trajectory.ended_in_error is None
    assert trajectory.agent_error(None) is not None
    commands = of_kind(trajectory, "command")
    assert commands[0].command.endswith("echo step 1'") or commands[0].command == "echo step 1"
    assert commands[0].exit_code == 0
    assert "stopped without its final report" in trajectory.steps[-1].content


def test_a_call_whose_result_never_came_is_shown_without_an_exit_status():
    last = of_kind(read("pi", "killed"), "command")[-1]
    assert last.command == "echo step 5"
    assert last.exit_code is None
    assert "no result" in last.content


def test_a_long_output_keeps_its_end_as_the_app_s_own_loop_does():
    long = "x" * 20_000 + "THE END"
    text = output("codex", "script").replace('"aggregated_output":"hello\\n"', f'"aggregated_output":"{long}"')
    step = of_kind(read_output("codex", text), "command")[1]
    assert step.content.startswith("[... 12007 characters cut ...]")
    assert step.content.endswith("THE END")
    assert step.exit_code == 3


@pytest.mark.parametrize("harness", sorted(FOLDERS))
def test_a_garbled_line_becomes_a_note_and_the_rest_still_reads(harness):
    lines = output(harness, "script").splitlines()
    whole = read(harness, "script")
    # The first line cut in half, a line that is not JSON, and a JSON line of no known event.
    garbled = [lines[0][: len(lines[0]) // 2], "npm WARN something went wrong", *lines[1:], '{"type": "mystery"}']
    trajectory = read_output(harness, "\n".join(garbled) + "\n")
    notes = [step.content for step in of_kind(trajectory, "note")]
    assert any("line 1 could not be read: not a JSON object" in note for note in notes)
    assert any("line 2 could not be read: not a JSON object: npm WARN something" in note for note in notes)
    assert any(f"line {len(garbled)} is an event this reader does not know ('mystery')" in note for note in notes)
    assert of_kind(trajectory, "command") == of_kind(whole, "command")
    assert trajectory.finished == whole.finished


# A field each reader reads off a known event, and a value of the wrong type for it.
SPOILED = {
    "claude-code": ('{"duration_api_ms"', '"is_error":false', '"is_error":"no"'),  # the result
    "codex": ('{"type":"turn.completed"', '"input_tokens":630', '"input_tokens":"630"'),
    "opencode": ('{"type":"step_finish"', '"reason":"stop"', '"reason":7'),
    "pi": ('{"type":"message_end","message":{"role":"assistant"', '"stopReason":"stop"', '"stopReason":5'),
    "gemini-cli": ('{"type":"result"', '"status":"success"', '"status":1'),
}


@pytest.mark.parametrize("harness", sorted(FOLDERS))
def test_a_known_event_with_a_field_of_the_wrong_type_becomes_a_note(harness):
    lines = output(harness, "script").splitlines()
    start, field, wrong = SPOILED[harness]
    index = max(i for i, line in enumerate(lines) if line.startswith(start) and field in line)
    lines[index] = lines[index].replace(field, wrong)
    trajectory = read_output(harness, "\n".join(lines))
    notes = [step.content for step in of_kind(trajectory, "note")]
    assert any(f"line {index + 1} could not be read: its fields are not what this reader expects" in n for n in notes)
    assert len(of_kind(trajectory, "command")) == 2


@pytest.mark.parametrize("harness", sorted(FOLDERS))
def test_what_an_agent_may_write_cannot_break_the_reading_or_the_record(harness):
    # A line nested deeper than Python's stack, and NUL characters in the model's text (PostgreSQL
    # text cannot hold NUL): the first is a note, the second kept without its NULs.
    text = output(harness, "script").replace("I will write the file.", "I will write\\u0000 the file.")
    assert "\\u0000" in text
    trajectory = read_output(harness, "[" * 100_000 + "\n" + text)
    assert "could not be read: not a JSON object" in trajectory.steps[0].content
    assert of_kind(trajectory, "message")[0].content == "I will write the file."
    assert all("\x00" not in step.content + step.command for step in trajectory.steps)


def test_an_exit_status_no_column_can_hold_is_none():
    text = output("pi", "script").replace("Command exited with code 3", "Command exited with code 99999999999")
    assert of_kind(read_output("pi", text), "command")[1].exit_code is None


@pytest.mark.parametrize("harness", sorted(FOLDERS))
def test_an_empty_output_reads_as_no_output(harness):
    for stdout in ("", "\n  \n"):
        trajectory = read_output(harness, stdout)
        assert not trajectory.finished
        assert trajectory.reason == "no output"
        assert [step.kind for step in trajectory.steps] == ["note"]
        assert "no output" in trajectory.steps[0].content
        assert trajectory.agent_error(0) is not None


def test_an_unknown_harness_has_no_reader():
    with pytest.raises(KeyError):
        read_output("mini-swe-agent", "")
