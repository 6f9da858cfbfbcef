"""Scripts an earlier step wrote: `shell_step(script_from=KEY, allow_generated=True)`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from adws import (
    OutputContract,
    Workflow,
    WorkflowContext,
    agent_step,
    run_workflow,
    shell_step,
    with_verification,
)
from adws.agents import AgentRequest, ScriptedAgent
from adws.check import check_workflow
from adws.journal import Journal, JournalObserver
from adws.render import show_text
from tests.conftest import failure, success

if TYPE_CHECKING:
    from collections.abc import Callable

VERIFY = 'test -f hello.txt && grep -qx "hello" hello.txt || { echo "hello.txt is wrong"; exit 1; }'


def loader(agent: ScriptedAgent) -> Workflow:
    """The Loader runtime's loop: plan once, then execute <-> the plan's own checks."""
    plan = agent_step(
        "plan",
        prompt="Plan this task: {task}",
        agent=agent,
        contract=OutputContract(("PLAN", "VERIFY_SCRIPT")),
    )
    execute = agent_step(
        "execute",
        prompt="Carry out this plan: {plan}",
        agent=agent,
        contract=OutputContract(("SUMMARY",)),
        cwd="{target_dir}",
    )
    verify = shell_step(
        "verify", script_from="verify_script", allow_generated=True, cwd="{target_dir}"
    )
    return Workflow(
        "loader",
        (plan, with_verification(execute, verify, max_attempts=3)),
        inputs=("task", "target_dir"),
    )


def write(text: str) -> Callable[[AgentRequest], str]:
    def answer(request: AgentRequest) -> str:
        assert request.cwd is not None
        (Path(request.cwd) / "hello.txt").write_text(text)
        return f"STATUS: done\nSUMMARY: wrote {text.strip()!r}"

    return answer


def test_the_loader_flow_runs_the_plans_commands_and_a_failed_verify_returns_to_execute(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent = ScriptedAgent.by_step(
        {
            "plan": [f"STATUS: done\nPLAN: write hello.txt saying hello\nVERIFY_SCRIPT: {VERIFY}"],
            "execute": [write("hullo\n"), write("hello\n")],
        }
    )
    journal = Journal(tmp_path / "runs.db")
    ctx = success(
        run_workflow(
            loader(agent),
            WorkflowContext(inputs={"task": "greet", "target_dir": str(project)}),
            observers=[JournalObserver(journal, "f")],
            run_id="r",
        )
    )
    assert [request.step_name for request in agent.requests] == ["plan", "execute", "execute"]
    second = agent.requests[2].prompt
    assert "- verification round 1/3 failed: ShellFailed: `" + VERIFY + "` exited with 1:" in second
    assert "hello.txt is wrong" in second
    assert (project / "hello.txt").read_text() == "hello\n"
    assert (ctx.inputs["verify_ran"], ctx.inputs["verify_returncode"]) == (VERIFY, 0)
    [_plan, round_row, stage_row] = journal.attempts("r")
    assert (round_row.status, round_row.step) == ("round_failed", stage_row.step)
    assert (stage_row.outputs() or {})["verify_ran"] == VERIFY


def test_a_failing_generated_script_keeps_the_exact_script_with_the_error(tmp_path: Path) -> None:
    agent = ScriptedAgent(
        ["STATUS: done\nPLAN: p\nVERIFY_SCRIPT: echo `echo checked`; exit 4"]
        + ["STATUS: done\nSUMMARY: s"] * 3
    )
    error = failure(
        run_workflow(
            loader(agent), WorkflowContext(inputs={"task": "t", "target_dir": str(tmp_path)})
        )
    )
    assert (error.step_name, error.context["rounds"]) == ("verify", 3)
    assert error.context["script"] == "echo `echo checked`; exit 4"
    assert error.context["command"] == "echo `echo checked`; exit 4"
    assert error.message == "`echo `echo checked`; exit 4` exited with 4:\nchecked"


def test_check_notes_it_and_show_marks_it() -> None:
    workflow = loader(ScriptedAgent([]))
    notes = [str(problem) for problem in check_workflow(workflow)]
    assert notes == [
        (
            "note: verify: runs the script in 'verify_script', which step 'plan' wrote"
            " (allow_generated=True): what that step's agent wrote runs as code"
        ),
        "note: execute_verified: writes 'summary', which no later step reads",
    ]
    assert show_text(workflow).splitlines()[-1] == (
        "     2. verify: shell · 1 attempt · runs the script in verify_script, which an earlier"
        " step wrote (allow_generated: GENERATED CODE)"
    )


def test_without_allow_generated_the_script_must_be_the_users() -> None:
    with pytest.raises(ValueError, match="must be one of the workflow's inputs"):
        Workflow("w", (shell_step("verify", script_from="verify_script"),))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"command": "true", "allow_generated": True},
            "shell_step 's': allow_generated=True goes with script_from=KEY (a script a step wrote)",
        ),
        (
            {"allow_generated": True},
            "shell_step 's': give either a command or script_from=INPUT, not both",
        ),
        (
            {"script_from": "Bad Key"},
            "shell_step 's': script_from='Bad Key' is not an input name (lower_snake_case)",
        ),
    ],
)
def test_impossible_generated_script_steps_are_refused(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=r"^shell_step") as raised:
        shell_step("s", **kwargs)  # type: ignore[arg-type] # each case on purpose
    assert str(raised.value) == message


def test_allow_generated_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="allow_generated"):
        shell_step("s", script_from="x", allow_generated="yes")  # type: ignore[arg-type] # on purpose


def test_a_generated_scripts_record_counts_among_a_branchs_known_outputs() -> None:
    from adws import parallel  # noqa: PLC0415 - only this test builds one

    verify = shell_step("verify", script_from="script", allow_generated=True)
    ask = agent_step(
        "ask", prompt="p", agent=ScriptedAgent([]), contract=OutputContract(("VERIFY_RAN",))
    )
    with pytest.raises(ValueError, match="both write 'verify_ran'"):
        parallel("p", [verify, ask])
