"""Pages of releases: the list (and a new draft), a release with its items or a draft's preview, its
freeze, description and deletion, its downloads (JSONL, the runnable bundle) and a bundle's import.
Thin: they call the release services and selectors and show refusals on the form field they name.
The exports for other harnesses have their own pages in `candidates.releases.interop.views`."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views import View
from django.views.generic import TemplateView

from veriharm_site.confirmation import Confirmation, ConfirmStepMixin
from veriharm_site.permissions import RoleRequiredMixin, signed_in_user

from ..curation import selectors as curation_selectors
from ..curation.decision_forms import field_of
from ..hooks.flags import candidate_flags
from ..hooks.harm_test_verdicts import reference_states_for
from ..hooks.human_verdicts import human_majorities_for
from ..models import Release, ReleaseFrozen
from ..pool.synthetic import synthetic_ids
from . import selectors
from . import services as releases
from .bundle import BundleRefused, release_bundle
from .bundle_import import release_bundle_import
from .downloads import draft_message, gzip_download, jsonl_download, release_or_404
from .forms import BundleImportForm, ReleaseDescriptionForm, ReleaseForm, ReleaseFreezeForm
from .snapshots import approved_snapshot


def _release_list(request: HttpRequest, status: int = 200, **context: Any) -> HttpResponse:
    context.setdefault("form", ReleaseForm())
    context.setdefault("import_form", BundleImportForm())
    return render(
        request, "candidates/release_list.html", {"releases": selectors.release_list(), **context}, status=status
    )


class ReleaseListView(RoleRequiredMixin, View):
    """GET lists the releases (for readers); POST creates a draft (for curators)."""

    def get_permission_required(self) -> tuple[str, ...]:
        return ("candidates.curate",) if self.request.method == "POST" else ("candidates.view_ranking",)

    def get(self, request: HttpRequest) -> HttpResponse:
        return _release_list(request)

    def post(self, request: HttpRequest) -> HttpResponse:
        form = ReleaseForm(request.POST)
        if form.is_valid():
            try:
                release = releases.release_create(user=signed_in_user(request), **form.cleaned_data)
            except releases.ReleaseRefused as refused:
                form.add_error(field_of(form, refused.field), refused.message)
            else:
                messages.success(request, f"Draft release {release.label} created: check it, then freeze it.")
                return redirect("candidates:release", release.pk)
        return _release_list(request, status=400, form=form)


class ReleaseDetailView(RoleRequiredMixin, TemplateView):
    permission_required = "candidates.view_ranking"
    template_name = "candidates/release_detail.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        release = release_or_404(kwargs["pk"])
        context: dict[str, Any] = {"release": release}
        if release.is_frozen:
            context["items"] = list(selectors.release_items(release))
            context["changelog"] = selectors.release_changelog(release)
            context["checksum_ok"] = selectors.release_checksum_verify(release)
            shown = [(item.candidate.pk, item.external_id) for item in context["items"]]
        else:
            preview = selectors.release_preview(release)
            shown = [(s.candidate_id, s.external_id) for s in preview.snapshots]
            context["preview"] = preview
            context["changelog"] = preview.changelog
            context["description_form"] = kwargs.pop("description_form", None) or ReleaseDescriptionForm(
                initial={"description": release.description}
            )
        warned = curation_selectors.approvals_with_warning([pk for pk, _ in shown])
        context["approved_with_warning"] = [(ext, warned[pk]) for pk, ext in shown if pk in warned]
        if not release.is_frozen:
            # What freezing weighs, item by item: human majority, reference check, flags.
            pks = [pk for pk, _ in shown]
            humans = human_majorities_for(self.request.user, pks)
            references = reference_states_for(self.request.user, pks)
            flags = candidate_flags(pks)
            synthetic = synthetic_ids(pks)
            context["synthetic"] = [ext for pk, ext in shown if pk in synthetic]
            context["humans_visible"] = humans is not None
            context["references"] = references
            context["facts"] = {
                pk: {
                    "human": (humans or {}).get(pk),
                    "reference": (references or {}).get(pk),
                    "flags": flags.get(pk, []),
                    "synthetic": pk in synthetic,
                }
                for pk in pks
            }
            context["human_rejected"] = sum(1 for f in context["facts"].values() if f["human"] and f["human"].rejected)
        return super().get_context_data(**context, **kwargs)


class _ReleaseAction(RoleRequiredMixin, View):
    """POST-only actions on one release; a frozen release answers with the reason, unchanged."""

    permission_required = "candidates.curate"

    def act(self, request: HttpRequest, release: Release) -> HttpResponse:
        raise NotImplementedError

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        release = release_or_404(pk)
        try:
            return self.act(request, release)
        except ReleaseFrozen as frozen:
            messages.error(request, str(frozen))
        except releases.ReleaseRefused as refused:
            messages.error(request, refused.message)
        return redirect("candidates:release", pk)


class ReleaseFreezeView(ConfirmStepMixin, _ReleaseAction):
    def confirmation(self, request: HttpRequest, pk: int) -> Confirmation:
        release = release_or_404(pk)
        return Confirmation(
            title=f"Freeze {release.label}?",
            message="Freezing takes every approved candidate at its current revision. A frozen release can never "
            "change or be deleted; a later edit of a candidate makes a new revision the release does not see.",
            action=f"Freeze {release.label}",
            back_url=reverse("candidates:release", args=[release.pk]),
        )

    def _confirm(self, request: HttpRequest, pk: int, form: ReleaseFreezeForm, status: int = 200) -> HttpResponse:
        """The confirm step, with the approved candidates humans judged invalid or synthetic and the boxes
        to acknowledge them."""
        snapshots = approved_snapshot()
        context = {
            "confirmation": self.confirmation(request, pk),
            "form": form,
            "human_rejected": sorted(selectors.human_rejected_in(snapshots).items()),
            "synthetic": selectors.synthetic_in(snapshots),
        }
        return render(request, "candidates/release_freeze_confirm.html", context, status=status)

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return self._confirm(request, kwargs["pk"], ReleaseFreezeForm())

    def act(self, request: HttpRequest, release: Release) -> HttpResponse:
        form = ReleaseFreezeForm(request.POST)
        form.is_valid()  # one optional box: always valid
        try:
            frozen = releases.release_freeze(
                release.pk,
                user=signed_in_user(request),
                acknowledge_human_verdict=form.cleaned_data["acknowledge_human_verdict"],
                acknowledge_synthetic=form.cleaned_data["acknowledge_synthetic"],
            )
        except (releases.HumanRejectedInRelease, releases.SyntheticInRelease) as refused:
            form.add_error(field_of(form, refused.field), refused.message)
            return self._confirm(request, release.pk, form, status=400)
        count = frozen.items.count()
        messages.success(request, f"Froze {frozen.label} with {count} instance{'s' if count != 1 else ''}.")
        return redirect("candidates:release", release.pk)


class ReleaseDescriptionView(_ReleaseAction):
    def act(self, request: HttpRequest, release: Release) -> HttpResponse:
        form = ReleaseDescriptionForm(request.POST)
        if not form.is_valid():
            return HttpResponse(status=400)
        releases.release_update(release.pk, description=form.cleaned_data["description"])
        messages.success(request, "Description saved.")
        return redirect("candidates:release", release.pk)


class ReleaseDeleteView(ConfirmStepMixin, _ReleaseAction):
    def confirmation(self, request: HttpRequest, pk: int) -> Confirmation:
        release = release_or_404(pk)
        return Confirmation(
            title=f"Delete the draft {release.label}?",
            message="The draft, its description and its list of candidates are removed. The candidates themselves and "
            "their decisions stay.",
            action="Delete the draft",
            back_url=reverse("candidates:release", args=[release.pk]),
        )

    def act(self, request: HttpRequest, release: Release) -> HttpResponse:
        releases.release_delete(release.pk)
        messages.success(request, f"Deleted the draft {release.label}.")
        return redirect("candidates:releases")


def frozen_release_or_redirect(request: HttpRequest, pk: int) -> Release | HttpResponseRedirect:
    """The frozen release to download, or the way back to its page with the reason (a draft has no export)."""
    release = release_or_404(pk)
    if not release.is_frozen:
        messages.error(request, draft_message(release))
        return redirect("candidates:release", pk)
    return release


class ReleaseJsonlView(RoleRequiredMixin, View):
    permission_required = "candidates.view_ranking"

    def get(self, request: HttpRequest, pk: int) -> HttpResponseBase:
        release = frozen_release_or_redirect(request, pk)
        if not isinstance(release, Release):
            return release
        return jsonl_download(release)


class ReleaseBundleView(RoleRequiredMixin, View):
    permission_required = "candidates.view_ranking"

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        release = frozen_release_or_redirect(request, pk)
        if not isinstance(release, Release):
            return release
        return gzip_download(*release_bundle(release))


class BundleImportView(RoleRequiredMixin, View):
    permission_required = ("candidates.curate", "candidates.import_pipeline")

    def post(self, request: HttpRequest) -> HttpResponse:
        form = BundleImportForm(request.POST, request.FILES)
        errors: list[str] = []
        if form.is_valid():
            try:
                summary = release_bundle_import(
                    form.cleaned_data["bundle"],
                    user=signed_in_user(request),
                    acknowledge_human_verdict=form.cleaned_data["acknowledge_human_verdict"],
                )
            except BundleRefused as refused:
                errors = refused.messages
            except releases.HumanRejectedInRelease as refused:
                errors = [refused.message]
            else:
                messages.success(request, f"{form.cleaned_data['bundle'].name}: {summary}.")
                return redirect("candidates:release", summary.release.pk)
        return _release_list(request, status=400, import_form=form, import_errors=errors)
