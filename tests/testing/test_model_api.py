"""The fake model API over plain HTTP: what each reply looks like on the wire."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Final

import pytest

from adws.testing import FakeModelAPI, Reply, model_api
from adws.testing._wire import prompt_of
from adws.testing.replies import replies_from_json
from tests.agents.clis import needs, on_path
from tests.conftest import REPO


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


SERVE_AND_ASK: Final = """\
#!/bin/sh
# Serve the fake model API, point claude at it, ask once; the server stops on every path.
set -eu
"$PYTHON" -m adws.testing.model_api --replies "$1" --env-file "$2" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
tries=0
until [ -s "$2" ]; do
    kill -0 "$server" 2>/dev/null || { wait "$server" || exit $?; exit 1; }
    tries=$((tries + 1))
    [ "$tries" -lt 300 ] || { echo "no env file after 30s" >&2; exit 1; }
    sleep 0.1
done
. "$2"
claude -p "$3" --output-format text
kill "$server"
wait "$server"
echo "server exited $?"
"""


def serve_and_ask(tmp_path: Path, replies: object, prompt: str) -> subprocess.CompletedProcess[str]:
    """Run the shell script above with `replies` as the replies file."""
    script = tmp_path / "ask.sh"
    script.write_text(SERVE_AND_ASK)
    (tmp_path / "replies.json").write_text(json.dumps(replies))
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "PYTHONPATH": str(REPO),
        "PATH": on_path(),
    }
    return subprocess.run(
        [
            "/bin/sh",
            str(script),
            str(tmp_path / "replies.json"),
            str(tmp_path / "fake.env"),
            prompt,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@needs("claude")
def test_a_shell_script_runs_the_real_claude_on_the_replies_file_by_marker(
    tmp_path: Path,
) -> None:
    """The env file, sourced, points the real claude at the server; SIGTERM ends it with 0."""
    replies = {"replies": ["in order"], "by_marker": {"PLAN": [{"text": "the plan"}]}}
    done = serve_and_ask(tmp_path, replies, "write the PLAN")
    assert (done.returncode, done.stdout) == (0, "the plan\nserver exited 0\n")


@needs("claude")
def test_a_shell_script_gets_the_replies_in_order_without_a_marker(tmp_path: Path) -> None:
    done = serve_and_ask(tmp_path, ["first answer"], "anything")
    assert (done.returncode, done.stdout) == (0, "first answer\nserver exited 0\n")
    env = (tmp_path / "fake.env").read_text()
    assert "export CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-adws-fake-token\n" in env
    assert "export ADWS_FAKE_API_KEY=sk-adws-fake-key\n" in env
    home = env.split("export HOME=")[1].split("\n")[0]
    assert not Path(home).exists()  # the temporary home went with the server


def test_a_shell_script_stops_when_the_replies_file_is_wrong(tmp_path: Path) -> None:
    """The server exits 2 naming the file and the place; the script ends with it."""
    done = serve_and_ask(tmp_path, {"replies": [{"text": "x", "delay": "slow"}]}, "x")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"adws.testing.model_api: --replies {tmp_path / 'replies.json'}:"
        ' $.replies[0].delay: expected int or float, got "slow"\n'
    )
    assert not (tmp_path / "fake.env").exists()


def test_a_missing_replies_file_exits_2_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        model_api.main(["--replies", str(tmp_path / "none.json")])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        f"adws.testing.model_api: --replies {tmp_path / 'none.json'}: No such file or directory\n"
    )


def test_a_port_in_use_exits_2_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as exited:
            model_api.main(["--port", str(port)])
    assert exited.value.code == 2
    assert capsys.readouterr().err.startswith(
        f"adws.testing.model_api: cannot serve on port {port}: "
    )


def test_a_given_port_is_the_one_served() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with FakeModelAPI(port) as api:
        assert api.url == f"http://127.0.0.1:{port}"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"replies": "hi"}, '$.replies: expected a list of replies, got "hi"'),
        ({"by_marker": []}, "$.by_marker: expected an object of marker: replies, got []"),
        (
            {"other": []},
            '$: expected a list of replies or an object with "replies" and "by_marker"',
        ),
        (
            [{"text": "a", "drop": True}],
            "$[0]: a reply is a string or an object with one of text, error, usage_limit, tool, drop",
        ),
        (
            [3],
            "$[0]: a reply is a string or an object with one of text, error, usage_limit, tool, drop",
        ),
        ([{"error": True}], "$[0].error: expected int, got true"),
        ([{"drop": 1}], "$[0].drop: expected bool, got 1"),
        (
            {"by_marker": {"M": [{"tool": "Write", "wait": 1}]}},
            "$.by_marker.M[0].wait: not an option of a tool reply (its options: arguments)",
        ),
        (
            [{"drop": True, "delay": 1}],
            "$[0].delay: not an option of a drop reply (its options: none)",
        ),
        ([{"text": "a", "input_tokens": True}], "$[0].input_tokens: expected int, got true"),
    ],
)
def test_a_wrong_replies_file_names_the_place(data: object, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as wrong:
        replies_from_json(data, 0.0)
    assert str(wrong.value) == message


def test_every_kind_of_reply_reads_from_json() -> None:
    queues = replies_from_json(
        [
            "plain",
            {"text": "slow", "delay": 0.5, "input_tokens": 3, "output_tokens": 4},
            {"error": 429, "message": "slow down", "retry_after": 2, "error_type": "rate"},
            {"usage_limit": 60},
            {"tool": "Write", "arguments": {"file_path": "a.txt", "content": "hi"}},
            {"tool": "Bash"},
            {"drop": True},
        ],
        1000.0,
    )
    assert queues == {
        None: [
            Reply.text("plain"),
            Reply.text("slow", delay=0.5, input_tokens=3, output_tokens=4),
            Reply.error(429, "slow down", retry_after=2, error_type="rate"),
            Reply.usage_limit(60, 1000.0),
            Reply.tool("Write", {"file_path": "a.txt", "content": "hi"}),
            Reply.tool("Bash", {}),
            Reply.drop(),
        ]
    }
