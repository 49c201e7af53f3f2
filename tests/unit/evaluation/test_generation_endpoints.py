"""Proposer and judge endpoints: their configuration checks and the three API flavours' bodies and
reply texts (evaluation.generation.endpoints, .flavours), pure."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from evaluation.generation.endpoints import endpoint_from_config
from evaluation.generation.flavours import NoText, reply_text, request_body


def config(**changes: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "name": "opus-judge",
        "api": "anthropic",
        "route": "messages",
        "base_url": "https://api.anthropic.com/v1/",
        "api_key_env": "VERIHARM_AGENT_KEY_ANTHROPIC",
        "model": "claude-x",
        "prices": {"claude-x": {"input": 15, "output": "75"}},
    }
    value.update(changes)
    return {key: item for key, item in value.items() if item is not None}


def test_a_full_configuration_becomes_an_endpoint_with_the_gateways_upstream():
    endpoint = endpoint_from_config(config(max_tokens=4000, temperature=0, max_reply_retries=1, max_retries=3))
    assert (endpoint.name, endpoint.route, endpoint.path, endpoint.model) == (
        "opus-judge",
        "messages",
        "/v1/messages",
        "claude-x",
    )
    assert (endpoint.max_tokens, endpoint.temperature, endpoint.max_reply_retries) == (4000, 0.0, 1)
    assert endpoint.upstream.base_url == "https://api.anthropic.com/v1"
    assert endpoint.upstream.max_retries == 3
    assert endpoint.upstream.prices["claude-x"].output == Decimal(75)
    defaults = endpoint_from_config(config(api="openai", route="responses", base_url="http://127.0.0.1:9/v1"))
    assert (defaults.path, defaults.max_tokens, defaults.temperature, defaults.max_reply_retries) == (
        "/v1/responses",
        8000,
        None,
        2,
    )


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"name": " "}, "name is required"),
        ({"name": "x" * 201}, "name must be at most 200 characters"),
        ({"api": "gemini"}, "api must be one of openai, anthropic"),
        ({"route": "chat_completions"}, "route must be one of messages for api 'anthropic'"),
        ({"api": "openai", "route": "messages"}, "route must be one of chat_completions, responses for api 'openai'"),
        ({"route": None}, "route must be one of messages"),
        ({"base_url": "ftp://x"}, "base_url must use http or https"),
        ({"api_key_env": "DATABASE_URL"}, "api_key_env must name a variable starting with VERIHARM_AGENT_KEY_"),
        ({"api_key": "sk-secret"}, "unknown field(s) api_key"),
        ({"model": None}, "model is required"),
        ({"max_tokens": 0}, "max_tokens must be a whole number from 1 to 128000, got 0"),
        ({"max_tokens": True}, "max_tokens must be a whole number"),
        ({"temperature": 3}, "temperature must be a number from 0 to 2"),
        ({"max_reply_retries": 6}, "max_reply_retries must be a whole number from 0 to 5"),
        ({"prices": {"claude-x": {"input": -1, "output": 1}}}, "prices['claude-x'].input must be a non-negative"),
    ],
)
def test_a_wrong_field_is_named(changes, says):
    with pytest.raises(ValueError) as caught:
        endpoint_from_config(config(**changes))
    assert says in str(caught.value)


MESSAGES = [{"role": "user", "content": "propose"}]


def test_each_flavour_gets_its_own_body_with_the_output_bound_and_only_a_configured_temperature():
    chat = endpoint_from_config(config(api="openai", route="chat_completions", temperature=0.5))
    assert request_body(chat, MESSAGES) == {
        "model": "claude-x",
        "messages": MESSAGES,
        "max_completion_tokens": 8000,
        "temperature": 0.5,
    }
    responses = endpoint_from_config(config(api="openai", route="responses"))
    assert request_body(responses, MESSAGES) == {
        "model": "claude-x",
        "input": MESSAGES,
        "max_output_tokens": 8000,
        "store": False,
    }
    messages = endpoint_from_config(config(max_tokens=100))
    assert request_body(messages, MESSAGES) == {"model": "claude-x", "messages": MESSAGES, "max_tokens": 100}


def test_the_reply_text_is_read_where_each_flavour_puts_it():
    chat = {"choices": [{"message": {"role": "assistant", "content": "{}"}, "finish_reason": "stop"}]}
    assert reply_text("chat_completions", chat) == "{}"
    responses = {
        "output": [
            {"type": "reasoning", "summary": []},
            {
                "type": "message",
                "content": [{"type": "output_text", "text": "{"}, {"type": "output_text", "text": "}"}],
            },
        ]
    }
    assert reply_text("responses", responses) == "{}"
    messages = {"content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "{}"}]}
    assert reply_text("messages", messages) == "{}"


@pytest.mark.parametrize(
    ("route", "answer", "says"),
    [
        ("chat_completions", {"choices": []}, "holds no text"),
        ("chat_completions", {"choices": [{"message": {"content": None, "refusal": "no"}}]}, "the model refused: no"),
        (
            "responses",
            {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []},
            "stop reason 'max_output_tokens'",
        ),
        ("messages", {"content": [], "stop_reason": "max_tokens"}, "stop reason 'max_tokens'"),
        ("messages", "not json", "not a JSON object"),
    ],
)
def test_an_answer_without_text_says_why(route, answer, says):
    with pytest.raises(NoText, match=says):
        reply_text(route, answer)
