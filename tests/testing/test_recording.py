"""RecordingAgent: record once, replay after; a miss shows what changed."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from adws import OutputContract, Workflow, agent_step
from adws.agents import AgentRequest, AgentResponse, ScriptedAgent
from adws.engine.usage import Usage
from adws.runs.recording import Recording
from adws.testing import RecordingAgent, run
from tests.conftest import failure, success

if TYPE_CHECKING:
    from pathlib import Path

ANSWER = "STATUS: done\nSUMMARY: recorded\n"


def flow(agent: RecordingAgent, prompt: str = "Summarise {topic}.") -> Workflow:
    contract = OutputContract(("SUMMARY",))
    step = agent_step("summarise", prompt=prompt, agent=agent, contract=contract)
    return Workflow("w", (step,), inputs=("topic",))


def test_record_then_replay_without_the_inner_agent(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    inner = ScriptedAgent([lambda _r: AgentResponse(ANSWER, {}, Usage(0.25))])
    recorded = run(flow(RecordingAgent(inner, path, mode="record")), {"topic": "x"})
    assert (recorded.status, recorded.usage) == ("succeeded", Usage(0.25))
    [entry] = json.loads(path.read_text())["answers"]
    assert (entry["step"], entry["text"], entry["usage"]["cost_usd"]) == ("summarise", ANSWER, 0.25)
    replayed = run(flow(RecordingAgent(None, path)), {"topic": "x"})
    assert (replayed.status, replayed.inputs["summary"]) == ("succeeded", "recorded")
    assert replayed.usage is None  # nothing was spent on a replay


def test_a_replay_miss_shows_a_diff_against_the_closest_recorded_prompt(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    run(flow(RecordingAgent(ScriptedAgent([ANSWER]), path, "record")), {"topic": "x"})
    missed = run(
        flow(RecordingAgent(None, path), prompt="Summarise {topic} briefly."), {"topic": "x"}
    )
    error = missed.error
    assert error is not None
    assert error.message.startswith(
        f"RecordingAgent({str(path)!r}, mode='replay') has no answer for this prompt of step"
        " 'summarise'; the closest recorded prompt differs:\n--- recorded\n+++ asked\n"
    )
    assert "-Summarise x.\n+Summarise x briefly." in error.message


def test_a_replay_of_a_step_never_recorded_says_how_to_record(tmp_path: Path) -> None:
    agent = RecordingAgent(None, tmp_path / "none.json")
    error = failure(agent(AgentRequest("p", "plan")))
    assert error.message == (
        f"RecordingAgent({str(tmp_path / 'none.json')!r}, mode='replay') has no answer recorded"
        " for step 'plan'; record one with mode='record'"
    )


def test_auto_replays_what_it_has_and_records_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    inner = ScriptedAgent(["first", "second"])
    agent = RecordingAgent(inner, path, mode="auto")
    assert [success(agent(AgentRequest(p, "s"))).text for p in ("a", "b", "a")] == [
        "first",
        "second",
        "first",
    ]
    assert inner.prompts == ("a", "b")


def test_a_failed_answer_is_not_recorded(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    failure(RecordingAgent(ScriptedAgent([]), path, mode="record")(AgentRequest("p", "s")))
    assert not path.exists()


def test_one_recording_keeps_every_step_it_is_shared_by(tmp_path: Path) -> None:
    recording = Recording(tmp_path / "answers.json")
    for step in ("a", "b"):
        RecordingAgent(ScriptedAgent([step]), recording, "record")(AgentRequest("p", step))
    assert [e["step"] for e in json.loads(recording.path.read_text())["answers"]] == ["a", "b"]


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        ("not json", "JSONDecodeError"),
        ('{"answers": [1]}', "not a list of answers"),
        ('{"answers": 5}', "not a list of answers"),
        ("{}", "KeyError"),
    ],
)
def test_a_file_that_is_not_a_recording_is_refused(tmp_path: Path, content: str, kind: str) -> None:
    path = tmp_path / "answers.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=f"is not a recording of agent answers \\({kind}\\)"):
        RecordingAgent(None, path)


@pytest.mark.parametrize(
    ("inner", "mode", "message"),
    [
        (None, "record", "RecordingAgent: mode 'record' needs an inner agent to record"),
        (None, "later", "RecordingAgent: mode must be one of replay, record, auto, got 'later'"),
    ],
)
def test_impossible_modes_are_refused(tmp_path: Path, inner: None, mode: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RecordingAgent(inner, tmp_path / "a.json", mode)  # type: ignore[arg-type] # the mistake under test
