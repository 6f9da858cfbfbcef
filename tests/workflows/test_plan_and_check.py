"""plan_and_check, end to end: a sequence re-run by verification, checks that all report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from adws import Workflow, WorkflowContext, run_workflow
from adws.agents import AgentRequest, ScriptedAgent
from adws.agents.swap import use_agent
from adws.cli import main
from tests.conftest import failure, success
from tests.workflows.conftest import SHIPPED

if TYPE_CHECKING:
    from collections.abc import Callable

LINT = "test -f style.ok || { echo 'lint: style.ok is missing'; exit 1; }"
TESTS = "test -f tests.ok || { echo 'tests: tests.ok is missing'; exit 2; }"
TYPES = "test -f types.ok || { echo 'types: types.ok is missing' >&2; exit 3; }"


def inputs(project: Path, reports: Path) -> WorkflowContext:
    return WorkflowContext(
        inputs={
            "task": "Make the checks pass",
            "target_dir": str(project),
            "lint_command": LINT,
            "test_command": TESTS,
            "type_command": TYPES,
            "output_dir": str(reports),
        }
    )


def creating(*names: str) -> Callable[[AgentRequest], str]:
    def answer(request: AgentRequest) -> str:
        assert request.cwd is not None
        for name in names:
            (Path(request.cwd) / name).write_text("ok\n")
        return f"STATUS: done\nSUMMARY: created {', '.join(names) or 'nothing'}"

    return answer


def test_every_failed_check_is_fed_back_and_the_whole_stage_runs_again(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    project, reports = tmp_path / "project", tmp_path / "reports"
    project.mkdir()
    agent = ScriptedAgent.by_step(
        {
            "plan": ["STATUS: done\nPLAN: create tests.ok", "STATUS: done\nPLAN: create all three"],
            "implement": [creating("tests.ok"), creating("style.ok", "types.ok")],
        }
    )
    ctx = success(
        run_workflow(use_agent(shipped["plan_and_check"], agent), inputs(project, reports))
    )
    assert [r.step_name for r in agent.requests] == ["plan", "implement", "plan", "implement"]
    assert "Follow this plan:\ncreate tests.ok\n" in agent.requests[1].prompt
    second_plan = agent.requests[2].prompt
    assert (
        "- verification round 1/3 failed: ShellFailed: `" + LINT + "` exited with 1:\n"
        "lint: style.ok is missing\n\n"
        "also failed: checks[types]: ShellFailed: `" + TYPES + "` exited with 3:\n"
        "types: types.ok is missing"
    ) in second_plan
    assert "tests.ok is missing" not in second_plan  # tests passed in round one
    assert agent.requests[3].prompt.count("also failed: checks[types]") == 1
    assert (ctx.inputs["plan"], ctx.inputs["summary"]) == (
        "create all three",
        "created style.ok, types.ok",
    )
    assert [ctx.inputs[f"{name}_returncode"] for name in ("lint", "tests", "types")] == [0, 0, 0]
    assert ctx.inputs["checks_failures"] == ()
    written = Path(str(ctx.inputs["report_path"])).read_text()
    assert written == (
        "# plan_and_check: Make the checks pass\n\n**Result:** lint, tests and types pass.\n\n"
        "## Plan\ncreate all three\n\n## Summary\ncreated style.ok, types.ok\n"
    )


def test_checks_that_never_pass_are_all_in_the_report(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    project, reports = tmp_path / "project", tmp_path / "reports"
    project.mkdir()
    agent = ScriptedAgent.by_step(
        {
            "plan": ["STATUS: done\nPLAN: nothing"] * 3,
            "implement": [creating()] * 3,
        }
    )
    error = failure(
        run_workflow(use_agent(shipped["plan_and_check"], agent), inputs(project, reports))
    )
    assert (error.step_name, error.error_type, error.context["rounds"]) == (
        "checks[lint]",
        "ShellFailed",
        3,
    )
    assert [f["step_name"] for f in error.context["failures"]] == [
        "checks[lint]",
        "checks[tests]",
        "checks[types]",
    ]
    written = (reports / "plan_and_check-make-the-checks-pass-1bbeb41d.md").read_text()
    assert "**Result:** ShellFailed at `checks[lint]`." in written
    for heading, line in (
        ("### checks[lint]", "lint: style.ok is missing"),
        ("### checks[tests]", "tests: tests.ok is missing"),
        ("### checks[types]", "types: types.ok is missing"),
    ):
        assert heading in written
        assert line in written


@pytest.mark.agent_process  # the demo agent runs
def test_the_demo_agent_through_the_cli(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = in_tmp / "project"
    project.mkdir()
    argv = [
        "run",
        "plan_and_check",
        "--workflows",
        str(SHIPPED),
        "--json",
        "-i",
        "task=Add a demo note",
        "-i",
        f"target_dir={project}",
        "-i",
        "lint_command=test -f ADWS_DEMO.md",
        "-i",
        "test_command=grep -q 'Add a demo note' ADWS_DEMO.md",
        "-i",
        "type_command=true",
    ]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [(s["name"], s["status"]) for s in summary["steps"]] == [
        ("checked", "succeeded"),
        ("report", "succeeded"),
    ]
    assert summary["inputs"]["plan"] == "describe 'Add a demo note' in ADWS_DEMO.md"
    assert (project / "ADWS_DEMO.md").read_text() == "# Demo change\n\nAdd a demo note\n"
