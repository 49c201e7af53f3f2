"""Pages of curation: the review queue, edits and the reports (releases have theirs in
`candidates.releases.views`). Thin: they call the services and selectors and show refusals on the
form field they name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views import View
from django.views.generic import TemplateView

from veriharm_site.charts import BarSpec, Chart, count_label, nice_ceiling, stacked_bars
from veriharm_site.confirmation import Confirmation
from veriharm_site.permissions import RoleRequiredMixin, signed_in_user
from veriharm_site.queries import QueryPageMixin, query_string
from veriharm_site.url_filling import url_filler

from ..hooks.flags import candidate_flags
from ..hooks.harm_test_verdicts import reference_states_for
from ..hooks.human_verdicts import HUMAN_STATES, human_majorities_for, human_studies
from ..models import Candidate, DecisionReason, Perturbation, Verdict
from ..pool.selectors import demo_candidate_count, filter_choices
from ..pool.synthetic import synthetic_ids
from . import review, revisions, selectors
from .candidate_page import CandidateDetailView
from .decision_forms import decided_message, decision_from_form, field_of
from .descriptive import breakdown
from .forms import (
    BulkDecisionForm,
    DecisionForm,
    RevisionForm,
)
from .queries import DECISION_STATES, REVIEW_SORTS, GroupSizeQuery, ReviewQueuePageQuery, ReviewQueueQuery
from .queue_listing import review_queue_listing
from .queue_strip import queue_strip
from .search_report import ALL, FunnelStage, SearchReport, search_report
from .selectors import descriptive_cells, search_funnel, search_rows

QUEUE_PAGE_SIZE = 50


def _with_query(url: str, querystring: str) -> str:
    return f"{url}?{querystring}" if querystring else url


def _review_url(rank: int, querystring: str) -> str:
    return _with_query(reverse("candidates:review", args=[rank]), querystring)


def _queue_url(querystring: str) -> str:
    return _with_query(reverse("candidates:review-queue"), querystring)


def _review_urls(querystring: str) -> Callable[[int], str]:
    """The review page of any rank, reversed once: the strip links thousands of ranks."""
    return url_filler("candidates:review", f"?{querystring}" if querystring else "")


class ReviewQueueView(RoleRequiredMixin, QueryPageMixin, TemplateView):
    """The top-K sorted, filtered and searched; a POST decides the ticked rows at once, after a
    confirm step (the first POST shows what will happen, the second, with `confirmed`, does it)."""

    permission_required = "candidates.curate"
    query_serializer = ReviewQueuePageQuery
    template_name = "candidates/review_queue.html"

    def get_context_data(self, bulk_form: BulkDecisionForm | None = None, **kwargs: Any) -> dict[str, Any]:
        query = self.query
        queue = selectors.review_queue(query["k"])
        listing = review_queue_listing(query, queue)
        page = Paginator(listing.rows, QUEUE_PAGE_SIZE).get_page(query["page"])
        querystring = query_string(query)
        start = listing.next_undecided(0) or (listing.rows[0].rank if listing.rows else None)
        bulk_form = bulk_form or BulkDecisionForm()
        choices = filter_choices()
        references = reference_states_for(self.request.user, [row.pk for row in page.object_list])
        synthetic = synthetic_ids(row.pk for row in page.object_list)
        # The human majority and its votes beside each row, and the filter by study, for those who
        # may read study results.
        humans = human_majorities_for(self.request.user, [row.pk for row in page.object_list])
        return super().get_context_data(
            humans=humans,
            studies=human_studies() if humans is not None else None,
            human_states=HUMAN_STATES,
            synthetic=synthetic,
            # The box to approve synthetic candidates anyway, offered while the queue holds any.
            synthetic_in_queue=bool(synthetic) or bool(synthetic_ids(e.pk for e in queue.entries)),
            queue=queue,
            strip=queue_strip(queue, _review_urls(querystring)),
            listing=listing,
            page=page,
            references=references,
            query=query,
            querystring=querystring,
            # The rows' links to the review page carry the order and filters: "next" follows them.
            review_query=querystring,
            start_url=_review_url(start, querystring) if start else None,
            sorts=REVIEW_SORTS.items(),
            decision_states=DECISION_STATES,
            perturbations=[(p, dict(Perturbation.choices).get(p, p)) for p in choices["perturbation"]],
            risk_categories=choices["risk_category"],
            filtered=any(
                query[name] for name in ("decision", "flagged", "q", "perturbation", "risk_category", "study", "human")
            ),
            bulk_form=bulk_form,
            selected=set(bulk_form.cleaned_data["candidates"])
            if bulk_form.is_bound and bulk_form.is_valid()
            else set(),
            reasons=review.REASON_OPTIONS,
            max_bulk=review.MAX_BULK_DECISIONS,
            **kwargs,
        )

    def post(self, request: HttpRequest) -> HttpResponse:
        form = BulkDecisionForm(request.POST)
        status = 400
        if form.is_valid():
            data = form.cleaned_data
            decide = {
                "external_ids": data["candidates"],
                "verdict": data["verdict"],
                "reason": data["reason"],
                "note": data["note"],
                "acknowledge_flags": data["acknowledge_flags"],
                "acknowledge_human_verdict": data["acknowledge_human_verdict"],
                "acknowledge_synthetic": data["acknowledge_synthetic"],
            }
            try:
                if not data["confirmed"]:
                    plan = review.decisions_bulk_check(**decide)
                    return self._confirm_page(request, form, plan)
                decisions = review.decisions_record_bulk(
                    user=signed_in_user(request), seen_revisions=form.seen_revisions(), **decide
                )
            except review.DecisionRefused as refused:
                form.add_error(field_of(form, refused.field), refused.message)
                status = refused.status_code
            else:
                messages.success(request, _bulk_summary(decisions[0].verdict, decisions[0].reason, len(decisions)))
                return redirect(_queue_url(query_string(self.query)))
        return self.render_to_response(self.get_context_data(bulk_form=form), status=status)

    def _confirm_page(self, request: HttpRequest, form: BulkDecisionForm, plan: review.BulkPlan) -> HttpResponse:
        data = form.cleaned_data
        count = len(plan.candidates)
        title = _bulk_summary(data["verdict"], data["reason"], count, question=True)
        message = (
            f"Each of the {count} gets a new decision by you on its current revision"
            f"{', with the note' if data['note'].strip() else ''}; their earlier decisions stay in their history."
        )
        flagged, rejected, synthetic = len(plan.flagged), len(plan.human_rejected), len(plan.synthetic)
        if flagged:
            message += f" {flagged} of them {'is' if flagged == 1 else 'are'} flagged: each approval keeps its warning."
        if rejected:
            message += (
                f" Humans judged {rejected} of them invalid: each approval keeps that warning, as you acknowledged."
            )
        if synthetic:
            message += (
                f" {synthetic} of them {'is' if synthetic == 1 else 'are'} synthetic (no model produced their judge "
                "scores and Q): each approval keeps that warning, as you acknowledged."
            )
        confirmation = Confirmation(
            title=title,
            message=message,
            action=_bulk_summary(data["verdict"], data["reason"], count, short=True),
            back_url=_queue_url(query_string(self.query)),
            danger=data["verdict"] == Verdict.REJECT,
        )
        pks = [c.pk for c in plan.candidates]
        humans = human_majorities_for(request.user, pks)
        references = reference_states_for(request.user, pks)
        flags = candidate_flags(pks)
        context = {
            "confirmation": confirmation,
            "form": form,
            "humans_visible": humans is not None,
            "references": references,
            "rows": [
                {
                    "id": c.external_id,
                    "human": (humans or {}).get(c.pk),
                    "reference": (references or {}).get(c.pk),
                    "flags": flags.get(c.pk, []),
                }
                for c in plan.candidates
            ],
            "ids": [c.external_id for c in plan.candidates],
            "chosen": plan.candidates,
            "flagged": plan.flagged,
            "synthetic": set(plan.synthetic),
        }
        return render(request, "candidates/review_bulk_confirm.html", context)


def _bulk_summary(verdict: str, reason: str, count: int, *, question: bool = False, short: bool = False) -> str:
    """ "Reject 12 candidates as “…”?" before, "Rejected 12 candidates as “…”." after."""
    noun = f"{count} candidate{'s' if count != 1 else ''}"
    approve = verdict == Verdict.APPROVE
    if short:
        return f"{'Approve' if approve else 'Reject'} {noun}"
    label = DecisionReason(reason).label
    if question:
        return f"{'Approve' if approve else 'Reject'} {noun} as “{label}”?"
    return f"{'Approved' if approve else 'Rejected'} {noun} as “{label}”."


class ReviewView(QueryPageMixin, CandidateDetailView):
    """One candidate of the queue with everything known about it, and the decision form. Its
    neighbours are those of the queue as the curator sorted and filtered it."""

    permission_required = "candidates.curate"
    template_name = "candidates/review.html"
    query_serializer = ReviewQueueQuery

    def _candidate(self) -> Candidate:
        try:
            return selectors.candidate_at_rank(self.kwargs["rank"])
        except Candidate.DoesNotExist:
            raise Http404("No candidate has this rank.") from None

    def get_context_data(self, form: DecisionForm | None = None, **kwargs: Any) -> dict[str, Any]:
        candidate = self._candidate()
        queue = selectors.review_queue(self.query["k"])
        listing = review_queue_listing(self.query, queue)
        querystring = query_string(self.query)
        rank: int = self.kwargs["rank"]  # the candidate's own rank: it was read by it
        neighbours = {step: listing.neighbour(rank, step) for step in (-1, 1)}
        next_undecided = listing.next_undecided(rank)
        form = form or DecisionForm(initial={"candidate": candidate.external_id, "revision": candidate.revision})
        kwargs["external_id"] = candidate.external_id
        return super().get_context_data(
            queue=queue,
            strip=queue_strip(queue, _review_urls(querystring), current=rank),
            review_query=querystring,
            form=form,
            in_queue=queue.contains(rank),
            previous_url=_review_url(neighbours[-1], querystring) if neighbours[-1] else "",
            next_url=_review_url(neighbours[1], querystring) if neighbours[1] else "",
            next_undecided_url=_review_url(next_undecided, querystring) if next_undecided else "",
            queue_url=_queue_url(querystring),
            **kwargs,
        )

    def post(self, request: HttpRequest, rank: int) -> HttpResponse:
        candidate = self._candidate()
        # "Next" is read before deciding: under ?decision=undecided this candidate then leaves the list.
        following = review_queue_listing(self.query).neighbour(rank, 1)
        form = DecisionForm(request.POST)
        decision = decision_from_form(form, candidate, signed_in_user(request))
        if decision is None:
            return self.render_to_response(self.get_context_data(form=form, rank=rank), status=400)
        messages.success(request, decided_message(decision, candidate, f" (rank {rank})"))
        querystring = query_string(self.query)
        return redirect(_review_url(following, querystring) if following else _queue_url(querystring))


class ReviseView(RoleRequiredMixin, View):
    permission_required = "candidates.curate"
    template_name = "candidates/review_revise.html"

    def _candidate(self, external_id: str) -> Candidate:
        try:
            return Candidate.objects.select_related("source_task").get(external_id=external_id)
        except Candidate.DoesNotExist:
            raise Http404("No candidate with this id.") from None

    def _render(
        self, request: HttpRequest, candidate: Candidate, form: RevisionForm, status: int = 200
    ) -> HttpResponse:
        context = {"candidate": candidate, "form": form, "history": selectors.revision_history(candidate.pk)}
        return render(request, self.template_name, context, status=status)

    def get(self, request: HttpRequest, external_id: str) -> HttpResponse:
        candidate = self._candidate(external_id)
        form = RevisionForm(
            initial={
                "base_revision": candidate.revision,
                "instruction": candidate.instruction,
                "harm_test": candidate.harm_test,
            }
        )
        return self._render(request, candidate, form)

    def post(self, request: HttpRequest, external_id: str) -> HttpResponse:
        candidate = self._candidate(external_id)
        form = RevisionForm(request.POST)
        if form.is_valid():
            try:
                revision = revisions.candidate_revise(
                    candidate_id=candidate.pk,
                    user=signed_in_user(request),
                    instruction=form.cleaned_data["instruction"],
                    harm_test=form.cleaned_data["harm_test"],
                    reason=form.cleaned_data["reason"],
                    base_revision=form.cleaned_data["base_revision"],
                )
            except revisions.RevisionRefused as refused:
                form.add_error(field_of(form, refused.field), refused.message)
            else:
                messages.success(request, f"Saved revision {revision.number} of {candidate.external_id}.")
                return redirect("candidates:detail", candidate.external_id)
        return self._render(request, candidate, form, status=400)


# --- Reports -------------------------------------------------------------------------------------


def _percent(value: float) -> str:
    return f"{value * 100:.0f}%"


def search_chart(report: SearchReport) -> Chart:
    """Stacked bars per proposer and target agent: the Iter-k shares, adding up to the success rate."""
    specs = []
    for block in report.blocks:
        proposer = block.proposer or "All proposers"
        for index, row in enumerate((*block.rows, block.overall)):
            specs.append(
                BarSpec(
                    label=f"{proposer} · {row.target_agent or 'overall'}",
                    values=row.iteration_shares,
                    value_label=f"{row.success_rate * 100:.1f}%" if row.success_rate is not None else "–",
                    emphasis=row.is_overall,
                    group_start=index == 0,
                )
            )
    return stacked_bars(
        specs,
        series=[f"Iter-{k}" for k in report.iterations],
        maximum=1.0,
        tick_label=_percent,
        value_title=lambda bar, series, value: f"{bar}: {series} {value * 100:.1f}% of searches",
    )


def funnel_chart(stages: list[FunnelStage]) -> Chart:
    first = stages[0].count if stages else 0
    specs = [BarSpec(label=s.label, values=(float(s.count),), value_label=f"{s.count:,}") for s in stages]
    return stacked_bars(
        specs,
        series=["count"],
        maximum=nice_ceiling(first),
        tick_label=count_label,
        value_title=lambda bar, series, value: f"{bar}: {value:,.0f}",
    )


class SearchReportView(RoleRequiredMixin, QueryPageMixin, TemplateView):
    permission_required = "candidates.view_ranking"
    query_serializer = GroupSizeQuery
    template_name = "candidates/search_report.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        report = search_report(search_rows())
        stages = search_funnel(self.query["k"])
        return super().get_context_data(
            report=report,
            chart=search_chart(report) if report.searches else None,
            stages=stages,
            funnel_chart=funnel_chart(stages),
            ALL=ALL,
            demo_candidates=demo_candidate_count(),
            **kwargs,
        )


class DescriptiveView(RoleRequiredMixin, TemplateView):
    permission_required = "candidates.view_ranking"
    template_name = "candidates/descriptive.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        table = breakdown(descriptive_cells(), Perturbation.values)
        labels = dict(Perturbation.choices)
        specs = [
            BarSpec(
                label=row.label,
                values=tuple(float(c.candidates) for c in row.by_perturbation),
                value_label=str(row.total.candidates),
            )
            for row in table.rows
        ]
        chart = None
        if table.totals.total.candidates:
            chart = stacked_bars(
                specs,
                series=[labels.get(p, p) for p in table.perturbations],
                maximum=nice_ceiling(max(row.total.candidates for row in table.rows)),
                tick_label=count_label,
                value_title=lambda bar, series, value: f"{bar}, {series}: {value:,.0f} candidates",
                palette="cat",
            )
        return super().get_context_data(
            table=table,
            perturbation_labels=[labels.get(p, p) for p in table.perturbations],
            column_count=1 + 3 * (len(table.perturbations) + 1),
            chart=chart,
            **kwargs,
        )
