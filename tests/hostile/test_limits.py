"""The reported hostile inputs, one by one: each gets a 4xx naming what is wrong and changes nothing;
the limits come from settings; CSV exports neutralise formula cells; the schema tells the truth."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client, override_settings
from rest_framework.test import APIClient

from annotation.labelling import services as labelling_services
from annotation.models import Study
from annotation.studies import services as study_services
from candidates.models import Candidate, SourceTask
from candidates.services import ImportRefused
from tests.factories import CandidateLineFactory
from tests.importing import candidate_import_streams
from veriharm_site.csv_safe import safe_cell

from .payloads import EXAMPLE, api_schema
from .seed import seed, table_counts

_CLIENTS: dict[int, APIClient] = {}


@pytest.fixture
def world(db):
    seeded = seed()
    _CLIENTS.clear()
    for user in seeded.users.values():  # signed in before any count is taken: a login adds a session row
        _client(user)
    return seeded


def _client(user=None) -> APIClient:
    if user is None:
        return APIClient(raise_request_exception=False)
    if user.pk not in _CLIENTS:
        client = APIClient(raise_request_exception=False)
        client.force_login(user)
        _CLIENTS[user.pk] = client
    return _CLIENTS[user.pk]


def _errors(response) -> dict[str, str]:
    assert response["Content-Type"] == "application/json", response.content[:200]
    return {e["field"]: e["message"] for e in response.json()["errors"]}


def test_nul_in_query_path_and_token_is_refused_naming_where(world):
    client = _client(world.users["curator"])
    refused = client.get("/api/candidates/?q=%00")
    assert refused.status_code == 400 and "NUL" in _errors(refused)["q"]
    assert client.get("/api/candidates/?perturbation=a%00b").status_code == 400
    annotator = _client(world.users["annotator"])
    token = annotator.get(f"/api/annotation/my/studies/{world.study}/items/ab%00cd/")
    assert token.status_code == 400 and "NUL" in _errors(token)["path"]
    page = _client(world.users["curator"])
    response = page.get("/candidates/c/%00/")
    assert response.status_code == 400 and b"NUL" in response.content
    assert page.get("/candidates/?q=%00").status_code == 400


def test_nul_in_basic_credentials_and_form_fields_is_refused(world):
    import base64

    header = "Basic " + base64.b64encode(b"a\x00b:pw").decode()
    assert _client().get("/api/candidates/", HTTP_AUTHORIZATION=header).status_code == 400
    before = table_counts()
    page = Client(raise_request_exception=False)
    assert page.post("/login/", {"username": "a\x00", "password": "x"}).status_code == 400
    assert table_counts() == before


def test_huge_claim_timeout_is_refused_with_its_range_and_nothing_created(world):
    before = Study.objects.count()
    body = {"name": "big", "top_k": 4, "per_group": 1, "annotators": ["ann"], "annotators_per_item": 1}
    for value in (2**31, 2**63, 10**30):
        refused = _client(world.users["curator"]).post(
            "/api/annotation/studies/", {**body, "claim_timeout_minutes": value}, format="json"
        )
        assert refused.status_code == 400 and "43200" in _errors(refused)["claim_timeout_minutes"]
    assert Study.objects.count() == before
    accepted = _client(world.users["curator"]).post(
        "/api/annotation/studies/", {**body, "claim_timeout_minutes": 43200}, format="json"
    )
    assert accepted.status_code == 201


def test_long_study_description_is_refused_on_the_api_and_the_page(world):
    before = Study.objects.count()
    body = {
        "name": "long",
        "top_k": 4,
        "per_group": 1,
        "annotators": ["ann"],
        "annotators_per_item": 1,
        "description": "d" * 180_000,
    }
    refused = _client(world.users["curator"]).post("/api/annotation/studies/", body, format="json")
    assert refused.status_code == 400 and "10000" in _errors(refused)["description"]
    with override_settings(VERIHARM_MAX_DESCRIPTION_CHARS=50):
        spec = study_services.StudySpec(
            name="s", seed=1, top_k=4, per_group=1, annotators_per_item=1, description="d" * 51
        )
        with pytest.raises(study_services.StudyRefused) as refusal:
            study_services.study_create(spec, annotators=[world.users["annotator"]])
        assert "VERIHARM_MAX_DESCRIPTION_CHARS" in refusal.value.errors["description"]
    assert Study.objects.count() == before


@pytest.mark.parametrize("body", ["[" * 10_000 + "]" * 10_000, '{"a":' * 10_000 + "1" + "}" * 10_000])
def test_deep_json_is_refused_before_parsing(world, body):
    before = table_counts()
    for path in ("/api/annotation/studies/", "/api/evaluation/runs/", "/api/decisions/"):
        refused = _client(world.users["admin"]).generic("POST", path, body, content_type="application/json")
        assert refused.status_code == 400
        assert "VERIHARM_JSON_MAX_DEPTH" in _errors(refused)[""]
    assert table_counts() == before


@override_settings(VERIHARM_JSON_MAX_DEPTH=3)
def test_the_depth_limit_is_the_setting(world):
    client = _client(world.users["curator"])
    deep = client.generic("POST", "/api/releases/", '{"name": [[["x"]]]}', content_type="application/json")
    assert deep.status_code == 400 and "deeper than 3" in _errors(deep)[""]
    shallow = client.generic("POST", "/api/releases/", '{"name": [["x"]]}', content_type="application/json")
    assert shallow.status_code == 400 and "name" in _errors(shallow)  # parsed, then refused as not a string


def test_nul_and_lone_surrogates_in_json_are_refused_with_their_field(world):
    client = _client(world.users["curator"])
    before = table_counts()
    for text in ('"a\\u0000b"', '"a\\ud800b"'):
        body = '{"name": "r", "version": "1.1", "description": ' + text + "}"
        refused = client.generic("POST", "/api/releases/", body, content_type="application/json")
        assert refused.status_code == 400 and "description" in _errors(refused)
    assert table_counts() == before


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=10_000)
def test_bodies_over_the_limit_are_refused_with_413(world):
    before = table_counts()
    body = json.dumps({"name": "r", "version": "1.2", "description": "x" * 20_000})
    refused = _client(world.users["curator"]).generic("POST", "/api/releases/", body, content_type="application/json")
    assert refused.status_code == 413 and "DATA_UPLOAD_MAX_MEMORY_SIZE" in _errors(refused)["body"]
    assert table_counts() == before


def _import(client, *lines: str, name: str = "hostile.jsonl"):
    upload = io.BytesIO("\n".join(lines).encode("utf-8", "surrogatepass"))
    upload.name = name
    return client.post("/api/candidates/import/", {"files": [upload]}, format="multipart")


def _refusals(*lines: str) -> list:
    data = "\n".join(lines).encode("utf-8", "surrogatepass")
    with pytest.raises(ImportRefused) as refused:
        candidate_import_streams([("hostile.jsonl", io.BytesIO(data))])
    return refused.value.errors


def _line(**changes) -> str:
    return json.dumps(CandidateLineFactory(task_index=30, **changes))


def _long_judge() -> str:
    line = CandidateLineFactory(task_index=30)
    line["judgements"][0]["judge"] = "j" * 201
    return json.dumps(line)


@pytest.mark.parametrize(
    ("line", "field", "words"),
    [
        (lambda: _line(instruction="Do it\u0000 now"), "instruction", "NUL"),
        (lambda: _line(harm_summary="x\ud800y"), "harm_summary", "lone surrogate"),
        (lambda: _line(extra={"a": "b\u0000"}), "extra.a", "NUL"),
        (lambda: _line()[:-1] + ', "extra": ' + "[" * 50_000 + "]" * 50_000 + "}", "", "VERIHARM_JSON_MAX_DEPTH"),
        (lambda: _line(instruction="x" * 1_000_000), "", "VERIHARM_PIPELINE_MAX_LINE_BYTES"),
        (lambda: _line(instruction="x" * 150_000), "instruction", "VERIHARM_PIPELINE_MAX_TEXT_CHARS"),
        (lambda: _line(risk_category="r" * 101), "risk_category", "at most 100"),
        (lambda: _long_judge(), "judgements[0].judge", "at most 200"),
    ],
    ids=["nul", "surrogate", "nul-in-extra", "deep-extra", "long-line", "long-instruction", "risk", "judge"],
)
@override_settings(VERIHARM_PIPELINE_MAX_LINE_BYTES=500_000)
def test_hostile_import_lines_are_refused_with_line_and_field(world, line, field, words):
    # The import itself, as the background job runs it (the job's page and API show these errors).
    before = table_counts()
    errors = _refusals(_line(id="fine/one"), line())
    assert [(e.location.file, e.location.line, e.field) for e in errors] == [("hostile.jsonl", 2, field)], errors
    assert words in errors[0].message
    assert table_counts() == before
    assert not Candidate.objects.filter(external_id="fine/one").exists()


def test_a_search_budget_beyond_its_column_is_refused(world):
    line = json.dumps(
        {
            "kind": "search",
            "source_task_id": "t",
            "target_agent": "a",
            "proposer": "p",
            "budget": 2**40,
            "attempts": [{"iteration": 1, "task_passed": False, "harm_detected": False}],
            "candidate_id": None,
        }
    )
    assert _refusals(line)[0].field == "budget"


@override_settings(VERIHARM_MAX_UPLOAD_BYTES=50_000)
def test_uploads_over_the_limit_are_refused_before_reading(world):
    before = SourceTask.objects.count()
    refused = _import(_client(world.users["curator"]), *[_line(id=f"many/{i}") for i in range(20)])
    assert refused.status_code == 413 and "VERIHARM_MAX_UPLOAD_BYTES" in _errors(refused)["body"]
    assert SourceTask.objects.count() == before


def test_rerun_bodies_of_the_wrong_type_are_refused(world):
    client = _client(world.users["admin"])
    url = f"/api/evaluation/candidates/{EXAMPLE}/rerun/"
    before = table_counts()
    for body in ("[null]", '"x"', "0", '{"agents": "reference-safe"}', '{"agents": [{}]}'):
        refused = client.generic("POST", url, body, content_type="application/json")
        assert refused.status_code == 400, body
    superscript = client.post(url, {"agents": ["²"]}, format="json")
    assert superscript.status_code == 400 and _errors(superscript) == {"agents": "no agent ²"}
    rerun = client.generic("POST", f"/api/evaluation/runs/{world.run}/rerun/", "[1]", content_type="application/json")
    assert rerun.status_code == 400
    assert table_counts() == before
    assert client.post(url, {"agents": ["reference-safe"]}, format="json").status_code == 201


def test_launch_errors_keep_their_message_and_field(world):
    client = _client(world.users["admin"])
    refused = client.post(
        "/api/evaluation/runs/",
        {"selection": {"kind": "ids", "ids": [EXAMPLE]}, "agents": ["x" * 101], "repetitions": 10**6},
        format="json",
    )
    errors = _errors(refused)
    assert "no more than 100 characters" in errors["agents[0]"]
    assert "less than or equal to 100" in errors["repetitions"]
    kind = client.post(
        "/api/evaluation/runs/", {"selection": {"kind": ["ids"]}, "agents": ["reference-safe"]}, format="json"
    )
    assert kind.status_code == 400 and "selection kind" in _errors(kind)["selection"]


def test_a_k_that_is_not_a_number_is_refused(world):
    client = _client(world.users["curator"])
    for url in ("/api/candidates/?k=abc", "/api/review/queue/?k=abc", "/api/candidates/?k=0"):
        refused = client.get(url)
        assert refused.status_code == 400 and "whole number" in _errors(refused)["k"], url
    assert client.get("/api/candidates/?group=middle").status_code == 400
    groups = [r["group"] for r in client.get("/api/candidates/?k=3").json()["results"]]
    assert groups[:3] == ["top"] * 3 and groups[3] != "top"


def test_every_refusal_has_the_one_shape(world):
    curator = _client(world.users["curator"])
    shapes = [
        curator.get("/api/decisions/?candidate=ghost"),  # 404 from a view
        curator.get("/api/nothing-here/"),  # no endpoint
        curator.post("/api/releases/", {}, format="json"),  # validation
        curator.generic("POST", "/api/releases/", "{", content_type="application/json"),  # parse error
        _client().get("/api/candidates/"),  # not signed in
        _client(world.users["annotator"]).get("/api/candidates/"),  # no permission
        curator.put("/api/releases/", {}, format="json"),  # method
    ]
    for response in shapes:
        assert 400 <= response.status_code < 500
        body = response.json()
        assert (
            set(body) == {"errors"} and body["errors"] and all(set(e) >= {"field", "message"} for e in body["errors"])
        )


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(world):
    assert [safe_cell(v) for v in ("=1+1", "+1", "-x", "@SUM(A1)", "\tx", "\rx", "plain", -1.5, 3)] == [
        "'=1+1",
        "'+1",
        "'-x",
        "'@SUM(A1)",
        "'\tx",
        "'\rx",
        "plain",
        -1.5,
        3,
    ]
    comment = '=HYPERLINK("http://evil.example","click")'
    labelling_services.label_submit(
        world.study,
        world.token,
        world.users["annotator"],
        labelling_services.LabelInput(c1=True, c2=True, c3=True, comment=comment),
    )
    page = _client(world.users["curator"])
    text = b"".join(page.get(f"/annotation/studies/{world.study}/export/labels.csv")).decode()
    row = next(csv.DictReader(io.StringIO(text)))
    assert row["comment"] == "'" + comment


def test_metrics_csv_neutralises_agent_names(world):
    from evaluation.models import Agent, AgentKind

    agent = Agent.objects.create(name="=cmd|' /C calc'!A0", kind=AgentKind.COMMAND, config={"command": "x {task_file}"})
    from evaluation.runs.exports import metrics_csv
    from tests.evaluation.v3ast_helpers import launch

    run = launch([EXAMPLE], [agent], protocol="veriharm")
    from evaluation.models import Trial
    from tests.evaluation.v3ast_helpers import record

    for trial in Trial.objects.filter(run=run):
        record(trial, 0, 0)
    rows = list(csv.DictReader(io.StringIO(metrics_csv(run))))
    assert rows and all(r["agent"] == "'" + agent.name for r in rows)


def test_the_schema_documents_uploads_limits_and_refusals():
    schema = api_schema()
    components = schema["components"]["schemas"]
    upload = schema["paths"]["/api/candidates/import/"]["post"]["requestBody"]["content"]["multipart/form-data"]
    ref = upload["schema"]["$ref"].rsplit("/", 1)[1]
    assert components[ref]["properties"]["files"]["items"] == {"type": "string", "format": "binary"}
    study = components["StudyCreateRequest"]["properties"]
    assert study["claim_timeout_minutes"]["maximum"] == 43200 and study["description"]["maxLength"] == 10000
    k = next(p for p in schema["paths"]["/api/candidates/"]["get"]["parameters"] if p["name"] == "k")
    assert k["schema"]["minimum"] == 1
    for item in schema["paths"].values():
        for operation in item.values():
            for code, answer in operation["responses"].items():
                if code.startswith("4"):
                    assert answer["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ApiErrors"}


def test_pages_refuse_huge_numbers_and_long_text_in_forms_and_change_nothing(world):
    page = _client(world.users["curator"])
    before = table_counts()
    form = {
        "name": "page study",
        "per_group": 1,
        "top_k": 4,
        "seed": 1,
        "annotators_per_item": 1,
        "claim_timeout_minutes": 2**31,
        "annotators": [world.users["annotator"].pk],
        "description": "d" * 180_000,
    }
    response = page.post("/annotation/studies/new/", form)
    assert response.status_code == 400  # the form again, with its errors
    text = response.content.decode()
    assert "less than or equal to 43200" in text and "at most 10000 characters" in text
    assert page.post("/annotation/studies/new/", {**form, "top_k": "9" * 40}).status_code == 400
    assert table_counts() == before


def test_percent_encoded_bytes_that_are_not_utf8_are_refused_not_replaced(db, curator_client):
    """Django would turn them into U+FFFD and store a character nobody sent."""
    from annotation.models import Study

    refused = curator_client.get("/api/candidates/", QUERY_STRING="q=bad%ED%A0%80text")
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "q"
    response = curator_client.generic(
        "POST",
        "/annotation/studies/new/",
        "name=bad%ED%A0%80text&seed=1",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 400 and "not UTF-8" in response.content.decode()
    assert not Study.objects.exists()
