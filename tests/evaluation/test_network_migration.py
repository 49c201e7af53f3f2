"""Migration 0007 turns the old boolean `Agent.network` (true: the host's network) into a mode, and
deactivates the agents that had asked for the host's network rather than quietly running them without."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("evaluation", "0006_model_gateway_calls_and_run_budget")]
AFTER = [("evaluation", "0007_harness_agents_network_modes")]
GATEWAY = {"api": "openai", "base_url": "http://127.0.0.1:9/v1"}


@pytest.mark.django_db(transaction=True)
def test_old_network_flags_become_modes_and_host_network_agents_are_deactivated():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps.get_model("evaluation", "Agent")
    rows = {
        "host-command": ("command", {"command": "x {task_file}"}, True),
        "host-gateway": ("command", {"command": "x {task_file}", "gateway": GATEWAY}, True),
        "quiet-gateway": ("command", {"command": "x {task_file}", "gateway": GATEWAY}, False),
        "loop": ("openai_compatible", {"base_url": "http://h/v1", "model": "m"}, False),
        "safe": ("reference", {"script": "safe"}, False),
    }
    for name, (kind, config, network) in rows.items():
        old.objects.create(name=name, kind=kind, config=config, network=network)
    try:
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        new = executor.loader.project_state(AFTER).apps.get_model("evaluation", "Agent")
        got = {a.name: (a.network, a.active) for a in new.objects.filter(name__in=rows)}
        assert got == {
            "host-command": ("none", False),  # asked for the host's network: an admin decides
            "host-gateway": ("model", True),
            "quiet-gateway": ("model", True),
            "loop": ("none", True),
            "safe": ("none", True),
        }
    finally:
        MigrationExecutor(connection).loader.build_graph()
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
