"""The one shape of a refused write: which field is wrong and a message saying why."""


class Refused(Exception):
    """Raised by a service before it writes anything; pages and the API show it on `field`."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message
