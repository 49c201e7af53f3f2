"""What the application accepts from clients, checked before it reaches a view, a service or the database.

Three places let hostile input past the views' own validation, and each is closed here:

- text that PostgreSQL or UTF-8 cannot store: a NUL character (text columns and jsonb refuse it) or a
  lone surrogate (not encodable as UTF-8), in a URL path, a query string, a form field, a cookie,
  Basic credentials or anywhere in a JSON body;
- JSON nested so deep that the standard library's recursive parser runs out of stack
  (RecursionError): the depth is measured by a linear scan *before* anything is parsed;
- bodies of any size: JSON and form bodies are capped by DATA_UPLOAD_MAX_MEMORY_SIZE (Django's own
  setting, which DRF's JSON parser otherwise ignores), uploads by VERIHARM_MAX_UPLOAD_BYTES, both
  from the Content-Length header before a byte is read.

Every refusal names what is wrong; API paths answer in the API's error shape (`api_errors`), pages
with a plain-text 400.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.http.multipartparser import MultiPartParserError
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser

# --------------------------------------------------------------------------------------------- text


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored as text, or None when it can."""
    if "\x00" in value:
        return f"contains a NUL character (\\u0000) at character {value.index(chr(0)) + 1}"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"contains a lone surrogate (\\u{ord(value[exc.start]):04x}) at character {exc.start + 1}"
    return None


def first_bad_text(value: Any, path: str = "") -> tuple[str, str] | None:
    """The first string (key or value) in a parsed JSON document that cannot be stored, as (path, why).

    Iterative, so a document of any depth is walked without recursion (callers bound the depth anyway)."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return where, problem
        elif isinstance(item, dict):
            for key, child in item.items():
                name = f"{where}.{key}" if where else str(key)
                problem = text_problem(key)
                if problem:
                    return where or "(object key)", f"has a key that {problem}"
                stack.append((child, name))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{index}]") for index, child in reversed(list(enumerate(item))))
    return None


# --------------------------------------------------------------------------------------------- JSON depth

# A JSON string: quotes around anything but quotes and backslashes, or escapes (the unrolled form keeps
# the regular expression engine linear on long strings).
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def json_depth_exceeds(text: str, limit: int) -> bool:
    """Whether the JSON text nests arrays and objects deeper than `limit`, found without parsing it.

    Written by hand because the standard parser (the one DRF and the import use) recurses and only fails
    once the stack is exhausted; this scan is linear, never recurses and stops at the first level too
    deep. Brackets inside strings do not count; malformed text is left for the parser to refuse."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    depth = 0
    for char in brackets:
        if char in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads_checked(text: str, *, max_depth: int) -> Any:
    """json.loads with the depth checked first and NaN/Infinity refused; raises ValueError with a reason."""
    if json_depth_exceeds(text, max_depth):
        raise ValueError(f"JSON nested deeper than {max_depth} levels (VERIHARM_JSON_MAX_DEPTH)")
    return json.loads(text, parse_constant=_refuse_constant)


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "too_large"


class LimitedJSONParser(JSONParser):
    """DRF's JSON parser with a size cap, a depth cap checked before parsing, and text checks: every
    string (keys included) must be storable, and a bad one is named by its path in the body."""

    def parse(
        self, stream: IO[Any] | None, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(f"The JSON body is larger than {limit} bytes (DATA_UPLOAD_MAX_MEMORY_SIZE).")
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = codecs.decode(raw, encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            # A LookupError (an unknown charset) has no reason: its message names the charset.
            why = exc.reason if isinstance(exc, UnicodeDecodeError) else exc
            raise exceptions.ParseError(f"JSON parse error: the body is not valid {encoding}: {why}") from None
        try:
            data = loads_checked(text, max_depth=settings.VERIHARM_JSON_MAX_DEPTH)
        except RecursionError:  # unreachable with the depth check; kept so no body can ever answer 500
            raise exceptions.ParseError("JSON parse error: nested too deeply") from None
        except ValueError as exc:
            raise exceptions.ParseError(f"JSON parse error: {exc}") from None
        bad = first_bad_text(data)
        if bad:
            where, problem = bad
            raise exceptions.ValidationError({where or "body": [problem]})
        return data


# --------------------------------------------------------------------------------------------- requests


def _wants_api(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/")


def refuse(request: HttpRequest, message: str, field: str = "", code: int = 400) -> HttpResponse:
    """A refusal before any view ran: the API's error shape under /api/, plain text on pages."""
    if _wants_api(request):
        from .api_errors import errors_body

        return HttpResponse(json.dumps(errors_body([(field, message)])), status=code, content_type="application/json")
    text = f"{field}: {message}" if field else message
    response = HttpResponseBadRequest(text, content_type="text/plain; charset=utf-8")
    response.status_code = code
    return response


def _query_items(request: HttpRequest) -> Iterator[tuple[str, str]]:
    for key, values in request.GET.lists():
        yield key, key
        for value in values:
            yield key, value


def _not_utf8(encoded: str | bytes) -> str | None:
    """The name of the first parameter of a urlencoded string whose bytes are not UTF-8, or None.

    Django decodes such bytes to U+FFFD without a word, so a lone surrogate sent percent-encoded
    (%ED%A0%80) would be stored as a different character instead of being refused."""
    if isinstance(encoded, str):  # WSGI hands the query string over as latin-1
        try:
            raw = encoded.encode("latin-1")
        except UnicodeEncodeError:
            raw = encoded.encode("utf-8", errors="surrogatepass")
    else:
        raw = encoded
    for pair in raw.replace(b";", b"&").split(b"&"):
        key, _, value = pair.partition(b"=")
        for part in (key, value):
            try:
                unquote_to_bytes(part.replace(b"+", b" ")).decode("utf-8")
            except UnicodeDecodeError:
                return unquote_to_bytes(key.replace(b"+", b" ")).decode("utf-8", errors="replace") or "?"
    return None


def _basic_credentials(request: HttpRequest) -> str | None:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "basic" or not token:
        return None
    try:
        return base64.b64decode(token.strip(), validate=True).decode("utf-8", errors="surrogateescape")
    except (binascii.Error, ValueError):
        return None  # DRF answers malformed credentials itself


class InputSafetyMiddleware:
    """Refuses, before any view runs, bodies over their size limit and text nothing can store in the
    path, the query string, cookies, Basic credentials and form fields (JSON bodies: LimitedJSONParser)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        refusal = self.check(request)
        return refusal or self.get_response(request)

    def check(self, request: HttpRequest) -> HttpResponse | None:
        too_large = self._check_size(request)
        if too_large:
            return too_large
        problem = text_problem(request.path)
        if problem:
            return refuse(request, f"the URL path {problem}", "path")
        broken = _not_utf8(request.META.get("QUERY_STRING", ""))
        if broken is not None:
            return refuse(
                request,
                "the query parameter contains bytes that are not UTF-8 (a lone surrogate or a broken sequence)",
                broken.replace("\x00", "\\u0000"),
            )
        try:
            for name, text in _query_items(request):
                problem = text_problem(text)
                if problem:
                    return refuse(request, f"the query parameter {problem}", name.replace("\x00", "\\u0000"))
            for name, value in request.COOKIES.items():
                if text_problem(name) or text_problem(value):
                    return refuse(request, "a cookie contains a NUL character or a lone surrogate", "cookie")
            credentials = _basic_credentials(request)
            if credentials is not None and text_problem(credentials):
                return refuse(
                    request, "the Basic credentials contain a NUL character or invalid UTF-8", "authorization"
                )
            if request.method == "POST" and request.content_type == "application/x-www-form-urlencoded":
                broken = _not_utf8(request.body)
                if broken is not None:
                    return refuse(
                        request,
                        "the form field contains bytes that are not UTF-8 (a lone surrogate or a broken sequence)",
                        broken.replace("\x00", "\\u0000"),
                    )
            if request.method == "POST" and request.content_type in (
                "application/x-www-form-urlencoded",
                "multipart/form-data",
            ):
                for key, values in request.POST.lists():
                    for text in (key, *values):
                        problem = text_problem(text)
                        if problem:
                            return refuse(request, problem, key.replace("\x00", "\\u0000"))
        except RequestDataTooBig:
            return refuse(
                request,
                f"the form is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes (DATA_UPLOAD_MAX_MEMORY_SIZE)",
                "body",
                413,
            )
        except TooManyFieldsSent:
            return refuse(
                request,
                f"more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} parameters (DATA_UPLOAD_MAX_NUMBER_FIELDS)",
            )
        except (MultiPartParserError, SuspiciousOperation) as exc:
            return refuse(request, f"the form cannot be read: {exc}", "body")
        return None

    def _check_size(self, request: HttpRequest) -> HttpResponse | None:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return refuse(request, "the Content-Length header is not a number", "body")
        if request.content_type == "multipart/form-data":
            limit, name = settings.VERIHARM_MAX_UPLOAD_BYTES, "VERIHARM_MAX_UPLOAD_BYTES"
        else:
            limit, name = settings.DATA_UPLOAD_MAX_MEMORY_SIZE, "DATA_UPLOAD_MAX_MEMORY_SIZE"
        if length > limit:
            return refuse(
                request, f"the request body is {length} bytes, more than the limit of {limit} ({name})", "body", 413
            )
        return None
