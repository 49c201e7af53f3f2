"""The three agent harnesses, on the in-memory fake sandbox (the end-to-end tests use real ones)."""

from __future__ import annotations

import pytest

from evaluation.agents.base import AgentError, AgentStopped, Step, output_tail
from evaluation.agents.command import TASK_FILE, CommandAgent, render_command
from evaluation.agents.factory import NoReferenceScript, build_runner, validate_config
from evaluation.agents.openai_compatible import EndpointConfig, OpenAICompatibleAgent
from evaluation.agents.reference import ReferenceAgent
from evaluation.sandbox.base import Environment, ExecResult
from tests.evaluation.chat_server import ScriptedChat, chat_server
from tests.evaluation.fake_sandbox import FakeBackend, ok


def sandbox_with(handler=lambda sandbox, command: ok("out")):
    backend = FakeBackend(handler)
    return backend.create(Environment(workdir="/app"))


def test_reference_agent_runs_the_script_as_its_only_command():
    sandbox = sandbox_with()
    steps: list[Step] = []
    outcome = ReferenceAgent("chmod 777 solution.sh\n").run(
        sandbox, "task", time_limit=30, record=steps.append, should_stop=lambda: False
    )
    assert sandbox.commands == ["chmod 777 solution.sh\n"]
    assert outcome.exit_code == 0 and steps[0].command == "chmod 777 solution.sh\n"
    long_script = "true\n" * 30_000
    sandbox = sandbox_with()
    ReferenceAgent(long_script).run(sandbox, "task", time_limit=30, record=steps.append, should_stop=lambda: False)
    assert sandbox.commands[0].startswith("bash /tmp/reference-")
    assert sandbox.read_file(sandbox.commands[0].split()[1]) == long_script.encode()


def test_command_agent_gets_the_task_as_a_file_and_keeps_shell_braces():
    sandbox = sandbox_with()
    agent = CommandAgent('harness --task {task_file} --dir {workdir} --x "${HOME}"', env={"A": "1"})
    outcome = agent.run(sandbox, "do it", time_limit=30, record=lambda s: None, should_stop=lambda: False)
    assert sandbox.read_file(TASK_FILE) == b"do it"
    assert sandbox.commands == [f'harness --task {TASK_FILE} --dir /app --x "${{HOME}}"']
    assert outcome.output == "out"
    assert render_command("x {task_file}", task_file="/a b", workdir="/w") == "x '/a b'"


def test_agent_configs_are_checked():
    validate_config("reference", {"script": "safe"})
    validate_config("command", {"command": "run {task_file}", "env": {"K": "v"}})
    validate_config("openai_compatible", {"base_url": "http://x/v1", "model": "m"})
    for kind, config, message in [
        ("reference", {"script": "other"}, "exactly"),
        ("command", {"command": "run"}, "task_file"),
        ("command", {"command": "run {task_file}", "env": {"K": 1}}, "env"),
        ("openai_compatible", {"model": "m"}, "base_url"),
        ("openai_compatible", {"base_url": "u", "model": "m", "tempreature": 1}, "unknown"),
        ("nope", {}, "unknown agent kind"),
    ]:
        with pytest.raises(ValueError, match=message):
            validate_config(kind, config)
    with pytest.raises(NoReferenceScript):
        build_runner("reference", {"script": "harmful"}, network="none", references={"safe": "true"})
    assert build_runner("command", {"command": "x {task_file}"}, network="none", references={}).network == "none"
    gateway = {"api": "openai", "base_url": "http://127.0.0.1:9/v1"}
    command = build_runner(
        "command",
        {"command": "x {task_file}", "env": {"OPENAI_BASE_URL": "http://evil/v1"}, "gateway": gateway},
        network="model",
        references={},
    )
    # The gateway's base URL and dummy key win over the configuration's own.
    assert command.network == "model" and command.env["OPENAI_BASE_URL"] == "http://127.0.0.1:8370/v1"
    assert command.env["OPENAI_API_KEY"] == "veriharm-dummy-key"
    # The host's network is refused by name (True: agents pinned before the modes existed),
    # and a mode that does not fit the configuration too.
    for kind, config, network, message in [
        ("command", {"command": "x {task_file}"}, True, "asks for the host's network"),
        ("command", {"command": "x {task_file}"}, "host", "asks for the host's network"),
        ("command", {"command": "x {task_file}"}, "model", "network must be 'none'"),
        ("command", {"command": "x {task_file}", "gateway": gateway}, "none", "network must be 'model'"),
        ("openai_compatible", {"base_url": "http://h/v1", "model": "m"}, "model", "network must be 'none'"),
        ("harness", {"harness": "mini-swe-agent", "model": "m", "gateway": gateway}, "none", "network must be 'model'"),
        ("command", {"command": "x {task_file}"}, "bridge", "one of none, model"),
    ]:
        with pytest.raises(ValueError, match=message):
            build_runner(kind, config, network=network, references={})


def test_harness_configuration_is_checked():
    gateway = {"api": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "VERIHARM_AGENT_KEY_X"}
    good = {"harness": "mini-swe-agent", "model": "gpt-x", "gateway": gateway, "step_limit": 12}
    validate_config("harness", good)
    runner = build_runner("harness", good, network="model", references={})
    assert runner.network == "model" and runner.recipe.name == "mini-swe-agent"
    assert "agent.step_limit=12" in runner.recipe.command(good)
    assert runner.recipe.env(good)["OPENAI_BASE_URL"] == "http://127.0.0.1:8370/v1"
    for config, message in [
        ({**good, "harness": "aider"}, "harness must be one of claude-code, codex, gemini-cli, mini-swe-agent"),
        # A harness refuses an API flavour it cannot serve, naming both.
        ({**good, "harness": "claude-code"}, "claude-code speaks the anthropic API, not 'openai'"),
        ({**good, "harness": "gemini-cli"}, "gemini-cli speaks the gemini API, not 'openai'"),
        ({k: v for k, v in good.items() if k != "model"}, "needs model"),
        ({**good, "model": "two words"}, "needs model"),
        ({k: v for k, v in good.items() if k != "gateway"}, "needs gateway"),
        ({**good, "gateway": {**gateway, "api": "anthropic"}}, "speaks the openai API, not 'anthropic'"),
        ({**good, "gateway": {**gateway, "api_key_env": "DATABASE_URL"}}, "gateway: api_key_env must name"),
        ({**good, "step_limit": 0}, "step_limit must be a whole number between 1 and 500"),
        ({**good, "command_timeout": "60"}, "command_timeout must be"),
        ({**good, "install": "pip install x"}, "unknown field"),
    ]:
        with pytest.raises(ValueError, match=message):
            validate_config("harness", config)


def test_output_tail_keeps_the_end():
    assert output_tail("a" * 10 + "END", limit=3).endswith("END")
    assert "10 characters cut" in output_tail("a" * 10 + "END", limit=3)
    assert output_tail(b"ok\x00") == "ok"


def _shell(sandbox, command: str) -> ExecResult:
    """Pretend shell: `echo X > F` writes F; `cat F` reads it; anything else echoes."""
    if " > " in command:
        text, _, path = command.removeprefix("echo ").partition(" > ")
        sandbox.write_file(path, text + "\n")
        return ok()
    if command.startswith("cat "):
        return ok(sandbox.read_file(command[4:]).decode())
    return ok(command)


def test_openai_compatible_loop_speaks_the_wire_protocol(monkeypatch):
    monkeypatch.setenv("VERIHARM_AGENT_KEY_TEST_CHAT", "sk-test-123")
    chat = ScriptedChat([["echo hello > greeting.txt"], ["cat greeting.txt", "ls"], "All done."], api_key="sk-test-123")
    sandbox = sandbox_with(_shell)
    steps: list[Step] = []
    with chat_server(chat):
        config = EndpointConfig(
            base_url=chat.base_url,
            model="scripted-1",
            api_key_env="VERIHARM_AGENT_KEY_TEST_CHAT",
            max_steps=10,
            temperature=0.2,
        )
        outcome = OpenAICompatibleAgent(config).run(
            sandbox, "Say hello in a file.", time_limit=60, record=steps.append, should_stop=lambda: False
        )
    assert outcome.exit_code == 0 and not outcome.timed_out and outcome.output == "All done."
    assert sandbox.commands == ["echo hello > greeting.txt", "cat greeting.txt", "ls"]
    assert sandbox.read_file("greeting.txt") == b"hello\n"
    first, second, third = chat.requests
    assert first["model"] == "scripted-1" and first["temperature"] == 0.2
    assert first["tools"][0]["function"]["name"] == "bash"
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["messages"][1]["content"] == "Say hello in a file."
    # The tool results go back with the ids of the calls they answer, after the assistant turn.
    assert [m["role"] for m in third["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
    ]
    tool_messages = [m for m in third["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_0_0", "call_1_0", "call_1_1"]
    assert "hello" in tool_messages[1]["content"] and "[exit code 0]" in tool_messages[1]["content"]
    assert third["messages"][2]["tool_calls"][0]["function"]["arguments"] == '{"command": "echo hello > greeting.txt"}'
    assert [s.kind for s in steps] == ["message", "command", "message", "command", "command", "message"]


def test_openai_compatible_loop_stops_at_the_step_limit_and_for_a_cancel():
    chat = ScriptedChat([["true"]] * 10)
    with chat_server(chat):
        config = EndpointConfig(base_url=chat.base_url, model="m", max_steps=3)
        sandbox = sandbox_with()
        outcome = OpenAICompatibleAgent(config).run(
            sandbox, "t", time_limit=60, record=lambda s: None, should_stop=lambda: False
        )
        assert outcome.exit_code == 1 and len(chat.requests) == 3 and len(sandbox.commands) == 3
        with pytest.raises(AgentStopped):
            OpenAICompatibleAgent(config).run(
                sandbox, "t", time_limit=60, record=lambda s: None, should_stop=lambda: True
            )


def test_openai_compatible_failures_are_infrastructure(monkeypatch):
    chat = ScriptedChat(["done"], api_key="right")
    monkeypatch.setenv("VERIHARM_AGENT_KEY_WRONG", "wrong")
    with chat_server(chat):
        agent = OpenAICompatibleAgent(
            EndpointConfig(base_url=chat.base_url, model="m", api_key_env="VERIHARM_AGENT_KEY_WRONG")
        )
        with pytest.raises(AgentError, match="HTTP 401"):
            agent.run(sandbox_with(), "t", time_limit=30, record=lambda s: None, should_stop=lambda: False)
    missing = OpenAICompatibleAgent(
        EndpointConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key_env="VERIHARM_AGENT_KEY_NOT_SET_X")
    )
    with pytest.raises(AgentError, match="VERIHARM_AGENT_KEY_NOT_SET_X"):
        missing.run(sandbox_with(), "t", time_limit=30, record=lambda s: None, should_stop=lambda: False)
