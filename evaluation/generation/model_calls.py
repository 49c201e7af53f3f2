"""One conversation with a proposer's or judge's endpoint: a prompt, its reply, and the bounded
re-asks of a reply that fails validation, every call recorded.

Every call goes through the agents' model gateway (`evaluation.gateway.Gateway.post_json`), so the
key (read from its variable at the moment of the call), the price table, the run's budget, the
endpoint's limits and the retries of transient HTTP failures are the gateway's, written once. What
the gateway learns of a call (tokens, cost, latency) it hands to its ledger; `_CallCapture` stands
in that place, passing everything on to the engine's ledger (if any) and keeping the figures of
the call this thread just made for its `ModelCallRecord`.

Nothing the model or the endpoint does raises here: an HTTP failure after the gateway's retries,
a missing key, a budget refusal or a reply still invalid after its re-asks ends the conversation
with an error the search records as the attempt's ending.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from evaluation.gateway.core import Gateway
from evaluation.gateway.ledger import BudgetSpent, CallRecord, Ledger, Reservation

from .contracts import ModelCallRecord
from .endpoints import Endpoint
from .flavours import Message, NoText, reply_text, request_body
from .prompts import PromptTemplate
from .replies import ReplyRejected

DETAIL_CHARS = 300


class _CallCapture:
    """The gateway's ledger: the engine's own one behind it, and this thread's last call in front."""

    def __init__(self, ledger: Ledger | None) -> None:
        self.ledger = ledger
        self._local = threading.local()

    @property
    def budget_usd(self) -> Decimal | None:
        return None if self.ledger is None else self.ledger.budget_usd

    def reserve(self, amount_usd: Decimal, hold_seconds: float) -> Reservation:
        if self.ledger is None:  # the gateway reserves only under a budget, which needs a ledger
            raise RuntimeError("reserve without a budget")
        try:
            return self.ledger.reserve(amount_usd, hold_seconds)
        except BudgetSpent as exc:
            self._local.refused = exc
            raise

    def settle(self, reservation: Reservation | None, call: CallRecord) -> None:
        if self.ledger is not None:
            self.ledger.settle(reservation, call)
        self._local.record = call

    def release_all(self) -> None:
        if self.ledger is not None:
            self.ledger.release_all()

    def start(self) -> None:
        self._local.record = None
        self._local.refused = None

    def taken(self) -> tuple[CallRecord | None, BudgetSpent | None]:
        return getattr(self._local, "record", None), getattr(self._local, "refused", None)


@dataclass(frozen=True)
class Outcome[T]:
    value: T | None
    calls: tuple[ModelCallRecord, ...]
    error: str = ""
    budget_spent: bool = False


def _detail(answer: Any) -> str:
    error = answer.get("error") if isinstance(answer, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return str(message or answer)[:DETAIL_CHARS]


def retry_message(problem: str) -> str:
    return (
        f"Your reply was not accepted: {problem}. Reply again with the complete JSON object only, "
        "as asked above, with that fixed."
    )


class ModelConversation:
    """A gateway to one endpoint and the loop of a prompt and its re-asks. Close it when done."""

    def __init__(self, endpoint: Endpoint, role: str, *, ledger: Ledger | None = None) -> None:
        self.endpoint = endpoint
        self.role = role  # "proposer" or "judge", in messages
        self._capture = _CallCapture(ledger)
        self.gateway = Gateway(endpoint.upstream, ledger=self._capture)

    def close(self) -> None:
        self.gateway.close()

    def _call(self, template: PromptTemplate, messages: list[Message]) -> tuple[ModelCallRecord, int, Any, bool]:
        body = request_body(self.endpoint, messages)
        self._capture.start()
        started = time.monotonic()
        status, answer = self.gateway.post_json(self.endpoint.path, body)
        latency = time.monotonic() - started
        gateway_record, refused = self._capture.taken()
        # The body the gateway passed back, key scrubbed by it, as JSON text again.
        reply = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        record = ModelCallRecord(
            prompt_name=template.name,
            prompt_version=template.version,
            prompt_sha256=template.sha256,
            route=self.endpoint.route,
            model=self.endpoint.model,
            status_code=status,
            request_text=json.dumps(body, ensure_ascii=False),
            reply_text=reply,
            latency=latency,
        )
        if gateway_record is not None:
            record = replace(
                record,
                input_tokens=gateway_record.input_tokens,
                output_tokens=gateway_record.output_tokens,
                usage_estimated=gateway_record.usage_estimated,
                cost_usd=gateway_record.cost_usd,
                latency=gateway_record.latency,
            )
        return record, status, answer, refused is not None

    def converse[T](self, template: PromptTemplate, prompt: str, accept: Callable[[str], T]) -> Outcome[T]:
        """Ask `prompt`; `accept` turns a reply's text into the value or raises ReplyRejected."""
        who = f"the {self.role} {self.endpoint.name!r}"
        messages: list[Message] = [{"role": "user", "content": prompt}]
        calls: list[ModelCallRecord] = []
        tries = 1 + self.endpoint.max_reply_retries
        problem = ""
        for _ in range(tries):
            record, status, answer, budget_refused = self._call(template, messages)
            if budget_refused:
                # Refused before it was sent: no call to record, and none after it.
                return Outcome(None, tuple(calls), f"{who}: {_detail(answer)}", budget_spent=True)
            if status != 200:
                calls.append(record)
                return Outcome(None, tuple(calls), f"{who} failed: HTTP {status}: {_detail(answer)}")
            text = ""
            try:
                text = reply_text(self.endpoint.route, answer)
                value = accept(text)
            except (NoText, ReplyRejected) as exc:
                problem = str(exc)
                calls.append(replace(record, validation_error=problem))
                messages = [
                    *messages,
                    # An empty turn is refused by the Messages API: a placeholder keeps the turns alternating.
                    {"role": "assistant", "content": text or "[the reply held no text]"},
                    {"role": "user", "content": retry_message(problem)},
                ]
                continue
            calls.append(record)
            return Outcome(value, tuple(calls))
        return Outcome(
            None, tuple(calls), f"{who} gave no valid reply in {tries} tr{'y' if tries == 1 else 'ies'}: {problem}"
        )
