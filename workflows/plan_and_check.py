"""Plan and make a change, then run the project's lint, tests and types; report every failure.

    ┌ attempt: plan ─► implement ┐ ─► checks: lint ∥ tests ∥ types ─► report (always)
    └──── every check failure fed back, up to three rounds ◄───────┘

`attempt` is a `sequence`: one step made of two, so `with_verification`
re-runs the whole stage, plan included, with the checks' complaints. The
checks run side by side with `fail_fast=False`: each runs to its end, and a
failed round reports every check that failed, not only the first, so the
next round can fix them all. Each check is a script the user chose
(`script_from`); `report` always writes a markdown report.

    adws run plan_and_check -i task="..." -i target_dir=. -i lint_command="ruff check ."
        -i test_command="pytest -q" -i type_command="mypy ."   (one command line)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from _common import DEMO_AGENT, save_report

from adws import (
    OutputContract,
    PipelineError,
    RetryPolicy,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
    parallel,
    sequence,
    shell_step,
    with_verification,
)

if TYPE_CHECKING:
    from returns.io import IOResult

PLAN_PROMPT = """You are working in the repository at {target_dir}.
Task: {task}

Plan the change: which files, and what in each. The project's lint, tests
and type checks run after it; plan for all three to pass. Give the plan in PLAN."""

IMPLEMENT_PROMPT = """You are working in the repository at {target_dir}.
Task: {task}

Follow this plan:
{plan}

Make the change, keeping the project's style. Summarise what you changed in SUMMARY."""

CHECKS = {"lint": "lint_command", "tests": "test_command", "types": "type_command"}
"""Each check, and the input that holds the project's own command for it."""


def check(name: str) -> Step:
    """Run the project's own command for one check, in the target repository."""
    return shell_step(name, script_from=CHECKS[name], cwd="{target_dir}", timeout=1800)


def report(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """Write a markdown report of the run: the plan and summary, or every check that failed."""
    task = str(ctx.inputs["task"])
    lines = [f"# plan_and_check: {task}", ""]
    failure = ctx.failure
    if failure is None:
        lines += ["**Result:** lint, tests and types pass.", ""]
        lines += ["## Plan", str(ctx.inputs["plan"]), "", "## Summary", str(ctx.inputs["summary"])]
    else:
        lines += [f"**Result:** {failure.error_type} at `{failure.step_name}`.", ""]
        failed = failure.context.get("failures") or [failure.to_dict()]
        lines += ["## What failed", ""]
        for error in failed:
            lines += [f"### {error['step_name']}", "```", str(error["message"])[-3000:], "```"]
    return save_report(ctx, "plan_and_check", lines)


workflow = Workflow(
    "plan_and_check",
    (
        with_verification(
            sequence(
                "attempt",
                [
                    agent_step(
                        "plan",
                        prompt=PLAN_PROMPT,
                        agent=DEMO_AGENT,
                        contract=OutputContract(("PLAN",)),
                        retry=RetryPolicy(max_attempts=2),
                        cwd="{target_dir}",
                        timeout=600,
                    ),
                    agent_step(
                        "implement",
                        prompt=IMPLEMENT_PROMPT,
                        agent=DEMO_AGENT,
                        contract=OutputContract(("SUMMARY",)),
                        retry=RetryPolicy(max_attempts=2),
                        cwd="{target_dir}",
                        timeout=1800,
                    ),
                ],
            ),
            parallel("checks", [check(name) for name in CHECKS], fail_fast=False),
            max_attempts=3,
            name="checked",
        ),
        Step(
            "report",
            report,
            always_run=True,
            reads=("task", "plan", "summary", "output_dir"),
            writes=("report_path",),
        ),
    ),
    description="Plan and make a change until lint, tests and types pass; report all failures.",
    inputs=("task", "target_dir", *CHECKS.values()),
    optional_inputs=("output_dir",),
)
