"""The gateway's pure wire reading (routes, query strings, its own answers, Gemini usage) and the
scripted upstream's dialect writers with each CLI's shell tool; hand-computed cases."""

from __future__ import annotations

import json

import pytest

from demo.native.dialects import ShellTool, Turn, events, scripted_turn, shell_tool, whole
from evaluation.gateway.answers import local_answer, model_list
from evaluation.gateway.routes import Route, RouteRefused, route_for
from evaluation.gateway.usage import StreamUsage, from_body


def sse(*payloads: dict) -> bytes:
    return b"".join(b"data: " + json.dumps(p).encode() + b"\r\n\r\n" for p in payloads)


# --- routes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("api", "method", "target", "route"),
    [
        ("openai", "POST", "/v1/responses", Route("responses", "/responses")),
        ("openai", "GET", "/v1/models", Route("models")),
        ("anthropic", "POST", "/v1/messages?beta=true", Route("messages", "/messages", query="beta=true")),
        ("anthropic", "POST", "/v1/messages/count_tokens?beta=true", Route("count_tokens", query="beta=true")),
        ("anthropic", "HEAD", "/api/hello", Route("hello")),
        ("anthropic", "GET", "/v1/models?beta=true&limit=20", Route("models", query="beta=true")),
        (
            "gemini",
            "POST",
            "/v1beta/models/gemini-2.5-pro:generateContent?key=dummy",
            Route("generate_content", "/v1beta/models/gemini-2.5-pro:generateContent", model="gemini-2.5-pro"),
        ),
        (
            "gemini",
            "POST",
            "/v1beta/models/gemini-2.0-flash-001:streamGenerateContent?key=x&alt=sse",
            Route(
                "stream_generate_content",
                "/v1beta/models/gemini-2.0-flash-001:streamGenerateContent",
                model="gemini-2.0-flash-001",
                streamed=True,
                query="alt=sse",  # the client's key is never passed on
            ),
        ),
        ("gemini", "POST", "/v1beta/models/m:countTokens", Route("count_tokens", model="m")),
        ("gemini", "GET", "/v1beta/models?pageSize=50", Route("models")),
    ],
)
def test_each_served_request_names_its_route(api, method, target, route):
    assert route_for(api, method, target) == route


@pytest.mark.parametrize(
    ("api", "method", "target", "status", "named"),
    [
        ("openai", "POST", "/v1/messages", 404, "serves only"),
        ("openai", "HEAD", "/api/hello", 404, "serves only"),
        ("openai", "POST", "/v1/responses?stream=1", 400, "takes no query string"),
        ("openai", "DELETE", "/v1/models", 405, "takes GET only"),
        ("anthropic", "POST", "/v1/messages?beta=true&x=1", 400, "not 'x'"),
        ("anthropic", "GET", "/api/hello", 405, "takes HEAD only"),
        ("gemini", "POST", "/v1beta/models/m:streamGenerateContent?key=x", 400, "needs ?alt=sse"),
        ("gemini", "POST", "/v1beta/models/m:generateContent?alt=sse", 400, "must be json"),
        ("gemini", "POST", "/v1beta/models/m:generateContent?alt", 400, "malformed"),
        ("gemini", "POST", "/v1beta/models/m:generateContent?%zz", 400, "malformed"),
        ("gemini", "POST", "/v1beta/models/tunedModels/x:generateContent", 404, "serves only"),
        ("gemini", "POST", "/v1beta/models/-m:generateContent", 404, "serves only"),
        ("gemini", "POST", "/v1beta/models/m:batchEmbedContents", 404, "serves only"),
    ],
)
def test_every_other_request_is_refused_naming_what_is_wrong(api, method, target, status, named):
    with pytest.raises(RouteRefused) as refused:
        route_for(api, method, target)
    assert refused.value.status == status and named in refused.value.message


# --- the gateway's own answers ----------------------------------------------------------------------


def test_model_lists_and_token_counts_are_answered_in_each_flavours_shape():
    assert model_list("openai", ("a", "b"))["data"][1] == {
        "id": "b",
        "object": "model",
        "created": 0,
        "owned_by": "veriharm-gateway",
    }
    anthropic = model_list("anthropic", ("a",))
    assert (anthropic["first_id"], anthropic["last_id"], anthropic["data"][0]["type"]) == ("a", "a", "model")
    assert model_list("gemini", ("g",))["models"][0]["name"] == "models/g"
    # 10 characters of strings: 3 tokens at four characters a token, rounded up.
    answer = local_answer("anthropic", Route("count_tokens"), {"model": "m", "system": "123456789"}, ())
    assert (answer.status, json.loads(answer.content)) == (200, {"input_tokens": 3})
    answer = local_answer("gemini", Route("count_tokens"), {"contents": [{"parts": [{"text": "12345678"}]}]}, ())
    assert json.loads(answer.content) == {"totalTokens": 2}
    assert local_answer("anthropic", Route("hello"), {}, ()).content == b""


# --- Gemini usage ---------------------------------------------------------------------------------


def test_gemini_usage_counts_thoughts_as_output_and_tool_prompts_as_input():
    body = {
        "candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}],
        "usageMetadata": {
            "promptTokenCount": 100,
            "toolUsePromptTokenCount": 5,
            "cachedContentTokenCount": 40,  # part of the prompt's count already
            "candidatesTokenCount": 20,
            "thoughtsTokenCount": 30,
        },
    }
    usage = from_body(json.dumps(body).encode())
    assert (usage.input_tokens, usage.output_tokens, usage.complete) == (105, 50, True)


def test_a_gemini_stream_counts_its_last_usage_and_is_final_only_at_its_finish():
    reader = StreamUsage()
    reader.feed(
        sse(
            {"candidates": [{"content": {"parts": [{"text": "abcd"}]}}], "usageMetadata": {"promptTokenCount": 70}},
            {
                "candidates": [{"content": {"parts": [{"text": "efgh"}]}}],
                "usageMetadata": {"promptTokenCount": 70, "candidatesTokenCount": 3},
            },
        )
    )
    cut = reader.close()
    # Cut here: figures so far, not final (the gateway then estimates the call).
    assert (cut.input_tokens, cut.output_tokens, cut.reported, cut.complete) == (70, 3, True, False)
    assert reader.text_chars == len("abcd") + len("efgh") + len("model") * 0
    reader.feed(
        sse(
            {
                "candidates": [
                    {"content": {"parts": [{"functionCall": {"name": "x", "args": {}}}]}, "finishReason": "STOP"}
                ],
                "usageMetadata": {"promptTokenCount": 70, "candidatesTokenCount": 9, "thoughtsTokenCount": 4},
            }
        )
    )
    final = reader.close()
    assert (final.input_tokens, final.output_tokens, final.complete) == (70, 13, True)


# --- the scripted upstream's dialects ------------------------------------------------------------


def _schema(properties: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": properties, "required": required}


STRING = {"type": "string"}


@pytest.mark.parametrize(
    ("dialect", "tools", "name", "arguments"),
    [
        # Claude Code
        (
            "messages",
            [{"name": "Bash", "input_schema": _schema({"command": STRING}, ["command"])}],
            "Bash",
            {"command": "ls"},
        ),
        # OpenCode
        (
            "chat",
            [
                {"type": "function", "function": {"name": "read", "parameters": _schema({"path": STRING}, ["path"])}},
                {
                    "type": "function",
                    "function": {
                        "name": "bash",
                        "parameters": _schema({"command": STRING, "description": STRING}, ["command", "description"]),
                    },
                },
            ],
            "bash",
            {"command": "ls", "description": "Run the scripted command"},
        ),
        # Gemini CLI
        (
            "gemini",
            [{"functionDeclarations": [{"name": "run_shell_command", "parameters": _schema({"command": STRING}, [])}]}],
            "run_shell_command",
            {"command": "ls"},
        ),
        # Codex: an argv array, or a command string under cmd
        (
            "responses",
            [{"type": "function", "name": "shell", "parameters": _schema({"command": {"type": "array"}}, ["command"])}],
            "shell",
            {"command": ["bash", "-lc", "ls"]},
        ),
        (
            "responses",
            [
                {
                    "type": "function",
                    "name": "exec_command",
                    "parameters": _schema({"cmd": STRING, "workdir": STRING}, ["cmd"]),
                }
            ],
            "exec_command",
            {"cmd": "ls"},
        ),
        # No shell tool declared: the bash-tool loop's own shape
        ("chat", [], "bash", {"command": "ls"}),
    ],
)
def test_the_shell_tool_is_the_first_declared_one_with_its_argument_shape(dialect, tools, name, arguments):
    tool = shell_tool(dialect, {"tools": tools})
    assert tool.name == name and tool.arguments("ls") == arguments


def test_whole_tool_call_replies_in_each_dialect():
    turn = scripted_turn(["ls", "pwd"], ShellTool("bash"), index=2, thought="Looking.")
    chat = whole("chat", turn, model="m", usage=(3, 4), index=2)
    assert chat["choices"][0]["finish_reason"] == "tool_calls"
    assert [c["function"]["arguments"] for c in chat["choices"][0]["message"]["tool_calls"]] == [
        '{"command": "ls"}',
        '{"command": "pwd"}',
    ]
    responses = whole("responses", turn, model="m", usage=(3, 4), index=2)
    assert [item["type"] for item in responses["output"]] == ["message", "function_call", "function_call"]
    assert (
        responses["output"][1]["call_id"] == "call_2_0" and responses["output"][1]["arguments"] == '{"command": "ls"}'
    )
    messages = whole("messages", turn, model="m", usage=(3, 4), index=2)
    assert messages["stop_reason"] == "tool_use"
    assert [b.get("input") for b in messages["content"]] == [None, {"command": "ls"}, {"command": "pwd"}]
    gemini = whole("gemini", turn, model="m", usage=(3, 4), index=2)
    parts = gemini["candidates"][0]["content"]["parts"]
    assert parts[1] == {"functionCall": {"name": "bash", "args": {"command": "ls"}}}
    assert gemini["candidates"][0]["finishReason"] == "STOP" and gemini["usageMetadata"]["candidatesTokenCount"] == 4


def test_a_streamed_chat_tool_call_gives_its_id_and_name_first_then_its_arguments_in_pieces():
    turn = Turn(None, scripted_turn(["echo a-long-command"], ShellTool("bash"), index=0, thought=None).calls)
    chunks = [e for e in events("chat", turn, model="m", usage=(1, 1), index=0) if isinstance(e, dict)]
    calls = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks if c["choices"] and c["choices"][0]["delta"]]
    assert calls[0]["id"] == "call_0_0" and calls[0]["function"] == {"name": "bash", "arguments": ""}
    assert all("id" not in c and "name" not in c["function"] for c in calls[1:]) and len(calls) > 2
    assert json.loads("".join(c["function"]["arguments"] for c in calls)) == {"command": "echo a-long-command"}
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls" and chunks[-1]["usage"]["total_tokens"] == 2
