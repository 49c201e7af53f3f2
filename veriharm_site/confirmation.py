"""A confirm step before a destructive action, that needs no JavaScript.

The page's button is a link to the action's URL (GET), which answers with a page saying what
will happen, a form that POSTs to the same URL, and a way back that changes nothing. The POST
is the action itself, as before. Views: `ConfirmStepMixin` and a `confirmation(...)` method.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


@dataclass(frozen=True)
class Confirmation:
    title: str  # "Cancel run 12?"
    message: str  # what happens, and what stays
    action: str  # the confirming button: "Cancel the run"
    back_url: str  # where "go back" leads, nothing changed
    back_label: str = "No, go back"
    danger: bool = True


def confirm_page(request: HttpRequest, confirmation: Confirmation) -> HttpResponse:
    return render(request, "confirm.html", {"confirmation": confirmation})


class ConfirmStepMixin:
    """GET renders the confirm step of the view's POST action."""

    def confirmation(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Confirmation:
        raise NotImplementedError

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return confirm_page(request, self.confirmation(request, **kwargs))
