"""The workers page (admins): the fleet as its heartbeats tell it."""

from __future__ import annotations

from typing import Any

from django.views.generic import TemplateView

from veriharm_site.permissions import RoleRequiredMixin

from . import selectors


class WorkerListView(RoleRequiredMixin, TemplateView):
    permission_required = "evaluation.run_evaluations"
    template_name = "evaluation/workers.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return super().get_context_data(fleet=selectors.fleet(), **kwargs)
