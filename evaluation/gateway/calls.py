"""What the gateway learns of one call while handling it (``Call``), and the tokens it is recorded
with when it ends (``finished_usage``: reported, or estimated when the upstream gave none)."""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx

from .ledger import Reservation
from .usage import Usage, estimate_tokens


@dataclass(eq=False)  # each call is its own, in the set of calls in flight
class Call:
    """What the gateway learns of one call while handling it, recorded at its end."""

    route: str
    model: str
    streamed: bool
    started: float
    timeout: float
    # What the budget estimate and a usage estimate start from.
    request_bytes: int = 0
    output_bound: int = 0
    retries: int = 0
    status: int = 0
    usage: Usage = field(default_factory=Usage)
    # Characters of answer text passed on: a usage estimate's output when the upstream sent none.
    answer_chars: int = 0
    error: str = ""
    gateway_failure: bool = False
    # The gateway closed while the call was in flight (the agent's command ended).
    aborted: bool = False
    response: httpx.Response | None = None
    reservation: Reservation | None = None
    recorded: bool = False


def finished_usage(call: Call) -> tuple[Usage, bool]:
    """The call's tokens, and whether they are an estimate.

    An answer the upstream sent (2xx) without its full usage, or cut short (the client left, the
    agent's command ended), is estimated: input from the request's size, output from the answer
    text passed on, at ESTIMATE_CHARS_PER_TOKEN; a whole answer lost when the gateway closed counts
    its output bound. Refusals and upstream errors cost nothing."""
    usage = call.usage
    answered = 200 <= call.status < 300 or (call.aborted and call.response is not None)
    if usage.complete or not answered:
        return usage, False
    output = estimate_tokens(call.answer_chars)
    if call.aborted and not call.streamed:
        output = call.output_bound
    return (
        Usage(
            input_tokens=usage.input_tokens or estimate_tokens(call.request_bytes),
            output_tokens=max(usage.output_tokens, output),
            reported=usage.reported,
            complete=False,
        ),
        True,
    )
