"""`adws run --record DIR` and `--replay DIR`: a real agent's answers, kept and replayed."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import pytest

from adws.cli import main
from tests.workflows.conftest import SHIPPED

if TYPE_CHECKING:
    from pathlib import Path

RUN = ["run", "deep_research", "--workflows", str(SHIPPED), "-q", "--json", "--no-journal"]


@pytest.mark.agent_process  # the demo agent answers while recording
def test_a_recorded_run_replays_without_its_agent(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = ["-i", "topic=tea", "-i", f"output_dir={in_tmp}"]
    assert main([*RUN, *inputs, "--record", "answers"]) == 0
    recorded = json.loads(capsys.readouterr().out)
    kept = json.loads((in_tmp / "answers" / "deep_research.json").read_text())["answers"]
    assert sorted({entry["step"] for entry in kept}) == ["research", "verify", "write"]
    # The replay asks no agent: a command that cannot run proves it.
    broken = ["--agent", f"{sys.executable} -c 'raise SystemExit(9)'"]
    assert main([*RUN, *inputs, "--replay", "answers", *broken]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["inputs"]["final_report"] == recorded["inputs"]["final_report"]
    assert replayed["usage"] is None  # a replay spends nothing


def test_a_replay_of_another_prompt_fails_with_a_diff(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = in_tmp / "answers"
    folder.mkdir()
    entry = {
        "step": "research",
        "prompt_sha256": "0",
        "prompt": "Research this topic: coffee",
        "text": "x",
    }
    (folder / "deep_research.json").write_text(json.dumps({"version": 1, "answers": [entry]}))
    assert main([*RUN, "-i", "topic=tea", "--replay", str(folder)]) == 1
    message = json.loads(capsys.readouterr().out)["error"]["message"]
    assert "has no answer for this prompt of step 'research'" in message
    assert "\n-Research this topic: coffee\n" in message
    assert "\n+Research this topic: tea\n" in message


def test_a_broken_recording_is_a_usage_error(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "answers").mkdir()
    (in_tmp / "answers" / "deep_research.json").write_text("[")
    assert main([*RUN, "-i", "topic=tea", "--replay", "answers"]) == 2
    assert capsys.readouterr().err == (
        "adws: error: answers/deep_research.json is not a recording of agent answers"
        " (JSONDecodeError)\n"
    )
