"""Nothing is not a fix: an agent step that edits and changed no file fails `NoChange`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from returns.io import IOResult

from adws import (
    OutputContract,
    PipelineError,
    RetryPolicy,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
    run_workflow,
    shell_step,
    with_verification,
    worktree,
)
from adws.agents import AgentRequest, ScriptedAgent
from adws.agents.step import AgentSpec
from tests.conftest import failure, success
from tests.workspaces.conftest import make_repo

DONE = "STATUS: done\nSUMMARY: did it"


def editor(agent: ScriptedAgent, **options: object) -> Step:
    return agent_step(
        "edit",
        prompt="Change the notes.",
        agent=agent,
        contract=OutputContract(("SUMMARY",)),
        retry=RetryPolicy(max_attempts=3),
        edits=True,
        **options,  # type: ignore[arg-type] # agent_step's keywords, as each test gives them
    )


def writes(name: str, text: str = "x\n", answer: str = DONE) -> Callable[[AgentRequest], str]:
    def act(request: AgentRequest) -> str:
        Path(str(request.cwd or "."), name).write_text(text)
        return answer

    return act


def in_worktree(step: Step, tmp_path: Path) -> IOResult[WorkflowContext, PipelineError]:
    repo = make_repo(tmp_path / "repo")
    return run_workflow(
        Workflow("w", (worktree(step, name="work"),)),
        WorkflowContext(inputs={"target_dir": str(repo)}),
        run_id="r1",
        worktrees=str(tmp_path / "wt"),
    )


def test_an_agent_that_changed_nothing_is_asked_again_then_fails_no_change(tmp_path: Path) -> None:
    agent = ScriptedAgent([DONE, DONE, DONE])
    error = failure(in_worktree(editor(agent), tmp_path))
    folder = str((tmp_path / "wt" / "r1" / "work").resolve())
    assert (error.step_name, error.error_type, error.context["folder"]) == (
        "edit",
        "NoChange",
        folder,
    )
    assert error.message == (
        "you changed no file: the task needs a change to the files in your working folder;"
        " make it, then answer"
    )
    assert len(agent.requests) == 3
    assert f"- attempt 1/3 failed: NoChange: {error.message}" in agent.prompts[1]


def test_a_change_on_the_second_try_passes(tmp_path: Path) -> None:
    agent = ScriptedAgent([DONE, writes("NOTES")])
    final = success(in_worktree(editor(agent), tmp_path))
    assert final.inputs["work_diffstat"]["text"] == "1 file changed, 1 insertion(+)"


def test_a_retry_that_only_mends_its_answer_has_changed_something(tmp_path: Path) -> None:
    agent = ScriptedAgent([writes("NOTES", answer="I changed the notes."), DONE])
    success(in_worktree(editor(agent), tmp_path))
    assert "ContractViolation: STATUS missing" in agent.prompts[1]


def test_allow_no_change_lets_a_step_end_without_one(tmp_path: Path) -> None:
    step = editor(ScriptedAgent([DONE]), allow_no_change=True)
    final = success(in_worktree(step, tmp_path))
    assert final.inputs["work_diffstat"]["text"] == "no changes"
    assert isinstance(step.spec, AgentSpec)
    assert step.spec == AgentSpec(
        "Change the notes.",
        step.spec.agent,
        OutputContract(("SUMMARY",)),
        None,
        None,
        edits=True,
        allow_no_change=True,
    )


def test_a_step_that_does_not_edit_is_never_judged(tmp_path: Path) -> None:
    step = agent_step(
        "ask", prompt="Say hi.", agent=ScriptedAgent([DONE]), contract=OutputContract(("SUMMARY",))
    )
    success(in_worktree(step, tmp_path))


def test_caches_a_check_leaves_are_no_change_but_a_written_file_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # outside a worktree: the step's folder is the current one

    def cache_only(request: AgentRequest) -> str:
        cache = Path(str(request.cwd or "."), "__pycache__")
        cache.mkdir()
        (cache / "x.pyc").write_bytes(b"\0")
        return DONE

    error = failure(run_workflow(Workflow("w", (editor(ScriptedAgent([cache_only, DONE, DONE])),))))
    assert error.error_type == "NoChange"
    success(run_workflow(Workflow("w", (editor(ScriptedAgent([writes("kept.txt")])),))))


def test_each_round_of_a_verification_must_change_something(tmp_path: Path) -> None:
    agent = ScriptedAgent([writes("NOTES", "one\n"), DONE, DONE, DONE])
    checks = shell_step("checks", "grep -q two NOTES")
    step = with_verification(editor(agent), checks, max_attempts=2)
    error = failure(in_worktree(step, tmp_path))
    assert (error.error_type, len(agent.requests)) == ("NoChange", 4)
    assert "verification round 1/2 failed: ShellFailed" in agent.prompts[1]
