"""Pages of studies and their results, for curators and viewers: the list, creating a study, its
design and members, guidelines and gold items, item reviews and adjudication, annotator quality,
results (agreement, Figure 3, the judges beside the annotators), disagreements and exports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseForbidden, JsonResponse
from django.shortcuts import redirect, render
from django.views import View
from django.views.generic import TemplateView

from candidates.diffs import highlight
from veriharm_site.permissions import RoleRequiredMixin, signed_in_user
from veriharm_site.queries import QueryPageMixin, query_string

from ..labelling import line_diff
from ..labelling.criteria import MEASURES
from ..models import DrawnFrom, Study
from . import exports, figures, services
from .forms import AdjudicationForm, AnswersForm, GuidelinesForm, MembersForm, StudyForm
from .item_table import ITEM_SORTS, MAJORITIES, item_table
from .measures import judges
from .queries import ExportQuery, ItemsQuery, StudyDrawQuery
from .selectors import quality
from .selectors import results as tables

MANAGE = "annotation.manage_studies"
READ_RESULTS = "annotation.view_results"


def _curator_study(pk: int) -> Study:
    try:
        return tables.study_for_curators(pk)
    except Study.DoesNotExist:
        raise Http404("No such study.") from None


class StudyListView(RoleRequiredMixin, TemplateView):
    permission_required = READ_RESULTS
    template_name = "annotation/studies.html"

    def get_context_data(self, **kwargs):
        return super().get_context_data(studies=tables.study_summaries(), **kwargs)


class StudyCreateView(RoleRequiredMixin, QueryPageMixin, View):
    """The new-study form; opened from the ranking, it carries that page's filter or ticked rows."""

    permission_required = MANAGE
    template_name = "annotation/study_form.html"
    query_serializer = StudyDrawQuery

    def get(self, request: HttpRequest) -> HttpResponse:
        query = self.query
        initial: dict[str, str] = {}
        if query["drawn_from"]:
            initial["drawn_from"] = query["drawn_from"]
        if query["drawn_from"] == DrawnFrom.FILTER:
            initial["ranking_filter"] = query_string({**query, "drawn_from": "", "candidates": "", "sort": ""})
        if query["candidates"]:
            initial["candidates"] = "\n".join(query["candidates"])
        return render(request, self.template_name, {"form": StudyForm(initial=initial)})

    def post(self, request: HttpRequest) -> HttpResponse:
        form = StudyForm(request.POST)
        if form.is_valid():
            try:
                study = services.study_create(
                    form.spec(), annotators=list(form.cleaned_data["annotators"]), created_by=signed_in_user(request)
                )
            except services.StudyRefused as refused:
                for name, message in refused.errors.items():
                    # The service names the filter's parameters filter.<name>; the form holds them in one field.
                    field_name = "ranking_filter" if name.split(".")[0] == "filter" else name
                    shown = f"{name.removeprefix('filter.')}: {message}" if name.startswith("filter.") else message
                    form.add_error(field_name if field_name in form.fields else None, shown)
            else:
                messages.success(request, f"Created study {study.name!r} with {study.items.count()} items.")
                return redirect("annotation:study", study.pk)
        return render(request, self.template_name, {"form": form}, status=400)


class StudyDetailView(RoleRequiredMixin, TemplateView):
    """The study's design and progress; its forms (close, members, guidelines) only for managers."""

    permission_required = READ_RESULTS
    template_name = "annotation/study_detail.html"

    def get_context_data(self, **kwargs):
        study = _curator_study(kwargs["pk"])
        members = tables.member_rows(study, usernames=self.request.user.has_perm(MANAGE))
        results = tables.study_results(study)
        return super().get_context_data(
            study=study,
            strata=tables.strata_rows(study),
            members=members,
            results=results,
            members_form=MembersForm(exclude_ids=list(study.memberships.values_list("user_id", flat=True))),
            guidelines_form=GuidelinesForm(initial={"guidelines": study.guidelines, "gold_rate": study.gold_rate}),
            **kwargs,
        )


class StudyGuidelinesView(RoleRequiredMixin, View):
    permission_required = MANAGE

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        study = _curator_study(pk)
        form = GuidelinesForm(request.POST)
        if not form.is_valid():
            messages.error(
                request,
                "Guidelines not saved: "
                # An ErrorList yields its messages as str (the stubs say ValidationError | str).
                + "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items()),  # type: ignore[arg-type]
            )
            return redirect("annotation:study", pk)
        try:
            services.study_guidelines_set(
                study, guidelines=form.cleaned_data["guidelines"], gold_rate=form.cleaned_data["gold_rate"]
            )
        except services.StudyRefused as refused:
            messages.error(request, str(refused))
        else:
            messages.success(request, "Saved the guidelines and the gold share.")
        return redirect("annotation:study", pk)


class AnnotatorQualityView(RoleRequiredMixin, TemplateView):
    permission_required = READ_RESULTS
    template_name = "annotation/annotators.html"

    def get_context_data(self, **kwargs):
        study = _curator_study(kwargs["pk"])
        return super().get_context_data(
            study=study, quality=quality.annotator_quality(study), fast_seconds=quality.FAST_SECONDS, **kwargs
        )


class ItemReviewView(RoleRequiredMixin, View):
    """For curators: one item's labels and flags, its gold answers and its adjudication."""

    permission_required = READ_RESULTS
    template_name = "annotation/item_review.html"

    def get_permission_required(self) -> Sequence[str]:
        # Reading the item is reading results; setting gold answers or a final label is managing.
        return (MANAGE,) if self.request.method == "POST" else (READ_RESULTS,)

    def _row(self, study: Study, number: int) -> tables.ItemRow:
        row = tables.curator_item_row(study, number)
        if row is None:
            raise Http404(f"Study {study.pk} has no item {number}.")
        return row

    def _render(
        self,
        request: HttpRequest,
        study: Study,
        row: tables.ItemRow,
        *,
        gold_form: AnswersForm | None = None,
        adjudication_form: AdjudicationForm | None = None,
        status: int = 200,
    ) -> HttpResponse:
        def initial(answers: tables.Answers | None) -> dict[str, str]:
            return {key: "yes" if answers.value(key) else "no" for key in ("c1", "c2", "c3")} if answers else {}

        material = tables.item_material(row)
        return render(
            request,
            self.template_name,
            {
                "study": study,
                "row": row,
                "measures": MEASURES,
                "material": material,
                "aligned": line_diff.aligned_diff(material.source_instruction, material.instruction),
                "harm_test_html": highlight.python_html(material.harm_test),
                # Judge scores are the curators' (who adjudicate); viewers read the item without them.
                "judgements": tables.item_judgements(row) if request.user.has_perm(MANAGE) else None,
                "gold_form": gold_form or AnswersForm(initial=initial(row.gold), prefix="gold"),
                "adjudication_form": adjudication_form
                or AdjudicationForm(
                    initial=initial(row.adjudication.answers if row.adjudication else None)
                    | ({"reason": row.adjudication.reason} if row.adjudication else {}),
                    prefix="adj",
                ),
            },
            status=status,
        )

    def get(self, request: HttpRequest, pk: int, number: int) -> HttpResponse:
        study = _curator_study(pk)
        return self._render(request, study, self._row(study, number))

    def post(self, request: HttpRequest, pk: int, number: int) -> HttpResponse:
        study = _curator_study(pk)
        row = self._row(study, number)
        item = study.items.get(pk=row.item_pk)
        action = request.POST.get("action")
        if action == "gold-clear":
            services.item_gold_set(item, None)
            messages.success(request, f"Item {number} is no longer a gold item.")
        elif action == "gold":
            form = AnswersForm(request.POST, prefix="gold")
            if not form.is_valid():
                return self._render(request, study, row, gold_form=form, status=400)
            services.item_gold_set(item, form.answers())
            messages.success(request, f"Item {number} is a gold item now.")
        elif action == "adjudicate":
            adj_form = AdjudicationForm(request.POST, prefix="adj")
            if not adj_form.is_valid():
                return self._render(request, study, row, adjudication_form=adj_form, status=400)
            try:
                services.item_adjudicate(
                    item, adj_form.answers(), reason=adj_form.cleaned_data["reason"], by=signed_in_user(request)
                )
            except services.StudyRefused as refused:
                for name, message in refused.errors.items():
                    adj_form.add_error(name if name in adj_form.fields else None, message)
                return self._render(request, study, row, adjudication_form=adj_form, status=400)
            messages.success(request, f"Set the final label of item {number}.")
        else:
            return HttpResponse(
                "action must be one of gold, gold-clear, adjudicate", status=400, content_type="text/plain"
            )
        return redirect("annotation:item-review", pk, number)


class StudyStatusView(RoleRequiredMixin, View):
    permission_required = MANAGE
    action = "close"

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        study = _curator_study(pk)
        if self.action == "close":
            services.study_close(study)
            messages.success(request, f"Closed {study.name!r}: labels can no longer be added or revised.")
        else:
            services.study_reopen(study)
            messages.success(request, f"Reopened {study.name!r}.")
        return redirect("annotation:study", pk)


class MembersAddView(RoleRequiredMixin, View):
    permission_required = MANAGE

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        study = _curator_study(pk)
        form = MembersForm(request.POST, exclude_ids=list(study.memberships.values_list("user_id", flat=True)))
        if not form.is_valid():
            # An ErrorList yields its messages as str (the stubs say ValidationError | str).
            messages.error(request, "Choose the annotators to add: " + "; ".join(form.errors.get("annotators", [])))  # type: ignore[arg-type]
            return redirect("annotation:study", pk)
        try:
            added = services.study_members_add(study, list(form.cleaned_data["annotators"]))
        except services.StudyRefused as refused:
            messages.error(request, str(refused))
        else:
            messages.success(request, f"Added {len(added)} annotator{'s' if len(added) != 1 else ''}.")
        return redirect("annotation:study", pk)


class ResultsView(RoleRequiredMixin, QueryPageMixin, TemplateView):
    """Per-item labels and majorities beside the harm tests' verdicts (`?disagree=1`: only where
    they disagree, as in the items API), agreement, Figure 3 and the judges beside the annotators.
    The item table is sorted, filtered and searched as the items API is; the figures always cover
    every item."""

    permission_required = READ_RESULTS
    template_name = "annotation/results.html"
    query_serializer = ItemsQuery

    def get_context_data(self, **kwargs):
        study = _curator_study(kwargs["pk"])
        results = tables.study_results(study)
        p = results.prediction
        items = tables.items_beside_tests(
            results.rows, signed_in_user(self.request), disagree_only=self.query["disagree"]
        )
        shown = item_table(items.rows, self.query)
        return super().get_context_data(
            study=study,
            results=results,
            items=replace(items, rows=shown),
            query=self.query,
            querystring=query_string(self.query),
            item_sorts=ITEM_SORTS.items(),
            majorities=MAJORITIES,
            narrowed=len(shown) != items.total,
            measures=MEASURES,
            confusion_chart=figures.confusion_matrix(p),
            metrics_chart=figures.prediction_metrics(p),
            groups_chart=figures.validity_by_group(p),
            agreement_chart=figures.agreement(
                [(a.title, a.agreement.fleiss.value, a.agreement.alpha.value) for a in results.agreement]
            ),
            judges=tables.study_judges(results.rows),
            judge_rule=judges.RULE,
            judge_sum_split=judges.SUM_SPLIT,
            judge_kappa_interval=judges.NO_KAPPA_INTERVAL,
            quick=quality.quick_labels(study, results),
            fast_seconds=quality.FAST_SECONDS,
            # What a curator may approve at once from here: the items this study's humans judged valid.
            judged_valid=[row.candidate_external_id for row in results.rows if row.final("valid") is True],
            **kwargs,
        )


class DisagreementView(RoleRequiredMixin, TemplateView):
    permission_required = READ_RESULTS
    template_name = "annotation/disagreement.html"

    def get_context_data(self, **kwargs):
        study = _curator_study(kwargs["pk"])
        return super().get_context_data(study=study, rows=tables.disagreement_rows(study), measures=MEASURES, **kwargs)


EXPORTS = {"labels.csv", "items.csv", "study.json"}


class ExportView(RoleRequiredMixin, QueryPageMixin, View):
    permission_required = READ_RESULTS
    query_serializer = ExportQuery

    def get(self, request: HttpRequest, pk: int, name: str) -> HttpResponse:
        if name not in EXPORTS:
            raise Http404(f"No export {name!r}; there are {', '.join(sorted(EXPORTS))}.")
        study = _curator_study(pk)
        identities = self.query["identities"]
        if identities and not request.user.has_perm("annotation.export_identities"):
            return HttpResponseForbidden("Exporting annotators' identities needs annotation.export_identities.")
        filename = f"study-{study.pk}-{name}"
        if name == "study.json":
            response: HttpResponse = JsonResponse(
                exports.study_json(study, identities=identities), json_dumps_params={"indent": 1, "ensure_ascii": False}
            )
        else:
            rows = tables.study_item_rows(study)
            if name == "labels.csv":
                text = exports.csv_text(
                    exports.label_records(study, rows, identities=identities), exports.LABEL_COLUMNS
                )
            else:
                text = exports.csv_text(exports.item_records(study, rows), exports.ITEM_COLUMNS)
            response = HttpResponse(text, content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
