"""The API's page numbers under the pages' rule (`veriharm_site.queries.page_number_field`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.core.paginator import Paginator
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .queries import PageNumberQuery, query_of


class CheckedPageNumberPagination(PageNumberPagination):
    """DRF's page-number pagination, except that a `?page=` that is not a whole number from 1 (or
    `last`) is a 400 naming `page`, as on the HTML lists, rather than DRF's 404 "Invalid page". A
    number past the last page stays a 404: an API client walks the `next` links."""

    def get_page_number(self, request: Request, paginator: Paginator) -> Any:
        raw = request.query_params.get(self.page_query_param, "")
        if raw in self.last_page_strings:
            return paginator.num_pages
        return query_of(PageNumberQuery, {"page": raw})["page"] or 1


def paged(
    request: Request, view: APIView, rows: Sequence[Any] | Any, serialize: Callable[[list[Any]], Any]
) -> Response:
    """One page of `rows` as the API's page shape (count, next, previous, results); `serialize`
    builds the results from the page's rows, so a view can read what only those rows need.
    The view sets `pagination_class = CheckedPageNumberPagination`, which is also how the schema
    shows the page shape."""
    paginator = CheckedPageNumberPagination()
    page = paginator.paginate_queryset(rows, request, view=view)
    return paginator.get_paginated_response(serialize(list(page or [])))
