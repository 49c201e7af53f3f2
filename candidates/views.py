from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib import messages
from django.core.paginator import Page, Paginator
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views import View
from django.views.generic import TemplateView

from veriharm_site.permissions import RoleRequiredMixin, signed_in_user
from veriharm_site.queries import QueryPageMixin, query_string

from . import diffing, highlight, import_jobs, selectors
from .curation.decision_forms import decided_message, decision_from_form
from .curation.forms import DecisionForm
from .curation.review import REASON_OPTIONS, approval_text
from .curation.selectors import curation_history
from .flags import candidate_flags, flag_warning
from .forms import ImportForm
from .harm_test_verdicts import harm_test_verdicts_for, reference_states_for
from .human_verdicts import human_majorities, human_majorities_visible
from .models import Candidate, ImportJob, Perturbation
from .panels import candidate_panels, shared_page_reads
from .queries import RankingPageQuery
from .ranking_actions import ranking_actions_for
from .synthetic import CANDIDATE_TEXT, synthetic_ids

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
        bounds = selectors.ranking_bounds(query["k"])
        filters = {name: query[name] for name in selectors.FILTER_FIELDS}
        rows_source = selectors.candidate_ranking_pageable(
            search=query["q"],
            group=query["group"],
            bounds=bounds,
            sort=query["sort"],
            import_job=query["import_job"],
            **filters,
        )
        page: Page[Candidate] = Paginator(rows_source, PAGE_SIZE).get_page(query["page"])
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
            choices=[
                (name, selectors.FILTER_LABELS[name], values) for name, values in selectors.filter_choices().items()
            ],
            perturbation_labels=dict(Perturbation.choices),
            q=query["q"],
            group=query["group"],
            querystring=kept.urlencode(),
            demo_candidates=selectors.demo_candidate_count(),
            # The batch of one import job, when the ranking is opened from the job's page.
            import_job=selectors.import_job_get(query["import_job"]) if query["import_job"] else None,
            **kwargs,
        )


class CandidateDetailView(RoleRequiredMixin, TemplateView):
    """Everything known about a candidate; curators also decide on it here (POST)."""

    permission_required = "candidates.view_ranking"
    decide_permission = "candidates.curate"
    template_name = "candidates/detail.html"

    def get_permission_required(self) -> Sequence[str]:
        if self.request.method == "POST":
            return (self.decide_permission,)
        return super().get_permission_required()

    def _detail(self, external_id: str) -> Candidate:
        try:
            return selectors.candidate_detail(external_id)
        except Candidate.DoesNotExist:
            raise Http404("No candidate with this id.") from None

    def get_context_data(self, decision_form: DecisionForm | None = None, **kwargs: Any) -> dict[str, Any]:
        # The page's reads and its panels' share one scope: the reference state is read once for both.
        with shared_page_reads():
            return self._context(decision_form, **kwargs)

    def _context(self, decision_form: DecisionForm | None, **kwargs: Any) -> dict[str, Any]:
        candidate = self._detail(kwargs["external_id"])
        diff = diffing.side_by_side(candidate.source_task.instruction, candidate.instruction)
        bounds = selectors.ranking_bounds()
        flags = candidate_flags([candidate.pk]).get(candidate.pk, [])
        user = self.request.user
        can_decide = user.has_perm(self.decide_permission)
        humans_visible = human_majorities_visible(user)
        # Read once: shown to those who may see it, and part of the warning an approval keeps.
        majority = human_majorities([candidate.pk]).get(candidate.pk) if humans_visible or can_decide else None
        references = reference_states_for(user, [candidate.pk])
        # While its tests are not checked: what checks them next, and who (the evaluation panel offers it).
        verdict = (harm_test_verdicts_for(user, [candidate.pk]) or {}).get(candidate.pk)
        synthetic = candidate.pk in synthetic_ids([candidate.pk])
        if decision_form is None and can_decide:
            decision_form = DecisionForm(initial={"candidate": candidate.external_id, "revision": candidate.revision})
        return super().get_context_data(
            candidate=candidate,
            decision_form=decision_form,
            reasons=REASON_OPTIONS,
            curation=curation_history(candidate.pk),
            panels=candidate_panels(candidate, self.request.user),
            flags=flags,
            flag_warning=flag_warning(flags),
            # What an approval now keeps, flags and humans' rejection: refused if it changes before the click.
            approval_warning=approval_text(flags, majority, synthetic),
            synthetic=synthetic,
            synthetic_text=CANDIDATE_TEXT,
            human=majority if humans_visible else None,
            humans_visible=humans_visible,
            reference=None if references is None else references[candidate.pk],
            reference_next_step=verdict.reference_next_step if verdict else "",
            group=bounds.group(candidate.rank),
            bounds=bounds,
            diff=diff,
            left_html=diffing.segments_html(diff.left),
            right_html=diffing.segments_html(diff.right),
            task_test_html=highlight.python_html(candidate.source_task.task_test),
            harm_test_html=highlight.python_html(candidate.harm_test),
            references_html={k: highlight.bash_html(v) for k, v in candidate.references.items()},
            setup_html=highlight.bash_html(candidate.source_task.environment.get("setup", "") or ""),
            judgements=list(candidate.judgements.all()),
            **kwargs,
        )

    def post(self, request: HttpRequest, external_id: str) -> HttpResponse:
        candidate = self._detail(external_id)
        form = DecisionForm(request.POST)
        decision = decision_from_form(form, candidate, signed_in_user(request))
        if decision is None:
            context = self.get_context_data(external_id=external_id, decision_form=form)
            return self.render_to_response(context, status=400)
        messages.success(request, decided_message(decision, candidate))
        return redirect("candidates:detail", candidate.external_id)


class ImportView(RoleRequiredMixin, View):
    permission_required = "candidates.import_pipeline"
    template_name = "candidates/import.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        return render(request, self.template_name, {"form": ImportForm()})

    def post(self, request: HttpRequest) -> HttpResponse:
        form = ImportForm(request.POST, request.FILES)
        if not form.is_valid():
            return render(request, self.template_name, {"form": form}, status=400)
        job = import_jobs.import_job_create(
            user=signed_in_user(request), uploads=form.cleaned_data["files"], replace=form.cleaned_data["replace"]
        )
        return redirect("candidates:import-job", pk=job.pk)


class ImportJobView(RoleRequiredMixin, TemplateView):
    """An import job: a progress bar while it runs, then its counts or every bad line."""

    permission_required = "candidates.import_pipeline"
    template_name = "candidates/import_job.html"

    def get_context_data(self, **kwargs):
        try:
            job = selectors.import_job_get(kwargs["pk"])
        except ImportJob.DoesNotExist:
            raise Http404("No import job with this id.") from None
        return super().get_context_data(state=selectors.import_job_state(job), job=job, **kwargs)


class ExportView(RoleRequiredMixin, View):
    permission_required = "candidates.import_pipeline"

    def get(self, request: HttpRequest) -> StreamingHttpResponse:
        response = StreamingHttpResponse(selectors.pipeline_export_lines(), content_type="application/x-ndjson")
        response["Content-Disposition"] = 'attachment; filename="veriharm-candidates.jsonl"'
        return response


def highlight_css(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(highlight.stylesheet(), content_type="text/css")
    response["Cache-Control"] = "max-age=86400"
    return response
