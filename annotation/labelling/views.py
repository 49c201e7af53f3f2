"""Pages of the annotator's blind labelling flow: their studies, the guidelines, one item at a time
(next, skip, return, label), the items they set aside and their own labels.

Built from `labelling.selectors` alone (no group, Q, judges or others' labels); `.importlinter`
forbids this package every module of `annotation.studies`.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views import View
from django.views.generic import TemplateView

from candidates.diffs import diffing, highlight
from veriharm_site.permissions import RoleRequiredMixin, signed_in_user
from veriharm_site.queries import QueryPageMixin

from ..models import Assignment, Study
from . import line_diff, services
from . import selectors as blind
from .criteria import CRITERIA
from .forms import LabelForm, PreferencesForm, SkipForm
from .queries import GuidelinesQuery, ItemPageQuery

ANNOTATE = "annotation.annotate"


class AnnotatorHomeView(RoleRequiredMixin, TemplateView):
    permission_required = ANNOTATE
    template_name = "annotation/home.html"

    def get_context_data(self, **kwargs):
        return super().get_context_data(studies=blind.annotator_studies(signed_in_user(self.request)), **kwargs)


def _annotator_study(request: HttpRequest, study_id: int) -> Study:
    try:
        return blind.annotator_study(study_id, signed_in_user(request))
    except Study.DoesNotExist:
        raise Http404("No such study among yours.") from None


def _go_to_next(request: HttpRequest, study_id: int, *, skipped: bool = False) -> HttpResponse:
    try:
        assignment = services.item_claim_next(study_id, signed_in_user(request), skipped=skipped)
    except services.NotAMember:
        raise Http404("No such study among yours.") from None
    except services.StudyClosed as closed:
        messages.info(request, str(closed))
        return redirect("annotation:labels", study_id)
    if assignment is None:
        return redirect("annotation:done", study_id)
    return redirect("annotation:item", study_id, assignment.item.token)


class ClaimNextView(RoleRequiredMixin, View):
    """POST: the annotator's open item or the next one in their order (claims are writes: never on GET)."""

    permission_required = ANNOTATE

    skipped = False

    def post(self, request: HttpRequest, study_id: int) -> HttpResponse:
        if blind.guidelines_due(study_id, signed_in_user(request)):
            # The study's guidelines come before the first item.
            return redirect("annotation:guidelines", study_id)
        return _go_to_next(request, study_id, skipped=self.skipped)


class GuidelinesView(RoleRequiredMixin, QueryPageMixin, View):
    """The study's guidelines and worked examples; POST records them read and goes on labelling."""

    permission_required = ANNOTATE
    query_serializer = GuidelinesQuery
    template_name = "annotation/guidelines.html"

    def get(self, request: HttpRequest, study_id: int) -> HttpResponse:
        study = _annotator_study(request, study_id)
        return render(
            request,
            self.template_name,
            {
                "study": study,
                "criteria": CRITERIA,
                "progress": blind.annotator_progress(study, signed_in_user(request)),
                "back": self.query["back"],
            },
        )

    def post(self, request: HttpRequest, study_id: int) -> HttpResponse:
        try:
            services.guidelines_read(study_id, signed_in_user(request))
        except services.NotAMember:
            raise Http404("No such study among yours.") from None
        except services.StudyClosed as closed:
            messages.info(request, str(closed))
            return redirect("annotation:labels", study_id)
        return _go_to_next(request, study_id)


class PreferencesView(RoleRequiredMixin, View):
    """POST (from the key list): turn the user's single-key shortcuts on or off; answers JSON."""

    permission_required = ANNOTATE

    def post(self, request: HttpRequest) -> HttpResponse:
        form = PreferencesForm(request.POST)
        if not form.is_valid():
            return JsonResponse(
                {"errors": [{"field": "single_key_shortcuts", "message": "must be 'on' or 'off'"}]}, status=400
            )
        saved = services.preferences_set(
            signed_in_user(request), single_key_shortcuts=form.cleaned_data["single_key_shortcuts"] == "on"
        )
        return JsonResponse({"single_key_shortcuts": saved.single_key_shortcuts})


class SkipView(RoleRequiredMixin, View):
    """POST: set the claimed item aside (optionally flagged as unclear, with a reason) and go on."""

    permission_required = ANNOTATE

    def post(self, request: HttpRequest, study_id: int, token: str) -> HttpResponse:
        form = SkipForm(request.POST)
        if not form.is_valid():
            messages.error(request, "The reason is too long.")
            return redirect("annotation:item", study_id, token)
        unclear = form.cleaned_data["unclear"]
        try:
            services.item_skip(
                study_id, token, signed_in_user(request), unclear=unclear, reason=form.cleaned_data["reason"]
            )
        except services.NotAMember:
            raise Http404("No such study among yours.") from None
        except services.NotYourItem:
            raise Http404("This item is not assigned to you.") from None
        except services.StudyClosed as closed:
            messages.error(request, str(closed))
            return redirect("annotation:labels", study_id)
        except services.AnnotationError as refused:
            messages.error(request, str(refused))
            return redirect("annotation:item", study_id, token)
        messages.success(
            request,
            "Flagged the item as unclear: it went to the curators with your reason and is out of your queue."
            if unclear
            else "Skipped the item: it waits among your skipped items.",
        )
        return _go_to_next(request, study_id)


class ItemView(RoleRequiredMixin, QueryPageMixin, View):
    permission_required = ANNOTATE
    template_name = "annotation/item.html"
    query_serializer = ItemPageQuery

    def _item(self, request: HttpRequest, study_id: int, token: str) -> blind.BlindItem:
        try:
            return blind.blind_item(study_id, token, signed_in_user(request))
        except Assignment.DoesNotExist:
            raise Http404("This item is not assigned to you.") from None

    def _render(self, request: HttpRequest, item: blind.BlindItem, form: LabelForm, status: int = 200) -> HttpResponse:
        progress = blind.annotator_progress(item.study, signed_in_user(request))
        own = item.own
        return render(
            request,
            self.template_name,
            {
                "item": item,
                "form": form,
                "criteria": [(c, form[c.key]) for c in CRITERIA],
                "progress": progress,
                "left_html": diffing.segments_html(item.diff.left),
                "right_html": diffing.segments_html(item.diff.right),
                "harm_test_html": highlight.python_html(item.harm_test),
                "setup_html": highlight.bash_html(item.environment["setup"]) if item.environment["setup"] else "",
                "claim_expired": not own.submitted and own.expires_at <= timezone.now(),
                "revising": own.submitted,
                "aligned": line_diff.aligned_diff(item.source_instruction, item.instruction),
                "neighbours": blind.own_label_neighbours(item.study, signed_in_user(request), item.number),
                "single_keys": blind.single_key_shortcuts_on(signed_in_user(request)),
            },
            status=status,
        )

    def get(self, request: HttpRequest, study_id: int, token: str) -> HttpResponse:
        item = self._item(request, study_id, token)
        initial = {"then": self.query["then"] or "next"}
        if item.own.submitted:
            initial |= {key: "yes" if value else "no" for key, value in item.answered.items()}
            initial["comment"] = item.own.comment
        return self._render(request, item, LabelForm(initial=initial))

    def post(self, request: HttpRequest, study_id: int, token: str) -> HttpResponse:
        item = self._item(request, study_id, token)
        form = LabelForm(request.POST)
        if not form.is_valid():
            return self._render(request, item, form, status=400)
        try:
            services.label_submit(study_id, token, signed_in_user(request), form.label())
        except (services.StudyClosed, services.ClaimLost) as refused:
            messages.error(request, str(refused))
            return redirect("annotation:labels", study_id)
        except services.AnnotationError as refused:
            form.add_error(None, str(refused))
            return self._render(request, item, form, status=400)
        messages.success(request, f"Saved your answers for item {item.number}.")
        if form.cleaned_data.get("then") == "labels":
            return redirect("annotation:labels", study_id)
        return _go_to_next(request, study_id)


class DoneView(RoleRequiredMixin, TemplateView):
    permission_required = ANNOTATE
    template_name = "annotation/done.html"

    def get_context_data(self, **kwargs):
        study = _annotator_study(self.request, kwargs["study_id"])
        return super().get_context_data(
            study=study, progress=blind.annotator_progress(study, signed_in_user(self.request)), **kwargs
        )


class SkippedView(RoleRequiredMixin, TemplateView):
    """The items the annotator set aside in a study, each with a way back to label it."""

    permission_required = ANNOTATE
    template_name = "annotation/skipped.html"

    def get_context_data(self, **kwargs):
        study = _annotator_study(self.request, kwargs["study_id"])
        user = signed_in_user(self.request)
        return super().get_context_data(
            study=study,
            skipped=blind.annotator_skipped(study, user),
            progress=blind.annotator_progress(study, user),
            **kwargs,
        )


class ReturnView(RoleRequiredMixin, View):
    """POST: claim one skipped item again and open it; a refusal goes back to the list, saying why."""

    permission_required = ANNOTATE

    def post(self, request: HttpRequest, study_id: int, token: str) -> HttpResponse:
        try:
            services.item_return(study_id, token, signed_in_user(request))
        except (services.NotAMember, services.NotYourItem):
            raise Http404("This item is not among the items you set aside.") from None
        except services.AnnotationError as refused:
            messages.error(request, str(refused))
            return redirect("annotation:skipped-list", study_id)
        return redirect("annotation:item", study_id, token)


class MyLabelsView(RoleRequiredMixin, TemplateView):
    permission_required = ANNOTATE
    template_name = "annotation/my_labels.html"

    def get_context_data(self, **kwargs):
        study = _annotator_study(self.request, kwargs["study_id"])
        return super().get_context_data(
            study=study,
            labels=blind.annotator_labels(study, signed_in_user(self.request)),
            progress=blind.annotator_progress(study, signed_in_user(self.request)),
            **kwargs,
        )
