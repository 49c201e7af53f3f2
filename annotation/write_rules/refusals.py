"""The refusal both sides of the app raise, and the length of a reason both keep (an annotator's for
setting an item aside, a curator's for a final label)."""

from __future__ import annotations

from collections.abc import Iterable

from veriharm_site.refusals import Refused

MAX_REASON = 2000


class AnnotationError(Refused):
    """A refused request; the message says what is wrong and nothing was changed."""

    def __init__(self, message: str = "", *, problems: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__("", message, problems=problems)
