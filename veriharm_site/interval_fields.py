"""The API's shape of a 95% interval (`veriharm_site.intervals.Interval`): one schema component
for every app that reports one."""

from __future__ import annotations

from rest_framework import serializers


class IntervalSerializer(serializers.Serializer):
    low = serializers.FloatField(min_value=0.0, max_value=1.0)
    high = serializers.FloatField(min_value=0.0, max_value=1.0)
