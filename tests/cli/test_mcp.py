"""`adws mcp` on the command line: the SDK missing, a bad port, and streamable HTTP on loopback."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from adws.cli import main
from tests.mcp_server.client import environment, project


def test_without_the_sdk_it_says_how_to_install_it(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # as when the mcp extra is not installed
    assert main(["mcp"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("adws: error: adws mcp needs the MCP SDK (")
    assert said.endswith("): pip install 'adws[mcp]'\n")


def test_a_port_past_the_last_is_a_usage_error(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "--http", "70000"]) == 2
    assert "--http 70000: a port is at most 65535" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.slow
def test_over_http_on_loopback_the_tools_are_listed_and_called(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from mcp.client import ClientSession  # noqa: PLC0415 - the optional SDK
    from mcp.client.streamable_http import streamable_http_client  # noqa: PLC0415

    folder = project(tmp_path)
    port = _free_port()
    argv = ["-m", "adws", "mcp", "--workflows", "workflows", "--journal", "runs.db"]
    server = subprocess.Popen(
        [sys.executable, *argv, "--http", str(port)],
        cwd=folder,
        env=environment(folder),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    answers: list[Any] = []

    async def body() -> None:
        async with (
            streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (reading, writing),
            ClientSession(reading, writing) as session,
        ):
            await session.initialize()
            answers.append([tool.name for tool in (await session.list_tools()).tools])
            started = await session.call_tool("greet", {"topic": "http"})
            run_id = started.structured_content["run_id"]
            ended = await session.call_tool("await_run", {"run_id": run_id})
            answers.append(ended.structured_content)

    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        anyio.run(body)
    finally:
        server.send_signal(signal.SIGTERM)
        out, said = server.communicate(timeout=60)
    assert said == (
        "adws mcp: warning: could not load broken.py: ValueError: no (line 1)\n"
        "adws mcp: warning: workflow 'run_status' is not served: a tool has its name\n"
    )
    names, ended = answers
    assert names[:4] == ["elsewhere", "gated", "greet", "slow"]
    assert (ended["status"], ended["outputs"]) == (
        "succeeded",
        {"summary": "all about it", "count_seen": 0},
    )
    assert (server.returncode, out) == (143, "")


@pytest.mark.slow
def test_on_stdio_sigterm_stops_the_server_with_exit_143(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    folder = project(tmp_path)
    argv = ["-m", "adws", "mcp", "--workflows", "workflows", "--journal", "runs.db"]
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    with subprocess.Popen(
        [sys.executable, *argv],
        cwd=folder,
        env=environment(folder),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as server:
        assert server.stdin is not None
        assert server.stdout is not None
        server.stdin.write(json.dumps(hello) + "\n")
        server.stdin.flush()
        answer = json.loads(server.stdout.readline())
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 143
    assert answer["result"]["serverInfo"]["name"] == "adws"
