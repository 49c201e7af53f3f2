"""Query parameters parsed by one DRF serializer for a page and its API twin alike.

A serializer states each parameter's rule once. The API lets the `ValidationError` through to the
exception handler (`{"errors": [{"field", "message"}]}`, 400); a page built on `QueryPageMixin`
answers it with 400 and a page naming each wrong parameter, so `?k=abc` is refused the same way
on both, never silently ignored.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from .api_errors import MAX_INT32, flatten_errors


class WholeNumberField(serializers.IntegerField):
    """A whole number in a range, written in ASCII digits; empty means absent (None)."""

    default_error_messages = {"whole": "must be a whole number from {low} to {high}, got {got}"}

    def __init__(self, *, low: int = 0, high: int = MAX_INT32, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault("default", None)
        super().__init__(min_value=low, max_value=high, **kwargs)
        self.low, self.high = low, high

    def validate_empty_values(self, data: Any) -> tuple[bool, Any]:
        if isinstance(data, str) and not data.strip():
            return True, None
        return super().validate_empty_values(data)

    def to_internal_value(self, data: Any) -> int:
        text = str(data).strip()
        # isdecimal() alone accepts other scripts' digits, which the database refuses.
        if not (text.isascii() and text.lstrip("-").isdecimal() and len(text) <= 12):
            self.fail("whole", low=self.low, high=self.high, got=repr(str(data)[:40]))
        number = int(text)
        if not self.low <= number <= self.high:
            self.fail("whole", low=self.low, high=self.high, got=number)
        return number


class FlagField(serializers.BooleanField):
    """An on/off switch of a page or API (?disagree=1); absent or empty is off."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("default", False)
        super().__init__(**kwargs)

    def validate_empty_values(self, data: Any) -> tuple[bool, Any]:
        if isinstance(data, str) and not data.strip():
            return True, False
        return super().validate_empty_values(data)


def optional_choice(choices: tuple[str, ...] | dict[str, str], help_text: str) -> serializers.ChoiceField:
    """A query parameter that is one of ``choices`` or absent (""), refused naming the values it may take."""
    values = tuple(choices)
    return serializers.ChoiceField(
        choices=values,
        required=False,
        allow_blank=True,
        default="",
        help_text=help_text,
        error_messages={"invalid_choice": f"must be one of {', '.join(values)}, got “{{input}}”"},
    )


def page_number_field() -> WholeNumberField:
    """`?page=` of a paged list: a whole number from 1, absent for the first. One past the last shows
    the last (a list can shrink between two clicks); anything else is refused like any parameter."""
    return WholeNumberField(low=1, help_text="Page of the list, from 1 (past the last: the last)")


class PageNumberQuery(serializers.Serializer):
    """The parameters of a list whose only one is its page."""

    page = page_number_field()


def query_of(serializer_class: type[serializers.Serializer], params: Any) -> dict[str, Any]:
    """The validated parameters; raises ValidationError naming each wrong one."""
    query = serializer_class(data=params)
    query.is_valid(raise_exception=True)
    return dict(query.validated_data)


class QueryPageMixin:
    """A page whose query parameters go through `query_serializer`; `self.query` holds them.
    Wrong parameters get 400 and a page that names them (nothing else is rendered, nothing is
    written). Parsed before any handler runs, the page's own `get` or `post` included, and only
    once the role check passes, whatever the order of the bases: a user without the role learns
    nothing from a bad parameter (RoleRequiredMixin refuses them as it would anyway)."""

    query_serializer: type[serializers.Serializer]
    query: dict[str, Any]

    def _refused_query(self, request: HttpRequest) -> HttpResponse | None:
        try:
            self.query = query_of(self.query_serializer, request.GET)
        except ValidationError as refused:
            return render(request, "bad_query.html", {"errors": flatten_errors(refused.detail)}, status=400)
        return None

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        method = (request.method or "").lower()
        handled = method in self.http_method_names and hasattr(self, method)  # type: ignore[attr-defined]
        allowed = self.has_permission() if hasattr(self, "has_permission") else True
        if handled and allowed:
            refused = self._refused_query(request)
            if refused is not None:
                return refused
        return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]


def query_string(query: dict[str, Any]) -> str:
    """The validated parameters that differ from "absent", to carry into links (pagination, next);
    never the page number, which each pagination link sets for itself."""
    kept = {
        name: "1" if value is True else value
        for name, value in query.items()
        if value not in (None, "", False) and name != "page"
    }
    return urlencode(kept)
