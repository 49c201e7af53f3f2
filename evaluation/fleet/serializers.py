"""What the workers API answers: each worker's last heartbeat, live, silent or stopped."""

from __future__ import annotations

from rest_framework import serializers


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
