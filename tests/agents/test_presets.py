"""`--agent` presets, `claude-sdk` and `--model`, through main([...])."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from adws.agents.presets import PRESETS
from adws.cli import main

# Every test here runs the fake claude and codex CLIs on PATH.
pytestmark = pytest.mark.agent_process

FLOW = """
from adws import Workflow
from adws.agents.step import agent_step
from adws.agents import ScriptedAgent
from adws.contract.validator import OutputContract

workflow = Workflow(
    "ask",
    (agent_step("ask", prompt="What are your arguments?", agent=ScriptedAgent([]), contract=OutputContract(("ARGS",))),),
)
"""

# Each fake prints what its real CLI prints with the preset's flags: claude one
# JSON result object, codex one JSON event per line.
FAKE_CLAUDE = r"""#!/bin/sh
cat >/dev/null
printf '{"type": "result", "subtype": "success", "is_error": false, "num_turns": 2,'
printf ' "result": "STATUS: done\\nARGS: %s\\n", "total_cost_usd": 0.031,' "$*"
printf ' "usage": {"input_tokens": 12, "cache_read_input_tokens": 300, "output_tokens": 40},'
printf ' "modelUsage": {"claude-sonnet-4-5": {}}, "session_id": "s-1"}\n'
"""

FAKE_CODEX = r"""#!/bin/sh
cat >/dev/null
echo '{"type": "thread.started", "thread_id": "t-1"}'
echo '{"type": "turn.started"}'
printf '{"type": "item.completed", "item": {"type": "agent_message", "text": "STATUS: done\\nARGS: %s"}}\n' "$*"
echo '{"type": "turn.completed", "usage": {"input_tokens": 900, "cached_input_tokens": 800, "output_tokens": 70}}'
"""


@pytest.fixture
def fake_clis(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "ask.py").write_text(FLOW)
    bin_dir = in_tmp / "bin"
    bin_dir.mkdir()
    for name, fake in (("claude", FAKE_CLAUDE), ("codex", FAKE_CODEX)):
        script = bin_dir / name
        script.write_text(fake)
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return in_tmp


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--agent", "claude"], "-p --output-format stream-json --verbose"),
        (
            ["--agent", "claude", "--model", "sonnet"],
            "-p --output-format stream-json --verbose --model sonnet",
        ),
        (["--agent", "codex"], "exec --json - --sandbox read-only"),
        (["--agent", "codex", "--model", "o4"], "exec --json - --model o4 --sandbox read-only"),
    ],
)
def test_presets_send_the_prompt_on_stdin_with_their_documented_flags(
    fake_clis: Path, argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "ask", "-q", "--json", "--no-journal", *argv]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["inputs"]["args"] == expected


def test_the_claude_preset_reads_cost_tokens_turns_and_model_from_its_json(
    fake_clis: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "ask", "-q", "--json", "--no-journal", "--agent", "claude"]) == 0
    summary = json.loads(capsys.readouterr().out)
    expected = {
        "cost_usd": 0.031,
        "input_tokens": 312,
        "output_tokens": 40,
        "turns": 2,
        "model": "claude-sonnet-4-5",
    }
    assert summary["usage"] == expected
    assert summary["steps"][0]["usage"] == expected


def test_the_codex_preset_reads_tokens_and_no_cost(
    fake_clis: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "ask", "-q", "--json", "--no-journal", "--agent", "codex"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["usage"] == {
        "cost_usd": None,
        "input_tokens": 900,
        "output_tokens": 70,
        "turns": 1,
        "model": None,
    }


def test_a_malformed_claude_envelope_is_agent_failed_with_its_tail(
    fake_clis: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (fake_clis / "bin" / "claude").write_text("#!/bin/sh\ncat >/dev/null\necho 'Error: not json'\n")
    assert main(["run", "ask", "-q", "--json", "--no-journal", "--agent", "claude"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["error_type"] == "AgentFailed"
    assert error["message"] == (
        "agent command `claude -p --output-format stream-json --verbose`: claude's line 1 is"
        " not valid JSON: Expecting value at line 1 column 1"
    )
    assert error["context"]["stdout_tail"] == "Error: not json\n"
    assert error["context"]["attempts"] == 3  # an agent failure is retried, like any other
    assert error["context"]["feedback"] == []  # but the model never answered: no feedback


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--model", "opus"],
            "--model needs --agent (claude-sdk, a preset such as claude, or a command)",
        ),
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
    guide = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "real-agents.md").read_text()
    for name, preset in PRESETS.items():
        assert f"`--agent {name}`" in guide
        assert " ".join(preset.argv) in guide
