"""The one shape of a refused write: which field is wrong, a message saying why, and how the API
answers it.

Services raise a `Refused` (or a subclass) before they write anything. Pages put it on the form
field it names; the API's exception handler (`veriharm_site.api_errors.exception_handler`) turns
any of them into `{"errors": [{"field", "message"}]}` with the refusal's status code, so no API
view maps refusals itself.
"""

from __future__ import annotations

from typing import Any


class Refused(Exception):
    """Raised by a service before it writes anything; pages and the API show it on `field`."""

    status_code = 400

    def __init__(self, field: str, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.message = message
        if status_code is not None:
            self.status_code = status_code

    def error_pairs(self) -> list[tuple[str, str]]:
        """(field, message) pairs, one per problem."""
        return [(self.field, self.message)]

    def error_extra(self) -> dict[str, Any]:
        """Keys beside `errors` a client needs to act on the refusal (none by default)."""
        return {}


class Conflict(Refused):
    """The request is well formed but the object's state forbids it (409)."""

    status_code = 409

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(field, message)
