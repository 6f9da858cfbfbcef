"""The real claude CLI (pinned) calls `adws mcp`'s tools, its model the fake API scripting the calls.

`claude -p --mcp-config` starts `adws mcp` as Claude Code would after
`claude mcp add adws -- adws mcp`; the fake model asks for the workflow's
tool, then for `await_run` with the run id it read in the tool's answer,
then answers. The run is in the journal, ended; the tools claude saw are
those its init event lists.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from adws.journal import Journal
from adws.testing import FakeModelAPI, Reply
from tests.agents.clis import BIN, needs
from tests.mcp_server.client import environment, project

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install -e '.[mcp]'")
pytestmark = [pytest.mark.agent_cli, pytest.mark.slow, needs("claude")]

SERVE = ["-m", "adws", "mcp", "--workflows"]
SERVED = [
    "mcp__adws__elsewhere",
    "mcp__adws__gated",
    "mcp__adws__greet",
    "mcp__adws__slow",
    "mcp__adws__run_status",
    "mcp__adws__await_run",
    "mcp__adws__list_runs",
    "mcp__adws__cancel_run",
]


def _run_id_answered(api: FakeModelAPI) -> dict[str, Any]:
    """Read the run id from the tool's answer in the conversation, as the model would."""
    body = api.requests[-1]["body"]
    results = [
        block
        for turn in body["messages"]
        if isinstance(turn["content"], list)
        for block in turn["content"]
        if block.get("type") == "tool_result"
    ]
    found = re.search(r'run_id\\*": *\\*"([0-9a-f]+)', json.dumps(results))
    assert found is not None, results
    return {"run_id": found.group(1), "timeout": 60}


def test_claude_calls_a_workflow_tool_and_awaits_the_run_it_started(
    fake_model_api: FakeModelAPI, tmp_path: Path
) -> None:
    folder = project(tmp_path)
    journal = folder / "runs.db"
    config = {
        "mcpServers": {
            "adws": {
                "command": sys.executable,
                "args": [*SERVE, str(folder / "workflows"), "--journal", str(journal)],
                "env": {"PYTHONPATH": environment(folder)["PYTHONPATH"]},
            }
        }
    }
    (folder / "mcp.json").write_text(json.dumps(config))
    fake_model_api.script(
        Reply.tool("mcp__adws__greet", {"topic": "rust"}),
        Reply.tool("mcp__adws__await_run", lambda _prompt: _run_id_answered(fake_model_api)),
        Reply.text("The run succeeded: all about it."),
        marker="GREET-RUST",
    )
    env = {**environment(folder), **fake_model_api.claude_env(tmp_path / "home")}
    allowed = "mcp__adws__greet,mcp__adws__await_run"
    claude = [str(BIN / "claude"), "-p", "GREET-RUST: greet rust with adws, then await it."]
    claude += ["--output-format", "stream-json", "--verbose", "--strict-mcp-config"]
    claude += ["--mcp-config", str(folder / "mcp.json"), "--allowedTools", allowed]
    done = subprocess.run(
        claude, cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    init = next(event for event in events if event.get("subtype") == "init")
    assert [tool for tool in init["tools"] if tool.startswith("mcp__adws__")] == sorted(SERVED)
    assert init["mcp_servers"] == [{"name": "adws", "status": "connected", "source": "dynamic"}]
    assert done.returncode == 0, done.stderr
    assert events[-1]["result"] == "The run succeeded: all about it."
    (run,) = Journal(journal, readonly=True).runs()
    assert (run.workflow, run.status) == ("greet", "succeeded")
