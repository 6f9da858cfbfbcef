"""CommandAgent against real processes."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from adws import Workflow, WorkflowContext, agent_step, run_workflow
from adws.agents import AgentRequest, CommandAgent
from tests.conftest import failure as bad
from tests.conftest import success as ok

# Every test here runs a real agent command.
pytestmark = pytest.mark.agent_process


def test_the_prompt_goes_to_stdin_and_stdout_is_the_answer() -> None:
    agent = CommandAgent([sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"])
    response = ok(agent(AgentRequest("hello agent", "s")))
    assert response.text == "HELLO AGENT\n"
    assert response.metadata["command"].endswith("print(sys.stdin.read().upper())'")


def test_a_string_command_is_split_like_a_shell_would(tmp_path: Path) -> None:
    agent = CommandAgent("sh -c 'cat; pwd'", cwd=str(tmp_path), env={"UNUSED": "1"})
    assert ok(agent(AgentRequest("x\n", "s"))).text == f"x\n{tmp_path}\n"
    assert repr(agent) == "CommandAgent(\"sh -c 'cat; pwd'\")"


def test_the_request_cwd_wins(tmp_path: Path) -> None:
    agent = CommandAgent(["pwd"], cwd="/")
    assert ok(agent(AgentRequest("", "s", cwd=str(tmp_path)))).text == f"{tmp_path}\n"


def test_a_non_zero_exit_is_agent_failed_with_the_code_and_stderr_tail() -> None:
    agent = CommandAgent(["sh", "-c", "echo first >&2; echo limited >&2; exit 7"])
    error = bad(agent(AgentRequest("p", "research")))
    assert (error.step_name, error.error_type) == ("research", "AgentFailed")
    assert error.message.endswith(" exited with 7: limited")
    assert error.context["returncode"] == 7
    assert error.context["stderr_tail"] == "first\nlimited\n"


def test_a_silent_failure_says_there_was_no_stderr() -> None:
    assert (
        bad(CommandAgent(["false"])(AgentRequest("p", "s"))).message
        == "agent command `false` exited with 1: no stderr"
    )


def test_a_missing_executable_is_agent_failed_saying_which() -> None:
    error = bad(CommandAgent(["no-such-agent-cli", "-p"])(AgentRequest("p", "s")))
    assert error.error_type == "AgentFailed"
    assert (
        error.message
        == "could not start agent command: no-such-agent-cli: No such file or directory"
    )


def test_a_missing_working_directory_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    error = bad(CommandAgent(["cat"], cwd=str(missing))(AgentRequest("p", "s")))
    assert (error.message, error.context["permanent"]) == (
        f"could not start agent command: working folder {missing} does not exist",
        True,
    )


def test_an_agent_steps_missing_cwd_is_named_as_a_folder_not_a_program(tmp_path: Path) -> None:
    """The step's error names the folder, not `claude: No such file or directory`."""
    missing = tmp_path / "x" / "y"
    step = agent_step("research", prompt="p", agent=CommandAgent(["cat"]), cwd="{where}")
    error = bad(
        run_workflow(Workflow("w", (step,)), WorkflowContext(inputs={"where": str(missing)}))
    )
    assert (error.step_name, error.error_type, error.message) == (
        "research",
        "AgentFailed",
        f"could not start agent command: working folder {missing} does not exist",
    )


def test_an_agent_steps_cwd_that_is_a_file_is_named(tmp_path: Path) -> None:
    afile = tmp_path / "notes.txt"
    afile.write_text("")
    step = agent_step("research", prompt="p", agent=CommandAgent(["cat"]), cwd=str(afile))
    error = bad(run_workflow(Workflow("w", (step,)), WorkflowContext()))
    assert error.message == f"could not start agent command: working folder {afile} is not a folder"


@pytest.mark.slow
def test_a_timeout_kills_the_process_group_and_is_a_timeout(tmp_path: Path) -> None:
    marker = tmp_path / "child-survived"
    script = f"(sleep 2; touch {marker}) & sleep 30"
    agent = CommandAgent(["sh", "-c", script], timeout=0.3)
    error = bad(agent(AgentRequest("p", "s")))
    assert error.error_type == "Timeout"
    assert error.message.endswith("ran past its 0.3s timeout and was killed")
    time.sleep(2.5)
    assert not marker.exists()


def test_an_empty_command_is_refused() -> None:
    with pytest.raises(ValueError, match="CommandAgent needs a command to run"):
        CommandAgent("")
