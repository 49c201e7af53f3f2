"""The one shape of a refused write: which field is wrong, a message saying why, and how the API
answers it.

Services raise a `Refused` (or a subclass) before they write anything. Pages put it on the form
field it names; the API's exception handler (`veriharm_site.api_errors.exception_handler`) turns
any of them into `{"errors": [{"field", "message"}]}` with the refusal's status code, so no API
view maps refusals itself.

A refusal of several problems passes them as `problems`, (field, message) pairs; `field` and
`message` then default to the first field and all the messages, so a handler that reads only
`message` still says everything. Every subclass goes through this constructor: a dataclass
subclass would replace it with one that never sets `field` and `message`
(tests/unit/test_refusals.py refuses one).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class Refused(Exception):
    """Raised by a service before it writes anything; pages and the API show it on `field`."""

    status_code = 400

    def __init__(
        self,
        field: str = "",
        message: str = "",
        *,
        problems: Iterable[tuple[str, str]] = (),
        status_code: int | None = None,
    ) -> None:
        listed = [(str(name), str(text)) for name, text in problems]
        if not listed:
            listed = [(field, message)]
        self.problems = listed
        self.field = field or listed[0][0]
        self.message = message or "; ".join(text for _, text in listed)
        if not self.message:
            raise ValueError(f"{type(self).__name__} needs a message saying what was refused")
        super().__init__(self.message)
        if status_code is not None:
            self.status_code = status_code

    def error_pairs(self) -> list[tuple[str, str]]:
        """(field, message) pairs, one per problem."""
        return list(self.problems)

    def error_extra(self) -> dict[str, Any]:
        """Keys beside `errors` a client needs to act on the refusal (none by default)."""
        return {}


class Conflict(Refused):
    """The request is well formed but the object's state forbids it (409)."""

    status_code = 409

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(field, message)
