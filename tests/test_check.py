"""check_workflow and `adws check`: a workflow's dataflow, checked before any run."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from returns.io import IOSuccess

from adws import (
    Key,
    OutputContract,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
    fan_out,
    parallel,
    shell_step,
    with_verification,
)
from adws.agents import ScriptedAgent
from adws.check import Problem, check_workflow
from adws.cli import main
from adws.discovery import discover_workflows
from tests.workflows.conftest import SHIPPED

if TYPE_CHECKING:
    from pathlib import Path

    from returns.io import IOResult

    from adws import PipelineError

AGENT = ScriptedAgent([])


def nothing(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOSuccess(ctx)


def ask(name: str, prompt: str, *keys: str) -> Step:
    return agent_step(name, prompt=prompt, agent=AGENT, contract=OutputContract(keys))


def errors(workflow: Workflow) -> list[str]:
    return [str(p) for p in check_workflow(workflow) if p.severity == "error"]


def test_a_prompt_reading_a_key_nothing_writes_is_an_error() -> None:
    workflow = Workflow(
        "w",
        (ask("plan", "Plan {topic}", "PLAN"), ask("write", "Write {plan} for {audience}", "TEXT")),
        inputs=("topic",),
    )
    assert check_workflow(workflow) == (
        Problem(
            "error",
            "write",
            "audience",
            "reads 'audience', which no earlier step writes and the workflow's inputs do not declare",
        ),
        Problem("note", "write", "text", "writes 'text', which no later step reads"),
    )


def test_a_key_written_twice_is_an_error_before_any_run() -> None:
    workflow = Workflow(
        "w", (ask("a", "x", "SUMMARY"), ask("b", "{summary}", "SUMMARY")), inputs=()
    )
    assert errors(workflow) == ["error: b: writes 'summary', which step 'a' wrote"]


def test_a_declared_read_nobody_provides_is_an_error() -> None:
    workflow = Workflow("w", (Step("use", nothing, reads=("ticket",), writes=()),))
    assert errors(workflow) == [
        "error: use: reads 'ticket', which no earlier step writes and the workflow's inputs do not declare"
    ]


def test_every_shipped_workflow_passes() -> None:
    catalog = discover_workflows(SHIPPED)
    assert {name: errors(w) for name, w in catalog.workflows.items()} == {
        "deep_research": [],
        "hello": [],
        "implement_verify": [],
    }
    assert all(p.severity == "note" for w in catalog.workflows.values() for p in check_workflow(w))


def test_a_step_writing_an_input_or_a_script_is_an_error() -> None:
    workflow = Workflow(
        "w",
        (
            ask("pick", "choose", "CHECK_COMMAND"),
            shell_step("checks", script_from="check_command"),
        ),
        inputs=("check_command",),
    )
    assert errors(workflow) == [
        (
            "error: pick: writes 'check_command', which shell step 'checks' runs as its script: only"
            " the user may choose a script"
        )
    ]
    plain = Workflow("w", (Step("s", nothing, reads=(), writes=("topic",)),), inputs=("topic",))
    assert errors(plain) == ["error: s: writes 'topic', which the workflow's inputs wrote"]


def test_an_undeclared_python_step_makes_later_missing_reads_warnings() -> None:
    workflow = Workflow("w", (Step("fetch", nothing), ask("use", "{data}", "OUT")))
    assert [str(p) for p in check_workflow(workflow)] == [
        (
            "warning: fetch: a plain Python step declaring no writes=: adws check cannot see what it"
            " writes (and reads, without reads=)"
        ),
        (
            "warning: use: reads 'data', which no earlier step declares writing; only 'fetch' might"
            " (declare its writes=)"
        ),
        "note: use: writes 'out', which no later step reads",
    ]


def test_combinators_combine_their_childrens_reads_and_writes() -> None:
    main_step = ask("implement", "Do {task}", "SUMMARY")
    checks = shell_step("checks", "make -C {target_dir} test")
    both = parallel(
        "reviews", [ask("style", "{summary}", "STYLE"), ask("tests", "{summary}", "TESTS")]
    )
    each = fan_out("per_file", ask("file", "{item} of {summary}", "FIX"), over="files")
    workflow = Workflow(
        "w",
        (with_verification(main_step, checks), both, each),
        inputs=("task", "target_dir", "files"),
    )
    assert [str(p) for p in check_workflow(workflow)] == [
        f"note: implement_verified: writes '{key}', which no later step reads"
        for key in ("checks_stdout", "checks_stderr", "checks_returncode")
    ] + [
        f"note: reviews: writes '{key}', which no later step reads"
        for key in ("style", "tests", "reviews_failures")
    ] + [
        f"note: per_file: writes '{key}', which no later step reads"
        for key in ("per_file", "per_file_failures")
    ]


def test_two_branches_writing_one_key_is_an_error() -> None:
    """Contracts would refuse this at definition; declared writes are caught by the check."""
    branches = [Step(name, nothing, reads=(), writes=("note",)) for name in ("a", "b")]
    assert errors(Workflow("w", (parallel("reviews", branches),))) == [
        "error: reviews: two of its branches write 'note'"
    ]


def test_declared_reads_and_writes_override_what_is_inferred() -> None:
    summary = Key("summary", str)
    step = Step("summarise", nothing, reads=(Key("text", str),), writes=(summary,))
    workflow = Workflow(
        "w", (step, Step("show", nothing, reads=(summary,), writes=())), inputs=("text",)
    )
    assert check_workflow(workflow) == ()


def test_adws_check_prints_each_workflow_and_exits_1_on_an_error(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = in_tmp / "workflows"
    folder.mkdir()
    (folder / "broken.py").write_text(
        "from adws import Workflow, agent_step\nfrom adws.agents import ScriptedAgent\n"
        "workflow = Workflow('broken', (agent_step('a', prompt='{ghost}', agent=ScriptedAgent([])),))\n"
    )
    assert main(["check"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "broken: 1 error",
        "  error: a: reads 'ghost', which no earlier step writes and the workflow's inputs do not declare",
    ]
    assert main(["check", "broken", "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {
        "broken": [
            {
                "severity": "error",
                "step": "a",
                "key": "ghost",
                "message": "reads 'ghost', which no earlier step writes and the workflow's inputs do not declare",
            }
        ]
    }
    assert main(["list"]) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        "warning: broken fails adws check (1 error: error: a: reads 'ghost', which no earlier"
        " step writes and the workflow's inputs do not declare); run `adws check broken`\n"
    )
    assert main(["check", "nope"]) == 2


def test_adws_check_passes_the_shipped_workflows(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--workflows", str(SHIPPED), "hello", "implement_verify"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "hello: ok"


def test_a_module_that_does_not_load_fails_the_check(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "bad.py").write_text("raise RuntimeError('no')\n")
    assert main(["check"]) == 1
    assert "warning: could not load" in capsys.readouterr().err
