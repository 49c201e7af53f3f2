"""Asking for the host's network is refused where it is asked (launch, the admin, the database, the
worker), never quietly granted or dropped; an agent's network mode is the one its configuration needs."""

from __future__ import annotations

import json

import pytest
from django.db import IntegrityError, transaction
from django.test import Client

from evaluation.models import Agent, AgentKind, Run
from evaluation.runs.agents import agent_create
from evaluation.runs.launch import run_launch
from evaluation.runs.refusals import LaunchRefused
from tests.factories import CandidateLineFactory, jsonl
from tests.importing import candidate_import_streams

GATEWAY = {"api": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "VERIHARM_AGENT_KEY_NM"}
HARNESS = {"harness": "mini-swe-agent", "model": "gpt-x", "gateway": GATEWAY}


@pytest.mark.django_db
def test_a_run_on_a_task_asking_for_network_is_refused_naming_it(admin_client_):
    networked = CandidateLineFactory()
    networked["source_task"]["environment"] = {"workdir": "/app", "network": True}
    plain = CandidateLineFactory()
    candidate_import_streams([("n.jsonl", jsonl(networked, plain).splitlines())])
    agent = agent_create(name="cat", kind=AgentKind.COMMAND, config={"command": "cat {task_file}"})
    answer = admin_client_.post(
        "/api/evaluation/runs/",
        {
            "selection": {"kind": "ids", "ids": [networked["id"], plain["id"]]},
            "agents": ["cat"],
            "backend": "local",
        },
        format="json",
    )
    errors = " ".join(error["message"] for error in answer.json()["errors"])
    assert answer.status_code == 400 and f"environment.network is true for {networked['id']}" in errors, errors
    assert plain["id"] not in errors and "never share the host's network" in errors
    assert not Run.objects.exists()
    # Without it the same launch goes through.
    assert (
        run_launch(
            selection={"kind": "ids", "ids": [plain["id"]]}, agent_ids=[agent.pk], backend="local"
        ).trials.count()
        == 1
    )


@pytest.mark.django_db
def test_agents_get_the_network_mode_their_configuration_needs():
    assert agent_create(name="h", kind=AgentKind.HARNESS, config=HARNESS).network == "model"
    assert (
        agent_create(name="c", kind=AgentKind.COMMAND, config={"command": "x {task_file}", "gateway": GATEWAY}).network
        == "model"
    )
    assert agent_create(name="p", kind=AgentKind.COMMAND, config={"command": "x {task_file}"}).network == "none"
    for name, kind, config, network, message in [
        ("host", AgentKind.COMMAND, {"command": "x {task_file}"}, True, "asks for the host's network"),
        ("wrong", AgentKind.COMMAND, {"command": "x {task_file}"}, "model", "network must be 'none'"),
        ("h2", AgentKind.HARNESS, {**HARNESS, "harness": "nope"}, None, "harness must be one of claude-code, codex, "),
    ]:
        with pytest.raises(LaunchRefused, match=message):
            agent_create(name=name, kind=kind, config=config, network=network)
    # The kinds' part of the rule holds in the database itself.
    for kind, network in [
        (AgentKind.HARNESS, "none"),
        (AgentKind.OPENAI_COMPATIBLE, "model"),
        (AgentKind.COMMAND, "host"),
    ]:
        with pytest.raises(IntegrityError), transaction.atomic():
            Agent.objects.create(name=f"raw-{kind}-{network}", kind=kind, config={}, network=network)


@pytest.mark.django_db
def test_the_admin_form_checks_a_harness_and_its_network_mode(admin_user):
    browser = Client()
    browser.force_login(admin_user)
    form = {
        "name": "mini",
        "kind": "harness",
        "model": "gpt-x",
        "harness": "mini-swe-agent",
        "time_limit": 600,
        "active": "on",
        "config": json.dumps(HARNESS),
    }
    answer = browser.post("/admin/evaluation/agent/add/", {**form, "network": "none"})
    assert answer.status_code == 200 and "network must be &#x27;model&#x27; for this agent" in answer.content.decode()
    answer = browser.post(
        "/admin/evaluation/agent/add/", {**form, "network": "model", "config": json.dumps({**HARNESS, "step_limit": 0})}
    )
    assert (
        answer.status_code == 200 and "step_limit must be a whole number between 1 and 500" in answer.content.decode()
    )
    assert not Agent.objects.filter(name="mini").exists()
    answer = browser.post("/admin/evaluation/agent/add/", {**form, "network": "model"})
    assert answer.status_code == 302
    assert Agent.objects.get(name="mini").network == "model"
