"""The API's one shape for refusals, and the pieces that produce and document it.

Every 4xx answer of the API has the body

    {"errors": [{"field": "agents[0]", "message": "..."}, ...]}

`field` names what is wrong (a body field as a path such as `selection.ids[2]`, a query or path
parameter, `body`, or "" when the refusal is about the request as a whole); imports add `file` and
`line`. Some refusals carry one more key the client needs (a flagged approval: `flags`).
DRF's own exceptions (parse errors, validation errors, 403, 404, 405, 415) go through
`exception_handler`, and so do the service layer's refusals (`veriharm_site.refusals.Refused`):
API views let them through; a view's own check raises `Refusal`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from drf_spectacular.utils import inline_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

from .refusals import Refused

ErrorPair = tuple[str, str]


class ErrorItemSerializer(serializers.Serializer):
    field = serializers.CharField(allow_blank=True, help_text='What is wrong: a field path, a parameter, "body" or ""')
    message = serializers.CharField()
    file = serializers.CharField(required=False, help_text="Imports: the file")
    line = serializers.IntegerField(required=False, help_text="Imports: the line")


API_ERRORS = inline_serializer("ApiErrors", {"errors": ErrorItemSerializer(many=True)})


def errors_body(errors: Iterable[ErrorPair | Mapping[str, Any]], **extra: Any) -> dict[str, Any]:
    items = [dict(e) if isinstance(e, Mapping) else {"field": e[0], "message": e[1]} for e in errors]
    return {"errors": items, **extra}


def refusal(
    errors: Iterable[ErrorPair | Mapping[str, Any]] | str,
    *,
    field: str = "",
    code: int = status.HTTP_400_BAD_REQUEST,
    **extra: Any,
) -> Response:
    """A refusal response; `errors` is one message (about `field`) or a list of (field, message)."""
    if isinstance(errors, str):
        errors = [(field, errors)]
    return Response(errors_body(errors, **extra), status=code)


class Refusal(exceptions.APIException):
    """Raise from a view to refuse with the API's shape: Refusal("k must be an integer", field="k")."""

    status_code: int = status.HTTP_400_BAD_REQUEST

    def __init__(self, message: str, *, field: str = "", code: int = status.HTTP_400_BAD_REQUEST) -> None:
        super().__init__(message)
        self.status_code = code
        self.field = field


def flatten_errors(detail: Any, path: str = "") -> list[ErrorPair]:
    """(field path, message) pairs from a DRF error detail."""
    return list(_flatten(detail, path))


def _flatten(detail: Any, path: str = "") -> Iterator[ErrorPair]:
    """(field path, message) pairs from a DRF error detail, however nested (list fields give dicts
    keyed by index, nested serializers dicts keyed by name)."""
    if isinstance(detail, Mapping):
        for key, value in detail.items():
            if key in ("non_field_errors", "detail"):
                name = path
            elif isinstance(key, int):  # list fields key their children's errors by index
                name = f"{path}[{key}]"
            else:
                name = f"{path}.{key}" if path else str(key)
            yield from _flatten(value, name)
    elif isinstance(detail, list):
        for value in detail:
            yield from _flatten(value, path)
    else:
        yield path, str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(*exc.args)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(*exc.args)
    if isinstance(exc, Refused):
        # A service's refusal: it wrote nothing, and says which field is wrong.
        set_rollback()
        return Response(errors_body(exc.error_pairs(), **exc.error_extra()), status=exc.status_code)
    if not isinstance(exc, exceptions.APIException):
        return None
    headers: dict[str, str] = {}
    if auth_header := getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = auth_header
    if wait := getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(wait))
    if isinstance(exc, Refusal):
        pairs = [(exc.field, str(exc.detail))]
    elif isinstance(exc, exceptions.ValidationError):
        pairs = list(_flatten(exc.detail))
    else:
        pairs = [("", str(exc.detail))]
    set_rollback()
    return Response(errors_body(pairs), status=exc.status_code, headers=headers)


# --------------------------------------------------------------------------------------------- query parameters

MAX_INT32 = 2**31 - 1  # query parameters are parsed by serializers: veriharm_site.queries


# --------------------------------------------------------------------------------------------- schema

_REFUSED = {
    "description": 'Refused: {"errors": [{"field", "message"}]}, nothing changed',
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ApiErrors"}}},
}


def document_refusals(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: every operation may answer 4XX with the error shape (bad
    input, no permission, not found, conflict, too large), and every 4xx an operation declares has it.
    Without this the schema would promise shapes the API no longer sends."""
    components = result.setdefault("components", {}).setdefault("schemas", {})
    if "ApiErrors" not in components:
        components["ApiErrors"] = {
            "type": "object",
            "properties": {"errors": {"type": "array", "items": {"$ref": "#/components/schemas/ErrorItem"}}},
            "required": ["errors"],
        }
    components.setdefault(
        "ErrorItem",
        {
            "type": "object",
            "properties": {
                "field": {"type": "string"},
                "message": {"type": "string"},
                "file": {"type": "string"},
                "line": {"type": "integer"},
            },
            "required": ["field", "message"],
        },
    )
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            responses = operation.setdefault("responses", {})
            for code in list(responses):
                if code.startswith("4"):
                    responses[code] = dict(_REFUSED)
            responses.setdefault("4XX", dict(_REFUSED))
    return result


# --------------------------------------------------------------------------------------------- URL-level errors


def _api_or(default: Any, code: int, message: str) -> Callable[..., Any]:
    """Django's error views for pages (the site's 403/404/500 templates); the API's error shape for paths under /api/ (a URL that names
    no endpoint, or an id the converter refuses, is refused like any other bad input)."""

    def view(request: Any, exception: Exception | None = None, **kwargs: Any) -> Any:
        if request.path_info.startswith("/api/"):
            from django.http import JsonResponse

            return JsonResponse(errors_body([("path", message)]), status=code)
        return default(request, exception, **kwargs) if exception is not None else default(request, **kwargs)

    return view


def _handlers() -> dict[str, Any]:
    from django.views import defaults

    return {
        "handler400": _api_or(defaults.bad_request, 400, "Bad request."),
        "handler403": _api_or(defaults.permission_denied, 403, "You do not have permission to do this."),
        "handler404": _api_or(defaults.page_not_found, 404, "No endpoint or object at this URL."),
        # Pages get templates/500.html, rendered without a request (nothing that failed is touched again).
        "handler500": _api_or(defaults.server_error, 500, "The server failed to answer; the failure was logged."),
    }


ERROR_HANDLERS = _handlers()
