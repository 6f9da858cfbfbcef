"""ClaudeAgent: its options, and its session child with a stand-in SDK (the real one is in test_real_clis)."""

from __future__ import annotations

import pytest

from adws.agents import AgentRequest, ClaudeAgent
from adws.agents.answers import AnswerError
from adws.agents.claude import INSTALL_HINT, sdk_stream
from adws.agents.offline import OFFLINE
from adws.engine.usage import Usage
from tests.conftest import REPO, failure, success

STAND_IN = {"sdk_module": "tests.agents.fake_sdk", "env": {"PYTHONPATH": str(REPO)}}


def test_edits_choose_the_permission_mode_and_claude_codes_prompt_is_kept() -> None:
    agent = ClaudeAgent(model="opus", cwd="/home")
    assert agent.session_options(AgentRequest("p", "s")) == {
        "model": "opus",
        "cwd": "/home",
        "permission_mode": "default",
        "system_prompt": {"type": "preset", "preset": "claude_code"},
    }
    edits = agent.session_options(AgentRequest("p", "s", edits=True, cwd="/repo"))
    assert (edits["permission_mode"], edits["cwd"]) == ("acceptEdits", "/repo")


def test_options_given_are_kept_as_given() -> None:
    agent = ClaudeAgent(permission_mode="plan", system_prompt="Be terse.", max_turns=2)
    options = agent.session_options(AgentRequest("p", "s", edits=True))
    assert (options["permission_mode"], options["system_prompt"], options["max_turns"]) == (
        "plan",
        "Be terse.",
        2,
    )
    assert (
        repr(agent) == "ClaudeAgent(max_turns=2, permission_mode='plan', system_prompt='Be terse.')"
    )


@pytest.mark.agent_process  # the switch is turned on by hand, and off before the plugin looks
def test_offline_a_claude_agent_starts_nothing() -> None:
    OFFLINE.reset(enabled=True)
    try:
        error = failure(ClaudeAgent()(AgentRequest("p", "research")))
    finally:
        OFFLINE.reset(enabled=False)
    assert error.context["offline"] is True


@pytest.mark.agent_process
def test_without_the_sdk_the_error_says_how_to_install_it_and_is_permanent() -> None:
    error = failure(ClaudeAgent(sdk_module="no_such_sdk_here")(AgentRequest("p", "research")))
    assert (error.step_name, error.error_type) == ("research", "AgentFailed")
    assert error.message == (
        f"ClaudeAgent: the Claude Agent SDK is not installed: {INSTALL_HINT}"
        " (No module named 'no_such_sdk_here')"
    )
    assert error.context["permanent"] is True


@pytest.mark.agent_process
def test_a_session_is_read_like_the_claude_cli_with_the_options_it_was_given() -> None:
    seen: list[str] = []
    request = AgentRequest("go", "s", cwd="/repo", edits=True, on_activity=seen.append)
    response = success(ClaudeAgent(model="opus", **STAND_IN)(request))  # type: ignore[arg-type] # test options
    assert response.text == (
        "STATUS: done\nSUMMARY: acceptEdits {'type': 'preset', 'preset': 'claude_code'} /repo"
    )
    assert response.usage == Usage(0.25, 3, None, 2, "opus")
    assert response.metadata["session_id"] == "sdk-1"
    assert seen == ["Read a.py"]


@pytest.mark.agent_process
def test_an_sdk_error_without_a_result_is_agent_failed_with_its_message() -> None:
    error = failure(ClaudeAgent(**STAND_IN)(AgentRequest("raise", "s")))  # type: ignore[arg-type] # test options
    assert (error.error_type, error.message) == (
        "AgentFailed",
        "ClaudeAgent: the Claude Agent SDK failed: the CLI went away",
    )
    assert error.context["session_id"] == "sdk-1"


@pytest.mark.agent_process
def test_a_rejected_rate_limit_says_when_it_resets() -> None:
    error = failure(ClaudeAgent(**STAND_IN)(AgentRequest("rate", "s")))  # type: ignore[arg-type] # test options
    assert error.error_type == "AgentUnavailable"
    assert error.message == "claude: API error 429 (usage limit): API Error: 429"
    assert error.context["resets_at"] == 2_000_000_000


def test_an_error_line_after_a_result_leaves_the_result_in_charge() -> None:
    lines = [
        '{"type": "result", "is_error": false, "result": "STATUS: done", "num_turns": 1}',
        '{"type": "adws_error", "kind": "ResultError", "message": "exit 1"}',
    ]
    assert sdk_stream("\n".join(lines)).text == "STATUS: done"


def test_a_broken_stream_is_refused_as_it_is() -> None:
    with pytest.raises(AnswerError, match="claude's line 1 is not valid JSON"):
        sdk_stream('{"type": "adws_error", "kind": "X", "message": "m"}\nnot json')
