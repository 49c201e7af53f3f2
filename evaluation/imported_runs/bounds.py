"""What an imported log may hold: the limits of an upload and of what it unpacks to, and the bounded
types every foreign format's model (`harbor_format`, `inspect_format`) is made of, so that a value
the database or the pages cannot hold is refused at the boundary, naming the file, the record and
the field, rather than failing later (pure: no database)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

# An upload, and what it may expand to: a .eval (a zip) or a job's .tar.gz is compressed, so its own
# size says little of its content; every member is checked before it is read.
MAX_UPLOAD_BYTES = 256 * 1024 * 1024
MAX_UNPACKED_BYTES = 512 * 1024 * 1024  # the whole archive, unpacked
MAX_MEMBER_BYTES = 32 * 1024 * 1024  # one file in it (an Inspect sample, a Harbor result), or a .json log
MAX_MEMBERS = 10_000
# One text of a record (a message, a test's output, an error). Trials keep the last OUTPUT_LIMIT
# characters of each; a longer one is refused rather than read into memory whole.
MAX_TEXT_CHARS = 1_000_000
MAX_NAME_CHARS = 200  # names and ids: the 200-character columns they are stored in
MAX_ITEMS = 10_000  # messages of a sample, steps of a trajectory, tool calls of a step
MAX_PROBLEMS = 20  # listed per refusal: the rest are counted

Name = Annotated[str, Field(max_length=MAX_NAME_CHARS)]
Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]
# Trial.task_exit_code and harm_exit_code are 32-bit integer columns.
ExitCode = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
# An epoch (Inspect) or a repetition (Harbor's trials of a task) is a trial's repetition: a run
# holds 1..100 (the run_repetitions_range constraint).
Epoch = Annotated[int, Field(ge=1, le=100)]
TokenCount = Annotated[int, Field(ge=0, le=10**15)]
Cost = Annotated[float, Field(ge=0, le=10**9)]  # USD; finite (the models refuse NaN and infinities)
Seconds = Annotated[float, Field(ge=0, le=10**9)]
Reward = Annotated[float, Field(ge=-(10**9), le=10**9)]  # 0 or 1 counts as a verdict; anything else does not


class Foreign(BaseModel):
    """A foreign format's record as far as this application reads it: strict types (a string is not
    a number, 0.5 is not an exit code), finite numbers, bounded lengths. Fields the application does
    not read are ignored: the harnesses write many more, and add new ones between versions."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True, allow_inf_nan=False)


def binary(value: float | None) -> int | None:
    """A test's reward as r_task or r_harm: 1 passed, 0 failed, anything else no verdict."""
    return int(value) if value is not None and value in (0, 1) else None


def _where(location: Iterable[int | str]) -> str:
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


Location = tuple[int | str, ...]


def problems(
    error: ValidationError, where: str, record: Callable[[Location], tuple[str, Location]] | None = None
) -> list[str]:
    """Each problem of a validation as `<where>: <record>: <field>: <what is wrong>`, never echoing
    the value; `record` names the record a field's location lies in, and the rest of the location."""
    found = []
    for detail in error.errors(include_url=False, include_input=False)[: MAX_PROBLEMS + 1]:
        if detail["type"] == "json_invalid":
            found.append(f"{where}: not valid JSON ({detail['msg'].split(': ', 1)[-1]})")
            continue
        place, location = record(detail["loc"]) if record else ("", detail["loc"])
        prefix = f"{where}: {place}" if place else where
        field = _where(location)
        found.append(f"{prefix}: {field}: {detail['msg']}" if field else f"{prefix}: {detail['msg']}")
    if error.error_count() > MAX_PROBLEMS:
        found = [*found[:MAX_PROBLEMS], f"{where}: and {error.error_count() - MAX_PROBLEMS} more problems"]
    return found
