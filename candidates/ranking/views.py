"""Pages of the candidate pool: the ranking and the export in the pipeline format (the import and its
jobs have theirs in `candidates.import_jobs.views`). The candidate page is
`candidates.curation.candidate_page` (curators decide there); curation's and releases' pages are in
their packages."""

from __future__ import annotations

from django.core.paginator import Page, Paginator
from django.http import HttpRequest, StreamingHttpResponse
from django.views import View
from django.views.generic import TemplateView

from veriharm_site.permissions import RoleRequiredMixin
from veriharm_site.queries import QueryPageMixin, query_string

from ..hooks.flags import candidate_flags
from ..hooks.harm_test_verdicts import reference_states_for
from ..hooks.ranking_actions import ranking_actions_for
from ..models import Candidate, Perturbation
from ..pool import selectors as pool
from ..pool.synthetic import synthetic_ids
from . import selectors
from .queries import RankingPageQuery

# The table's sortable columns and the order a first click on each gives.
SORTABLE_COLUMNS = {
    "rank": "rank",
    "quality": "-quality",
    "id": "id",
    "perturbation": "perturbation",
    "risk_category": "risk_category",
    "target_agent": "target_agent",
    "proposer": "proposer",
}

TABLE_HEADERS = [
    ("rank", "Rank"),
    ("quality", "Q"),
    ("sums", "Judge sums"),
    ("id", "Candidate"),
    ("perturbation", "Perturbation"),
    ("risk_category", "Risk category"),
    ("target_agent", "Target agent"),
    ("proposer", "Proposer"),
]


def sort_links(filter_string: str, current: str) -> dict[str, dict[str, str]]:
    """Per sortable column, the link of its header (a second click reverses the order) and the
    direction it is sorted in now ("ascending", "descending" or "")."""
    current = current or "rank"
    links = {}
    for column, first in SORTABLE_COLUMNS.items():
        ascending, descending = column, f"-{column}"
        target = (descending if current == ascending else ascending) if current in (ascending, descending) else first
        state = "ascending" if current == ascending else "descending" if current == descending else ""
        prefix = f"{filter_string}&" if filter_string else ""
        links[column] = {"href": f"?{prefix}sort={target}", "state": state}
    return links


PAGE_SIZE = 50


class RankingView(RoleRequiredMixin, QueryPageMixin, TemplateView):
    permission_required = "candidates.view_ranking"
    template_name = "candidates/ranking.html"
    query_serializer = RankingPageQuery

    def get_context_data(self, **kwargs):
        params = self.request.GET
        query = self.query
        bounds = pool.ranking_bounds(query["k"])
        filters = {name: query[name] for name in pool.FILTER_FIELDS}
        page: Page[Candidate] = Paginator(selectors.ranking_rows(query, bounds), PAGE_SIZE).get_page(query["page"])
        rows = list(page.object_list)
        sums = selectors.candidate_judge_sums([c.pk for c in rows])
        # Judges named once in the header when every row of the page has the same ones in the same
        # order (the usual case: one panel judged the pool); otherwise each sum carries its judge.
        panels = {tuple(judge for judge, _ in row_sums) for row_sums in sums.values()}
        shared_judges = list(panels.pop()) if len(panels) == 1 else None
        flags = candidate_flags(c.pk for c in rows)
        references = reference_states_for(self.request.user, [c.pk for c in rows]) or {}
        synthetic = synthetic_ids(c.pk for c in rows)
        kept = params.copy()
        kept.pop("page", None)
        filter_string = query_string({**query, "sort": ""})
        return super().get_context_data(
            sort=query["sort"] or "rank",
            sortable_headers=TABLE_HEADERS,
            sort_links=sort_links(filter_string, query["sort"]),
            actions=[
                {
                    "filter_label": action.filter_label,
                    "filter_url": action.filter_url(filter_string),
                    "rows_label": action.rows_label,
                    "rows_url": action.rows_url(),
                    "rows_fields": action.rows_fields,
                }
                for action in ranking_actions_for(self.request.user)
            ],
            page=page,
            shared_judges=shared_judges,
            rows=[
                {
                    "candidate": c,
                    "group": bounds.group(c.rank),
                    "sums": sums[c.pk],
                    "flags": flags.get(c.pk, []),
                    "reference": references.get(c.pk),
                    "synthetic": c.pk in synthetic,
                }
                for c in rows
            ],
            bounds=bounds,
            filters=filters,
            choices=[(name, pool.FILTER_LABELS[name], values) for name, values in pool.filter_choices().items()],
            perturbation_labels=dict(Perturbation.choices),
            q=query["q"],
            group=query["group"],
            querystring=kept.urlencode(),
            demo_candidates=pool.demo_candidate_count(),
            # The batch of one import job, when the ranking is opened from the job's page.
            import_job=pool.import_job_get(query["import_job"]) if query["import_job"] else None,
            **kwargs,
        )


class ExportView(RoleRequiredMixin, View):
    permission_required = "candidates.import_pipeline"

    def get(self, request: HttpRequest) -> StreamingHttpResponse:
        response = StreamingHttpResponse(pool.pipeline_export_lines(), content_type="application/x-ndjson")
        response["Content-Disposition"] = 'attachment; filename="veriharm-candidates.jsonl"'
        return response
