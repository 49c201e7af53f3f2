"""A streamed answer passed on as its events come, its usage counted on the way (``StreamRelay``)."""

from __future__ import annotations

from collections.abc import Callable, Generator

import httpx

from .calls import Call
from .scrubbing import KeyScrubber
from .usage import StreamUsage


class StreamRelay:
    """A streamed answer passed on as its events come, its usage counted on the way.

    The last piece is held back until the call is recorded, so a client that starts its next call
    on the end of this stream finds it counted. Closing it early (the client went away, or never
    read it) still releases the endpoint's slot and records the call, once, with what was streamed.

    ``record`` records the call (the gateway's own bookkeeping), ``release`` frees the endpoint's slot."""

    def __init__(
        self,
        call: Call,
        response: httpx.Response,
        scrubber: KeyScrubber,
        *,
        record: Callable[[Call], None],
        release: Callable[[], None],
    ) -> None:
        self._record = record
        self._release = release
        self.call = call
        self.response = response
        self.scrubber = scrubber
        self.reader = StreamUsage()
        self._finished = False
        self._ended = False
        self._pieces = self._run()

    def __iter__(self) -> StreamRelay:
        return self

    def __next__(self) -> bytes:
        return next(self._pieces)

    def _run(self) -> Generator[bytes, None, None]:
        held = b""
        try:
            for chunk in self.response.iter_bytes():
                self.reader.feed(chunk)
                out = self.scrubber.feed(chunk)
                if held:
                    yield held
                held = out
            self._ended = True
        except Exception as exc:  # noqa: BLE001 - a broken or closed upstream stream, whatever raised
            if self.call.aborted:
                self.call.error = "the agent's command ended while the answer streamed: counted as far as it came"
            else:
                self.call.error = f"the upstream's stream broke off: {type(exc).__name__}: {exc}"
        finally:
            self._finish()
        tail = held + self.scrubber.flush()
        if tail:
            yield tail

    def _finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        try:
            try:
                self.response.close()
            finally:
                self.call.usage = self.reader.close()
                self.call.answer_chars = self.reader.text_chars
                if not self._ended and not self.call.error:
                    self.call.error = "the client left before the stream ended: counted as far as it came"
                self._record(self.call)
        finally:
            # Only once counted: a call waiting for this slot then sees this one in the budget.
            self._release()

    def close(self) -> None:
        try:
            self._pieces.close()  # runs the finally of a stream being read
        finally:
            self._finish()  # and covers one never started
