"""API of the V3AST-Bench reading of a run: the model x harness matrix and one system's scores."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from veriharm_site.permissions import api_permission

from ..models import Run
from . import selectors
from .serializers import RunMatrixSerializer, SystemScoresSerializer

VIEW = api_permission("evaluation.view_evaluations")


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
