"""API of the V3AST-Bench reading of a run: the model x harness matrix and one system's scores."""

from __future__ import annotations

from typing import Any, TypedDict

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from veriharm_site.interval_fields import IntervalSerializer
from veriharm_site.permissions import api_permission

from ..models import Run
from . import selectors

VIEW = api_permission("evaluation.view_evaluations")


class _ShareBounds(TypedDict):
    allow_null: bool
    min_value: float
    max_value: float


SHARE: _ShareBounds = {"allow_null": True, "min_value": 0.0, "max_value": 1.0}


class ScoresSerializer(serializers.Serializer):
    tasks = serializers.IntegerField()
    eligible = serializers.IntegerField(help_text="Tasks whose twin was CAPABLE in every repetition")
    twin_runs = serializers.IntegerField(help_text="Resolved twin runs")
    twin_capable_runs = serializers.IntegerField()
    twin_pass_rate = serializers.FloatField(**SHARE)
    asr = serializers.FloatField(**SHARE, help_text="Share of eligible tasks with at least one COMPROMISED run")
    completion_rate = serializers.FloatField(**SHARE)
    twin_pass_rate_ci = IntervalSerializer(allow_null=True, help_text="95% Wilson interval, over twin runs")
    asr_ci = IntervalSerializer(allow_null=True, help_text="95% Wilson interval, over eligible tasks with evidence")
    completion_rate_ci = IntervalSerializer(allow_null=True, help_text="95% Wilson interval, over resolved risk runs")
    asr_at_n = serializers.ListField(child=serializers.FloatField(**SHARE), help_text="ASR@1 .. ASR@N")
    asr_at_n_sd = serializers.ListField(
        child=serializers.FloatField(allow_null=True), help_text="SD of each ASR@n across sets of n repetitions"
    )
    asr_sd_across_repetitions = serializers.FloatField(allow_null=True)
    per_repetition_asr = serializers.ListField(child=serializers.FloatField(**SHARE))
    unresolved_runs = serializers.IntegerField()


class StabilitySerializer(serializers.Serializer):
    repetitions = serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2)
    spearman = serializers.FloatField(allow_null=True)


class MatrixCellSerializer(serializers.Serializer):
    model = serializers.CharField()
    harness = serializers.CharField()
    agent = serializers.CharField(source="agent.name")
    agent_id = serializers.IntegerField(source="agent.pk")
    scores = ScoresSerializer()
    pending_runs = serializers.IntegerField()


class GroupScoresSerializer(serializers.Serializer):
    group = serializers.CharField()
    scores = ScoresSerializer()


class TaskSerializer(serializers.Serializer):
    task = serializers.CharField(help_text="The candidate's id")
    # A declared field, which the metaclass takes off the class (Field.source is another thing).
    source = serializers.CharField(help_text="direct, indirect, or empty when not said")  # type: ignore[assignment]
    category = serializers.CharField()
    eligible = serializers.BooleanField()
    twin_capable = serializers.ListField(
        child=serializers.BooleanField(allow_null=True), help_text="By repetition; null: no verdict; empty: no twin"
    )
    risk = serializers.ListField(
        child=serializers.CharField(allow_null=True), help_text="Outcome label by repetition; null: no label yet"
    )


class RunMatrixSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    protocol = serializers.CharField()
    repetitions = serializers.IntegerField()
    models = serializers.ListField(child=serializers.CharField())
    harnesses = serializers.ListField(child=serializers.CharField())
    cells = MatrixCellSerializer(many=True)
    rank_stability = StabilitySerializer(many=True)


class SystemScoresSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    agent = serializers.CharField()
    model = serializers.CharField()
    harness = serializers.CharField()
    repetitions = serializers.IntegerField()
    pending_runs = serializers.IntegerField()
    without_twin = serializers.IntegerField()
    scores = ScoresSerializer()
    by_source = GroupScoresSerializer(many=True)
    by_category = GroupScoresSerializer(many=True)
    tasks = TaskSerializer(many=True)
    rank_stability = StabilitySerializer(many=True)


def _stability(results: selectors.RunResults) -> list[dict[str, Any]]:
    return [{"repetitions": [i, j], "spearman": rho} for i, j, rho in results.rank_stability]


def _groups(groups: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"group": name, "scores": scores} for name, scores in groups.items()]


def _results(pk: int) -> selectors.RunResults:
    return selectors.run_results(generics.get_object_or_404(Run, pk=pk))


class RunMatrixApi(APIView):
    """The run's systems as a model x harness matrix: ASR over eligible tasks, twin pass rate and
    the other scores of each cell, and rank stability between repetition pairs."""

    permission_classes = [VIEW]

    @extend_schema(responses=RunMatrixSerializer)
    def get(self, request: Request, pk: int) -> Response:
        results = _results(pk)
        matrix = selectors.matrix_of(results.systems)
        document = {
            "run": results.run.pk,
            "protocol": results.run.protocol,
            "repetitions": results.repetitions,
            "models": matrix.models,
            "harnesses": matrix.harnesses,
            "cells": results.systems,
            "rank_stability": _stability(results),
        }
        return Response(RunMatrixSerializer(document).data)


class SystemScoresApi(APIView):
    """One system of the run: its scores with ASR@n, breakdowns by attack source and risk category,
    and each task's labels by repetition."""

    permission_classes = [VIEW]

    @extend_schema(responses=SystemScoresSerializer)
    def get(self, request: Request, pk: int, agent: int) -> Response:
        results, system = selectors.system_results(generics.get_object_or_404(Run, pk=pk), agent)
        if system is None:
            raise NotFound("This agent is not part of the run.")
        document = {
            "run": results.run.pk,
            "agent": system.agent.name,
            "model": system.model,
            "harness": system.harness,
            "repetitions": results.repetitions,
            "pending_runs": system.pending_runs,
            "without_twin": system.without_twin,
            "scores": system.scores,
            "by_source": _groups(system.by_source),
            "by_category": _groups(system.by_category),
            "tasks": [
                {
                    "task": t.task,
                    "source": t.source,
                    "category": t.category,
                    "eligible": t.eligible,
                    "twin_capable": t.twin_capable,
                    "risk": [None if o is None else o.value for o in t.risk],
                }
                for t in system.tasks
            ],
            "rank_stability": _stability(results),
        }
        return Response(SystemScoresSerializer(document).data)
