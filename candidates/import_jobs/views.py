"""Pages of the import: the upload form, then the job's page (a progress bar while it runs, then its
counts or every bad line). Thin: the job is created and read through this package."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views import View
from django.views.generic import TemplateView

from veriharm_site.permissions import RoleRequiredMixin, signed_in_user

from ..models import ImportJob
from ..pool.selectors import import_job_get
from . import import_job_create
from .forms import ImportForm
from .selectors import import_job_state


class ImportView(RoleRequiredMixin, View):
    permission_required = "candidates.import_pipeline"
    template_name = "candidates/import.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        return render(request, self.template_name, {"form": ImportForm()})

    def post(self, request: HttpRequest) -> HttpResponse:
        form = ImportForm(request.POST, request.FILES)
        if not form.is_valid():
            return render(request, self.template_name, {"form": form}, status=400)
        job = import_job_create(
            user=signed_in_user(request), uploads=form.cleaned_data["files"], replace=form.cleaned_data["replace"]
        )
        return redirect("candidates:import-job", pk=job.pk)


class ImportJobView(RoleRequiredMixin, TemplateView):
    """An import job: a progress bar while it runs, then its counts or every bad line."""

    permission_required = "candidates.import_pipeline"
    template_name = "candidates/import_job.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        try:
            job = import_job_get(kwargs["pk"])
        except ImportJob.DoesNotExist:
            raise Http404("No import job with this id.") from None
        return super().get_context_data(state=import_job_state(job), job=job, **kwargs)
