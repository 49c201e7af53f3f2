"""The workers page's API twin: every worker, live or silent, with what it holds (admins only)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from veriharm_site.permissions import api_permission

from . import selectors


class WorkerSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The Celery node name, worker@host")
    host = serializers.CharField()
    state = serializers.ChoiceField(choices=["live", "silent", "stopped"])
    queues = serializers.ListField(child=serializers.CharField())
    backends = serializers.ListField(child=serializers.CharField())
    concurrency = serializers.IntegerField()
    started_at = serializers.DateTimeField()
    beat_at = serializers.DateTimeField(help_text="Its last heartbeat")
    heartbeat_age = serializers.FloatField(help_text="Seconds since its last heartbeat")
    stopped_at = serializers.DateTimeField(allow_null=True)
    held = serializers.IntegerField(help_text="Trials running under its lease now")
    held_ids = serializers.ListField(child=serializers.IntegerField(), help_text="The first of them")


class FleetSerializer(serializers.Serializer):
    hosts = serializers.IntegerField(help_text="Hosts with a live worker")
    silent_after = serializers.FloatField(help_text="Seconds without a heartbeat before a worker counts as silent")
    live = WorkerSerializer(many=True)
    silent = WorkerSerializer(many=True)
    stopped = WorkerSerializer(many=True)


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
