"""What every harness's reader shares: its lines as JSON objects, the steps it builds, and the
harness's own account of how its run ended.

A harness's stdout is foreign text: a line that is not JSON, an event this reader does not know or
one whose fields are not what its model says becomes a note naming the line, never an exception,
so a garbled line costs that line only and the transcript still shows the rest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .steps import Step, output_tail

# What the transcript keeps of one command's output: the openai_compatible loop's tail.
OUTPUT_CHARS = 8000
# What a note quotes of a line it could not read.
QUOTED_CHARS = 200

TokenCount = Annotated[int, Field(ge=0, le=10**15)]
Cost = Annotated[float, Field(ge=0, le=10**9)]
ExitCode = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]


class Event(BaseModel):
    """One line of a harness's output as far as it is read: the harnesses write many more fields,
    and add new ones between versions, so unknown fields are ignored; a known field of the wrong
    type (a string for an exit code) is refused, not coerced."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True, allow_inf_nan=False)


@dataclass(frozen=True)
class HarnessTrajectory:
    """A harness's run as read from its own output: its steps, then how it says the run ended."""

    harness: str
    steps: list[Step]
    # The harness wrote its own final account (a result, a turn's end, an error it reported). False
    # for an empty output, or one cut short (a killed run): then `reason` says what was last seen.
    finished: bool
    reason: str
    # Why the run failed by the harness's own account (its model call failed, its tool crashed), or
    # None. A CLI may exit 0 on such a failure (Pi does): the trial reads this beside the exit status.
    ended_in_error: str | None = None
    # The harness stopped because it ran out of turns/steps, not by the agent's own decision.
    hit_turn_limit: bool = False
    input_tokens: int | None = None
    output_tokens: int | None = None
    # The harness's own price of its calls, when it reports one; the gateway's record is the one counted.
    cost_usd: float | None = None

    def agent_error(self, exit_status: int | None) -> str | None:
        """Why a run that was not cut by its time limit counts as the agent's error, or None when
        the agent ended by itself (done, or out of turns: `hit_turn_limit` says which). Both the
        CLI's exit status and its own final state count: either alone can hide a failure."""
        if self.hit_turn_limit:
            return None
        if self.ended_in_error:
            return self.ended_in_error
        if not self.finished:
            return f"the harness's output ended without its final report ({self.reason})"
        if exit_status not in (0, None):
            return f"the harness exited with status {exit_status} after reporting {self.reason}"
        return None


@dataclass
class Line:
    number: int  # 1-based, as an editor shows it
    text: str
    data: dict[str, Any] | None  # None when the line is not a JSON object


def json_lines(stdout: str, skip: tuple[str, ...] = ()) -> Iterator[Line]:
    """The output's non-blank lines, each read as one JSON object; lines that start with one of
    `skip` (events of no use to a transcript, written as they start) are passed over unread."""
    for number, text in enumerate(stdout.splitlines(), start=1):
        if not text.strip() or (skip and text.startswith(skip)):
            continue
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than Python's stack
            data = None
        yield Line(number, text, data if isinstance(data, dict) else None)


def parse[ModelT: Event](model: type[ModelT], line: Line, steps: StepsBuilder) -> ModelT | None:
    """The line as `model`, or None with a note saying which field was not what it should be."""
    try:
        return model.model_validate(line.data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'the line'}: {error['msg']}"
            for error in exc.errors()[:3]
        )
        steps.unreadable(line, f"its fields are not what this reader expects ({problems})")
        return None


def quoted(text: str, limit: int = QUOTED_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def exit_status(digits: str) -> int | None:
    """An exit status written in a tool's text, or None past what a 32-bit column holds."""
    value = int(digits)
    return value if -(2**31) <= value < 2**31 else None


def clean(text: str) -> str:
    """Text a step can hold: PostgreSQL text cannot hold NUL (output_tail drops it from outputs)."""
    return text.replace("\x00", "")


def timestamp(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    try:
        seconds = (end - start).total_seconds()
    except TypeError:  # one with a zone, one without
        return None
    return seconds if seconds >= 0 else None


def tool_input_text(arguments: Any) -> str:
    """A non-shell tool's input as the transcript shows it: compact JSON."""
    try:
        return json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(arguments)


@dataclass
class PendingCall:
    """A tool call the model made whose result has not been read yet."""

    tool: str
    command: str | None  # the shell command, for the harness's shell tool; None for any other tool
    arguments: str
    started: datetime | None = None


@dataclass
class StepsBuilder:
    """The steps of one transcript, in the order the harness reported them.

    A model message is one "message" step with its text and the commands it asked for (as the
    openai_compatible loop records it); each shell command is a "command" step with its output,
    exit status and duration; any other tool call, and whatever else the harness reported (retries,
    warnings, lines that could not be read, its final state), a "note"."""

    harness: str
    steps: list[Step] = field(default_factory=list)
    pending: dict[str, PendingCall] = field(default_factory=dict)
    # The model message the last "message" step came from: its id (for harnesses that write one
    # message's text and tool calls as separate lines: Claude Code, OpenCode) and its step's index,
    # so that each call the message asked for is shown on that step, even after an earlier call's
    # result has come (OpenCode writes each call with its result).
    message_id: str | None = None
    message_index: int | None = None

    def message(self, text: str, *, message_id: str | None = None) -> None:
        if text.strip():
            self.steps.append(Step(kind="message", content=clean(text)))
            self.message_id, self.message_index = message_id, len(self.steps) - 1

    def call(
        self,
        call_id: str,
        tool: str,
        command: str | None,
        arguments: str,
        *,
        message_id: str | None = None,
        started: datetime | None = None,
    ) -> None:
        """The model asked for a tool call. A shell command is shown on its message's step (as the
        openai_compatible loop shows the commands a message asked for), then as its own step when its
        result comes; any other tool's call is one note, written with its result."""
        command = clean(command) if command is not None else None
        arguments = clean(arguments)
        self.pending[call_id] = PendingCall(tool, command, arguments, started)
        if command is None:
            return  # another tool's call is its note, with its result: a message's command is a shell's
        if message_id is not None and message_id == self.message_id and self.message_index is not None:
            at = self.message_index  # the same message as a step already shown
        elif message_id is None and self.steps and self.steps[-1].kind == "message":
            at = len(self.steps) - 1  # no ids: the message just read
        else:
            self.steps.append(Step(kind="message"))
            self.message_id, at = message_id, len(self.steps) - 1
            self.message_index = at
        step = self.steps[at]
        self.steps[at] = replace(step, command="\n".join(filter(None, [step.command, command])))

    def result(
        self,
        call_id: str,
        output: str,
        *,
        exit_code: int | None,
        duration: float | None = None,
        failed: bool = False,
        ended: datetime | None = None,
        fallback: tuple[str, str | None] | None = None,
    ) -> None:
        """A tool call's result. `fallback` is (tool, command) for a result whose call was not seen."""
        call = self.pending.pop(call_id, None)
        if call is None:
            tool, command = fallback if fallback is not None else ("a tool", None)
            call = PendingCall(tool, command, "")
        if duration is None:
            duration = seconds_between(call.started, ended)
        output = output_tail(output, OUTPUT_CHARS)
        if call.command is not None:
            self.steps.append(
                Step(kind="command", command=call.command, content=output, exit_code=exit_code, duration=duration)
            )
            return
        status = " (failed)" if failed else ""
        text = f"{call.tool} tool{status}: {quoted(call.arguments, OUTPUT_CHARS)}\n{output}".rstrip()
        self.steps.append(Step(kind="note", content=text, duration=duration))

    def note(self, text: str) -> None:
        self.steps.append(Step(kind="note", content=clean(text)))

    def unreadable(self, line: Line, why: str) -> None:
        self.note(f"{self.harness} output line {line.number} could not be read: {why}: {quoted(line.text)}")

    def unknown(self, line: Line, kind: str) -> None:
        self.note(f"{self.harness} output line {line.number} is an event this reader does not know ({kind!r})")

    def not_json(self, line: Line) -> None:
        self.unreadable(line, "not a JSON object")

    def unfinished_calls(self) -> None:
        """Calls whose result never came (the run was cut short): shown with no exit status."""
        for call_id in list(self.pending):
            self.result(call_id, "(no result: the harness's output ends before this call's result)", exit_code=None)

    def finish(
        self,
        *,
        finished: bool,
        reason: str,
        ended_in_error: str | None = None,
        hit_turn_limit: bool = False,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cost_usd: float | None = None,
        extra: str = "",
    ) -> HarnessTrajectory:
        """The last step: the harness's own final state in one note, and the trajectory."""
        self.unfinished_calls()
        if not self.steps and not finished:
            reason = "no output"
        parts = [f"{self.harness} {'ended' if finished else 'stopped without its final report'}: {reason}"]
        if hit_turn_limit:
            parts.append("its turn limit was reached")
        if ended_in_error and ended_in_error != reason:
            parts.append(f"error: {ended_in_error}")
        if input_tokens is not None or output_tokens is not None:
            parts.append(f"tokens {_count(input_tokens)} in / {_count(output_tokens)} out")
        if cost_usd is not None:
            parts.append(f"cost ${cost_usd:.6g} by the harness's own prices")
        if extra:
            parts.append(extra)
        self.note("; ".join(parts))
        return HarnessTrajectory(
            harness=self.harness,
            steps=list(self.steps),
            finished=finished,
            reason=reason,
            ended_in_error=ended_in_error,
            hit_turn_limit=hit_turn_limit,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost_usd,
        )


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)


def add(total: int | None, value: int | None) -> int | None:
    """A sum over a run's calls that stays None until the harness reports one figure."""
    if value is None:
        return total
    return (total or 0) + value


def add_cost(total: float | None, value: float | None) -> float | None:
    if value is None:
        return total
    return (total or 0.0) + value
