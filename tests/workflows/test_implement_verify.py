"""implement_verify, end to end: real check commands in a worktree of a real git repository."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from returns.io import IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io

from adws import PipelineError, Workflow, WorkflowContext, run_workflow
from adws.agents import AgentRequest, ScriptedAgent
from adws.agents.swap import use_agent
from adws.cli import main
from tests.conftest import adws_json
from tests.workflows.conftest import NOTHING_PROVED, SHIPPED
from tests.workspaces.conftest import git, make_repo

RUN = "run1"
CHECK = "test ! -f NOTES || test -f DONE || { echo 'DONE is missing'; exit 1; }"


def run(
    workflow: Workflow, agent: ScriptedAgent, ctx: WorkflowContext, tmp_path: Path
) -> IOResult[WorkflowContext, PipelineError]:
    """Run implement_verify with `agent`, its worktrees under tmp_path/wt."""
    return run_workflow(use_agent(workflow, agent), ctx, run_id=RUN, worktrees=str(tmp_path / "wt"))


def forgot(request: AgentRequest) -> str:
    """Start the work (NOTES) but forget DONE: the checks fail, as they did not before."""
    assert request.cwd is not None
    (Path(request.cwd) / "NOTES").write_text("started\n")
    return "STATUS: done\nSUMMARY: forgot the file"


def create_done(request: AgentRequest) -> str:
    assert request.cwd is not None
    (Path(request.cwd) / "DONE").write_text("ok\n")
    return "STATUS: done\nSUMMARY: created DONE"


def inputs(project: Path, reports: Path) -> WorkflowContext:
    return WorkflowContext(
        inputs={
            "task": "Create DONE",
            "target_dir": str(project),
            "check_command": CHECK,
            "output_dir": str(reports),
        }
    )


def test_failing_checks_are_fed_back_until_they_pass_and_the_change_is_committed(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    project, reports = make_repo(tmp_path / "project"), tmp_path / "reports"
    agent = ScriptedAgent([forgot, create_done])
    result = run(shipped["implement_verify"], agent, inputs(project, reports), tmp_path)
    assert isinstance(result, IOSuccess)
    folder = str((tmp_path / "wt" / RUN / "workspace").resolve())
    assert [r.cwd for r in agent.requests] == [folder, folder]
    assert "Task: Create DONE" in agent.prompts[0]
    assert f"of the repository at {project}:\n{folder}, your current directory" in agent.prompts[0]
    assert not (project / "DONE").exists()  # the checkout is never touched
    commit = git(project, "rev-parse", f"adws/{RUN}/workspace")
    assert git(project, "show", "--name-only", "--format=%s", commit) == (
        "created DONE\n\nDONE\nNOTES"
    )
    assert (
        "- verification round 1/3 failed: 1 new failure:\n- exited with 1: DONE is missing"
    ) in agent.prompts[1]
    assert "The project's tests and how they run are protected" in agent.prompts[0]
    final = unsafe_perform_io(result.unwrap())
    assert (final.inputs["summary"], final.inputs["checks_returncode"]) == ("created DONE", 0)
    assert final.inputs["workspace_commit"] == commit
    written = (reports / "implement_verify-create-done-5d6fd0cc.md").read_text()
    assert written == (
        "# implement_verify: Create DONE\n\n**Result:** checks pass.\n\n## Summary\ncreated DONE\n"
        f"\n## What the checks proved\n{NOTHING_PROVED}\n"
        f"\n## Change\n- branch: `adws/{RUN}/workspace`\n- commit: `{commit}`\n"
        "- 2 files changed, 2 insertions(+)\n  - `DONE` (+1 -0)\n  - `NOTES` (+1 -0)\n"
    )


def test_checks_that_never_pass_fail_after_three_rounds_and_the_report_says_why(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    project, reports = make_repo(tmp_path / "project"), tmp_path / "reports"
    agent = ScriptedAgent([forgot] * 3)
    result = run(shipped["implement_verify"], agent, inputs(project, reports), tmp_path)
    error = unsafe_perform_io(result.failure())
    assert (error.step_name, error.error_type, error.context["rounds"]) == (
        "checks",
        "ShellFailed",
        3,
    )
    assert len(agent.requests) == 3
    written = (reports / "implement_verify-create-done-5d6fd0cc.md").read_text()
    assert "**Result:** ShellFailed at `checks`." in written
    assert "DONE is missing" in written
    folder = (tmp_path / "wt" / RUN / "workspace").resolve()
    assert (
        f"The worktree is kept for inspection: `{folder}` (branch `adws/{RUN}/workspace`)."
    ) in written
    assert folder.is_dir()


def test_a_malformed_implement_answer_is_retried_then_blocked_runs_finalize(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    project, reports = make_repo(tmp_path / "project"), tmp_path / "reports"
    agent = ScriptedAgent(["I changed things.", "STATUS: blocked\nREASON: need credentials"])
    result = run(shipped["implement_verify"], agent, inputs(project, reports), tmp_path)
    error = unsafe_perform_io(result.failure())
    assert (error.step_name, error.error_type) == ("implement", "Blocked")
    assert "- attempt 1/2 failed: ContractViolation: STATUS missing" in agent.prompts[1]
    written = (reports / "implement_verify-create-done-5d6fd0cc.md").read_text()
    assert "**Result:** Blocked at `implement`." in written
    assert (
        "## Feedback given to the agent\n- attempt 1/2 failed: ContractViolation: STATUS missing"
        in written
    )


@pytest.mark.agent_process  # the demo agent runs
def test_the_demo_agent_through_the_cli(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = make_repo(in_tmp / "project")
    argv = [
        "run",
        "implement_verify",
        "--workflows",
        str(SHIPPED),
        "--json",
        "-i",
        "task=Add a demo note",
        "-i",
        f"target_dir={project}",
        "-i",
        "check_command=grep -q 'Add a demo note' ADWS_DEMO.md",
    ]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [(s["name"], s["status"]) for s in summary["steps"]] == [
        ("workspace", "succeeded"),
        ("finalize", "succeeded"),
    ]
    assert summary["inputs"]["summary"] == "wrote ADWS_DEMO.md describing: Add a demo note"
    branch = summary["inputs"]["workspace_branch"]
    assert git(project, "show", f"{branch}:ADWS_DEMO.md") == "# Demo change\n\nAdd a demo note"
    assert summary["inputs"]["workspace_diffstat"]["text"] == "1 file changed, 3 insertions(+)"
    assert not (project / "ADWS_DEMO.md").exists()


def test_old_failures_are_not_fed_back_and_an_edited_test_is_tampered(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    project, reports = make_repo(tmp_path / "project"), tmp_path / "reports"
    (project / "tests").mkdir()
    (project / "tests" / "test_old.py").write_text("def test_broken():\n    assert 1 == 0\n")
    git(project, "add", "tests")
    git(project, "commit", "-q", "-m", "an old failure")

    def weaken(request: AgentRequest) -> str:
        (Path(str(request.cwd)) / "tests" / "test_old.py").write_text(
            "def test_broken():\n    pass\n"
        )
        return "STATUS: done\nSUMMARY: fixed the test"

    def restore(request: AgentRequest) -> str:
        folder = Path(str(request.cwd))
        (folder / "tests" / "test_old.py").write_text("def test_broken():\n    assert 1 == 0\n")
        (folder / "DONE").write_text("ok\n")
        return "STATUS: done\nSUMMARY: created DONE"

    ctx = inputs(project, reports)
    check = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    ctx = WorkflowContext(inputs={**ctx.inputs, "check_command": check})
    agent = ScriptedAgent([weaken, restore])
    final = unsafe_perform_io(run(shipped["implement_verify"], agent, ctx, tmp_path).unwrap())
    assert (
        "- verification round 1/3 failed: Tampered: changed protected files tests/test_old.py:"
        " restore tests/test_old.py;"
    ) in agent.prompts[1]
    assert all("test_broken" not in prompt for prompt in agent.prompts)
    assert final.inputs["implement_verified_failures"] == ("tests/test_old.py::test_broken",)


@pytest.mark.agent_process  # the demo agent runs once, for the recording
def test_a_recorded_run_replays_offline_files_checks_and_report_included(tmp_path: Path) -> None:
    """The checks pass on replay only because the demo agent's file is put back in the worktree."""
    project = make_repo(tmp_path / "project")
    argv = (
        "run",
        "implement_verify",
        "--workflows",
        str(SHIPPED),
        "-i",
        "task=Add a demo note",
        "-i",
        f"target_dir={project}",
        "-i",
        "check_command=grep -q 'Add a demo note' ADWS_DEMO.md",
    )
    first_run = ("-i", f"output_dir={tmp_path / 'one'}", "--json", "-q")
    code, recorded, err = adws_json(tmp_path, *argv, *first_run, seed=1)
    assert (code, err) == (0, "")
    run_id = str(recorded["run_id"])
    code, replayed, err = adws_json(
        tmp_path,
        *argv,
        "-i",
        f"output_dir={tmp_path / 'two'}",
        "--replay",
        run_id,
        "--agent",
        "false",  # no agent answers a replay: this one would fail the run
        "--json",
        "-q",
        seed=2,
    )
    assert (code, err) == (0, "")
    assert replayed["usage"] is None
    first, again = recorded["inputs"], replayed["inputs"]
    assert isinstance(first, dict)
    assert isinstance(again, dict)
    assert again["implement_agent"] == {"replayed": f"run {run_id}"}
    assert (again["summary"], again["checks_returncode"]) == (first["summary"], 0)
    assert git(project, "rev-parse", f"{again['workspace_commit']}^{{tree}}") == git(
        project, "rev-parse", f"{first['workspace_commit']}^{{tree}}"
    )
    assert again["workspace_diffstat"] == first["workspace_diffstat"]
    [one] = (tmp_path / "one").iterdir()
    [two] = (tmp_path / "two").iterdir()
    assert two.read_text() == one.read_text().replace(
        str(first["workspace_branch"]), str(again["workspace_branch"])
    ).replace(str(first["workspace_commit"]), str(again["workspace_commit"]))
