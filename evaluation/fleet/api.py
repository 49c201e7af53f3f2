"""The workers page's API twin: every worker, live or silent, with what it holds (admins only)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from veriharm_site.permissions import api_permission

from . import selectors
from .serializers import FleetSerializer


def _worker(row: selectors.WorkerRow) -> dict[str, object]:
    return {**row.__dict__, "state": row.state}


class WorkerListApi(APIView):
    permission_classes = [api_permission("evaluation.run_evaluations")]

    @extend_schema(responses=FleetSerializer)
    def get(self, request: Request) -> Response:
        fleet = selectors.fleet()
        data = {
            "hosts": fleet.hosts,
            "silent_after": fleet.silent_after,
            "live": [_worker(r) for r in fleet.live],
            "silent": [_worker(r) for r in fleet.silent],
            "stopped": [_worker(r) for r in fleet.stopped],
        }
        return Response(FleetSerializer(data).data)
