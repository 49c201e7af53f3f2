"""The page that imports another harness's log as a run."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views import View

from veriharm_site.permissions import RoleRequiredMixin, signed_in_user

from .forms import RunImportForm
from .readers import read_upload
from .records import LogRefused
from .services import run_import


class RunImportView(RoleRequiredMixin, View):
    permission_required = "evaluation.run_evaluations"
    template_name = "evaluation/run_import.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        return render(request, self.template_name, {"form": RunImportForm()})

    def post(self, request: HttpRequest) -> HttpResponse:
        form = RunImportForm(request.POST, request.FILES)
        errors: list[str] = []
        if form.is_valid():
            data = form.cleaned_data
            try:
                imported = read_upload(data["harness"], data["log"].name, data["log"].read())
                run = run_import(data["release"].pk, imported, user=signed_in_user(request), name=data["name"])
            except LogRefused as refused:
                errors = refused.messages
            else:
                return redirect("evaluation:run", run.pk)
        context = {"form": form, "errors": errors}
        return render(request, self.template_name, context, status=400)
