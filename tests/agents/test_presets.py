"""`--agent` presets, `claude-sdk` and `--model`, through main([...])."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from adws.agents.presets import PRESETS
from adws.cli import main

FLOW = """
from adws import Workflow
from adws.agent_steps import agent_step
from adws.agents import ScriptedAgent
from adws.contract import OutputContract

workflow = Workflow(
    "ask",
    (agent_step("ask", prompt="What are your arguments?", agent=ScriptedAgent([]), contract=OutputContract(("ARGS",))),),
)
"""

FAKE_CLI = """#!/bin/sh
prompt=$(cat)
echo "I read $(printf '%s' "$prompt" | head -c 24)"
echo "STATUS: done"
echo "ARGS: $*"
"""


@pytest.fixture
def fake_clis(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "ask.py").write_text(FLOW)
    bin_dir = in_tmp / "bin"
    bin_dir.mkdir()
    for name in ("claude", "codex"):
        script = bin_dir / name
        script.write_text(FAKE_CLI)
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return in_tmp


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--agent", "claude"], "-p --output-format text"),
        (["--agent", "claude", "--model", "sonnet"], "-p --output-format text --model sonnet"),
        (["--agent", "codex"], "exec --sandbox workspace-write -"),
        (["--agent", "codex", "--model", "o4"], "exec --sandbox workspace-write - --model o4"),
    ],
)
def test_presets_send_the_prompt_on_stdin_with_their_documented_flags(
    fake_clis: Path, argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "ask", "-q", "--json", "--no-journal", *argv]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["inputs"]["args"] == expected


def test_claude_sdk_without_the_extra_fails_saying_how_to_install(
    fake_clis: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "claude_agent_sdk", None)
    assert (
        main(
            [
                "run",
                "ask",
                "-q",
                "--json",
                "--no-journal",
                "--agent",
                "claude-sdk",
                "--model",
                "opus",
            ]
        )
        == 1
    )
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["error_type"] == "AgentFailed"
    assert "pip install 'adws[claude]'" in error["message"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "opus"], "--model needs --agent (claude-sdk or a preset such as claude)"),
        (
            ["--agent", "my-agent --fast", "--model", "opus"],
            "--model works with --agent claude-sdk or a preset (claude, codex)",
        ),
    ],
)
def test_model_without_a_backend_that_takes_one_is_a_usage_error(
    fake_clis: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "ask", *argv]) == 2
    assert capsys.readouterr().err == f"adws: error: {message}\n"


def test_every_preset_is_documented() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for name, preset in PRESETS.items():
        assert f"`--agent {name}`" in readme
        assert " ".join(preset.argv) in readme
