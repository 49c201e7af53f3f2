"""The API's page numbers under the pages' rule (`veriharm_site.queries.page_number_field`)."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

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
