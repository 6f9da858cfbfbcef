"""The fake model API over plain HTTP: what each reply looks like on the wire."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from adws.testing import FakeModelAPI, Reply
from adws.testing._wire import prompt_of


def post(api: FakeModelAPI, path: str, body: object) -> tuple[int, dict[str, str], str]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(  # noqa: S310 - our own server on 127.0.0.1
        api.url + path, data=data, headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - as above
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def ask(text: str, *, stream: bool = False) -> dict[str, object]:
    return {"model": "m", "stream": stream, "messages": [{"role": "user", "content": text}]}


def events(body: str) -> list[dict[str, object]]:
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]


def test_replies_go_by_marker_first_then_in_order(fake_model_api: FakeModelAPI) -> None:
    fake_model_api.script(Reply.text("first"), Reply.text("second"))
    fake_model_api.script(Reply.text("for B"), marker="B")
    assert json.loads(post(fake_model_api, "/v1/messages", ask("task B"))[2])["content"] == [
        {"type": "text", "text": "for B"}
    ]
    assert fake_model_api.unused() == {None: 2}
    texts = [json.loads(post(fake_model_api, "/v1/messages", ask("B"))[2]) for _ in range(2)]
    assert [t["content"][0]["text"] for t in texts] == ["first", "second"]
    assert [r["marker"] for r in fake_model_api.requests] == ["B", None, None]


def test_a_request_with_no_reply_left_is_a_500_and_noted(fake_model_api: FakeModelAPI) -> None:
    status, _, body = post(fake_model_api, "/v1/messages", ask("anything"))
    assert (status, json.loads(body)) == (
        500,
        {"type": "error", "error": {"type": "api_error", "message": "no reply scripted"}},
    )
    assert fake_model_api.unanswered == ["anything"]


def test_an_error_carries_its_status_body_and_retry_after(fake_model_api: FakeModelAPI) -> None:
    fake_model_api.script(
        Reply.error(429, "slow down", retry_after=2.5), Reply.error(400, error_type="invalid")
    )
    status, headers, body = post(fake_model_api, "/v1/messages", ask("x"))
    assert (status, headers["retry-after"], json.loads(body)["error"]) == (
        429,
        "2.5",
        {"type": "rate_limit_error", "message": "slow down"},
    )
    status, _, body = post(fake_model_api, "/v1/responses", {"input": []})
    assert (status, json.loads(body)) == (
        400,
        {"error": {"type": "invalid", "message": "fake model API error"}},
    )


def test_anthropic_streams_text_and_tool_calls(fake_model_api: FakeModelAPI) -> None:
    fake_model_api.script(
        Reply.text("hello", input_tokens=7), Reply.tool("Bash", {"command": "ls"})
    )
    sent = events(post(fake_model_api, "/v1/messages", ask("x", stream=True))[2])
    assert [e["type"] for e in sent] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert sent[2]["delta"] == {"type": "text_delta", "text": "hello"}
    assert sent[4]["usage"] == {"input_tokens": 7, "output_tokens": 5}
    tool = json.loads(post(fake_model_api, "/v1/messages", ask("x"))[2])
    assert (tool["stop_reason"], tool["content"][0]["name"], tool["content"][0]["input"]) == (
        "tool_use",
        "Bash",
        {"command": "ls"},
    )


def test_a_tool_calls_arguments_may_come_from_the_prompt(fake_model_api: FakeModelAPI) -> None:
    fake_model_api.script(Reply.tool("Write", lambda prompt: {"file_path": prompt.split()[-1]}))
    tool = json.loads(post(fake_model_api, "/v1/messages", ask("work in /tmp/w1"))[2])
    assert tool["content"][0]["input"] == {"file_path": "/tmp/w1"}


def test_a_dropped_anthropic_stream_ends_mid_event(fake_model_api: FakeModelAPI) -> None:
    fake_model_api.script(Reply.drop())
    body = post(fake_model_api, "/v1/messages", ask("x", stream=True))[2]
    assert body.endswith('data: {"type": "content_bl')


def test_openai_answers_whole_or_streamed(fake_model_api: FakeModelAPI) -> None:
    fake_model_api.script(Reply.text("whole"), Reply.tool("exec_command", {"cmd": "ls"}))
    whole = json.loads(post(fake_model_api, "/v1/responses", {"input": []})[2])
    assert whole["output"][0]["content"][0]["text"] == "whole"
    assert whole["usage"]["total_tokens"] == 15
    sent = events(post(fake_model_api, "/v1/responses", {"input": [], "stream": True})[2])
    assert [e["type"] for e in sent] == [
        "response.created",
        "response.output_item.done",
        "response.completed",
    ]
    item: dict[str, str] = sent[1]["item"]  # type: ignore[assignment] # a JSON object
    assert (item["type"], item["name"], json.loads(item["arguments"])) == (
        "function_call",
        "exec_command",
        {"cmd": "ls"},
    )


def test_other_paths_and_bodies_are_refused_or_counted(fake_model_api: FakeModelAPI) -> None:
    assert post(fake_model_api, "/v1/models", {})[0] == 404
    assert post(fake_model_api, "/v1/messages", b"{not json")[0] == 400
    assert json.loads(post(fake_model_api, "/v1/messages/count_tokens", {})[2]) == {
        "input_tokens": 10
    }
    assert fake_model_api.requests == []


def test_closing_ends_a_slow_reply_at_once() -> None:
    api = FakeModelAPI()
    api.script(Reply.text("late", delay=60))
    outcome: list[object] = []

    def call() -> None:
        try:
            outcome.append(post(api, "/v1/messages", ask("x")))
        except OSError as exc:
            outcome.append(type(exc).__name__)

    caller = threading.Thread(target=call)
    caller.start()
    while not api.requests:
        time.sleep(0.01)
    started = time.monotonic()
    api.close()
    caller.join(10)
    assert time.monotonic() - started < 5
    assert outcome  # the caller got its answer (an error): nothing hangs


def test_prompts_are_the_users_text_in_either_api() -> None:
    anthropic = {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, 3]}]}
    openai = {"input": [{"role": "user", "content": [{"type": "input_text", "text": "b"}]}, "x"]}
    assert (prompt_of(anthropic), prompt_of(openai)) == ("a", "b")
    assert prompt_of({"messages": "nonsense"}) == ""
    assert prompt_of({"messages": [{"role": "user", "content": 5}]}) == ""


def test_each_cli_gets_a_home_a_key_and_the_url(
    fake_model_api: FakeModelAPI, tmp_path: Path
) -> None:
    claude = fake_model_api.claude_env(tmp_path / "c", max_retries=0)
    assert (claude["ANTHROPIC_BASE_URL"], claude["CLAUDE_CODE_MAX_RETRIES"]) == (
        fake_model_api.url,
        "0",
    )
    codex = fake_model_api.codex_env(tmp_path / "x", model="gpt-5")
    config = (Path(codex["CODEX_HOME"]) / "config.toml").read_text()
    assert 'model = "gpt-5"' in config
    assert f'base_url = "{fake_model_api.url}/v1"' in config
    assert 'wire_api = "responses"' in config


def test_a_usage_limit_names_its_reset() -> None:
    reply = Reply.usage_limit(60, 1000.0)
    assert (reply.status, reply.body["resets_at"], reply.body["type"]) == (
        429,
        1060,
        "usage_limit_reached",
    )


@pytest.mark.parametrize("status", [529, 500])
def test_error_types_follow_the_status(status: int) -> None:
    expected = "overloaded_error" if status == 529 else "api_error"
    assert Reply.error(status).body["type"] == expected


def test_the_command_line_serves_its_replies_and_prints_the_environment(tmp_path: Path) -> None:
    """`python -m adws.testing.model_api` for a shell script: the env first, then serving."""
    argv = [sys.executable, "-m", "adws.testing.model_api", "--home", str(tmp_path / "home")]
    process = subprocess.Popen(
        [*argv, "--cli", "codex", "--usage-limit", "60", "--text", "one\\ntwo"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(3)]
        assert lines[0] == f"export HOME={tmp_path / 'home'}\n"
        assert lines[1] == f"export CODEX_HOME={tmp_path / 'home' / '.codex'}\n"
        config = (tmp_path / "home" / ".codex" / "config.toml").read_text()
        url = config.split('base_url = "')[1].split('"')[0]
        body = json.dumps({"input": [{"role": "user", "content": "hi"}]}).encode()
        asked = urllib.request.Request(f"{url}/responses", data=body, method="POST")  # noqa: S310 - the fake
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(asked, timeout=10)  # noqa: S310 - the fake, on 127.0.0.1
        assert refused.value.code == 429
        refused.value.close()  # an HTTPError holds the response open
        with urllib.request.urlopen(asked, timeout=10) as answered:  # noqa: S310 - as above
            assert b"one\\ntwo" in answered.read()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
