"""The generation pages: runs, launching one (admins), a run's progress and Table 1, a search step by
step. Reading needs the ranking's permission (annotators never see judges or scores); launching and
cancelling need the one to run evaluations."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views import View
from django.views.generic import TemplateView

from veriharm_site.confirmation import Confirmation, ConfirmStepMixin
from veriharm_site.permissions import RoleRequiredMixin, signed_in_user
from veriharm_site.queries import PageNumberQuery, QueryPageMixin
from veriharm_site.refusals import Refused

from . import search_page, selectors
from .forms import GenerationLaunchForm
from .launch import generation_cancel, generation_launch
from .queries import SearchPageQuery
from .synthetic import generation_scripted, generation_synthetic_text

READ = "candidates.view_ranking"
RUN = "evaluation.run_evaluations"
PAGE_SIZE = 50


class GenerationRunListView(RoleRequiredMixin, QueryPageMixin, TemplateView):
    permission_required = READ
    template_name = "evaluation/generation/runs.html"
    query_serializer = PageNumberQuery

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        page = Paginator(selectors.generation_runs(), PAGE_SIZE).get_page(self.query["page"])
        synthetic = {run.pk for run in page.object_list if generation_scripted(run)}
        return super().get_context_data(page=page, synthetic=synthetic, **kwargs)


class GenerationLaunchView(RoleRequiredMixin, View):
    permission_required = RUN
    template_name = "evaluation/generation/launch.html"

    def _form(self, data: Any = None) -> GenerationLaunchForm:
        initial = {"scripted_proposer": True, "scripted_judges": ["strict", "lenient"]}
        return GenerationLaunchForm(data, initial=initial, default_backend=settings.VERIHARM_SANDBOX_BACKEND)

    def get(self, request: HttpRequest) -> HttpResponse:
        return render(request, self.template_name, {"form": self._form()})

    def post(self, request: HttpRequest) -> HttpResponse:
        form = self._form(request.POST)
        if not form.is_valid():
            return render(request, self.template_name, {"form": form}, status=400)
        data = form.cleaned_data
        try:
            run = generation_launch(
                name=data["name"],
                selection=form.selection(),
                agent_ids=[a.pk for a in data["agents"]],
                proposers=form.proposer_configs(),
                judges=form.judge_configs(),
                budget=data.get("budget"),
                perturbations=data["perturbations"],
                budget_usd=data.get("budget_usd"),
                backend=data["backend"],
                reference_check=not data["skip_reference_check"],
                created_by=signed_in_user(request),
            )
        except Refused as refused:
            for field, message in refused.error_pairs():
                form.refused(field, message)
            return render(request, self.template_name, {"form": form}, status=refused.status_code)
        messages.success(request, f"Launched {run}: {run.searches.count()} search(es) queued.")
        return redirect("evaluation:generation-run", pk=run.pk)


def _page_or_404(pk: int) -> selectors.RunPage:
    page = selectors.generation_run_page(pk)
    if page is None:
        raise Http404("No generation run with this id.")
    return page


class GenerationRunView(RoleRequiredMixin, QueryPageMixin, TemplateView):
    permission_required = READ
    template_name = "evaluation/generation/run.html"
    query_serializer = PageNumberQuery

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        run_page = _page_or_404(kwargs["pk"])
        searches = Paginator(selectors.generation_run_searches(run_page.run.pk), PAGE_SIZE).get_page(self.query["page"])
        return super().get_context_data(
            run_page=run_page,
            page=searches,
            run=run_page.run,
            progress=run_page.progress,
            synthetic=generation_synthetic_text(run_page.run),
            **kwargs,
        )


class GenerationRunProgressView(RoleRequiredMixin, View):
    permission_required = READ

    def get(self, request: HttpRequest, pk: int) -> JsonResponse:
        progress = selectors.generation_run_progress(pk)
        if progress is None:
            raise Http404("No generation run with this id.")
        return JsonResponse(progress.as_json())


class GenerationRunCancelView(RoleRequiredMixin, ConfirmStepMixin, View):
    permission_required = RUN

    def confirmation(self, request: HttpRequest, pk: int) -> Confirmation:
        page = _page_or_404(pk)
        return Confirmation(
            title=f"Cancel {page.run}?",
            message="Its queued searches end now; running ones stop between two steps. Searches that ended keep "
            "their record and their kept candidates. A cancelled run cannot be resumed.",
            action="Cancel the run",
            back_url=reverse("evaluation:generation-run", args=[pk]),
            back_label="No, keep it running",
        )

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        _page_or_404(pk)
        try:
            run = generation_cancel(pk)
        except Refused as refused:
            messages.error(request, f"Not cancelled: {refused.message}")
        else:
            messages.success(request, f"Cancelled {run}: queued searches ended; running ones stop at their next step.")
        return redirect("evaluation:generation-run", pk=pk)


class GenerationSearchView(RoleRequiredMixin, QueryPageMixin, TemplateView):
    permission_required = READ
    template_name = "evaluation/generation/search.html"
    query_serializer = SearchPageQuery

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        try:
            page = search_page.generation_search_page(kwargs["pk"], self.query["iteration"])
        except search_page.NoSuchIteration:
            raise Http404(f"Search #{kwargs['pk']} has no proposal at iteration {self.query['iteration']}.") from None
        if page is None:
            raise Http404("No generation search with this id.")
        return super().get_context_data(
            page=page, search=page.search, run=page.run, synthetic=generation_synthetic_text(page.run), **kwargs
        )


class GenerationProposalTextView(RoleRequiredMixin, View):
    """One proposed task in full as plain text: what the search page links to when the task is too
    long to compare on the page."""

    permission_required = READ

    def get(self, request: HttpRequest, pk: int, number: int) -> HttpResponse:
        text = search_page.proposal_text(pk, number)
        if text is None:
            raise Http404(f"Search #{pk} has no proposal at iteration {number}.")
        response = HttpResponse(text, content_type="text/plain; charset=utf-8")
        response["Content-Disposition"] = f'inline; filename="search-{pk}-iteration-{number}.txt"'
        response["X-Content-Type-Options"] = "nosniff"
        return response
