"""Let an agent change a project until the project's own checks pass.

    implement ─► checks ─(fail: output fed back)─► implement … ─► finalize (always)

The agent works in `target_dir`; `check_command` (for example `make check`)
runs there after each attempt, as the script the user chose (`script_from`:
no agent can write that input), and its failing output becomes the agent's
feedback for the next round, up to three rounds. `finalize` always writes a
markdown report of the run, including the failure if there was one.

    adws run implement_verify -i task="..." -i target_dir=. -i check_command="make check"
"""

from __future__ import annotations

from pathlib import Path

from _common import DEMO_AGENT, slug
from returns.io import IOResult, IOSuccess

from adws import (
    OutputContract,
    PipelineError,
    RetryPolicy,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
    shell_step,
    with_verification,
)

IMPLEMENT_PROMPT = """You are working in the repository at {target_dir}.
Task: {task}

Make the change, keeping the project's style. The project's checks
(`{check_command}`) run after you finish; make them pass.
Summarise what you changed in SUMMARY."""


def finalize(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """Write a markdown report of the run, success or failure."""
    task = str(ctx.inputs["task"])
    lines = [f"# implement_verify: {task}", ""]
    if ctx.failure is None:
        lines += ["**Result:** checks pass.", "", "## Summary", str(ctx.inputs["summary"])]
        checks = str(ctx.inputs.get("checks_stdout", "")).strip()
        if checks:
            lines += ["", "## Check output", "```", checks[-3000:], "```"]
    else:
        failure = ctx.failure
        lines += [
            f"**Result:** {failure.error_type} at `{failure.step_name}`.",
            "",
            "## What went wrong",
            "```",
            failure.message[-3000:],
            "```",
        ]
        feedback = failure.context.get("feedback", ())
        if feedback:
            lines += ["", "## Feedback given to the agent", *[f"- {line}" for line in feedback]]
    folder = Path(str(ctx.inputs.get("output_dir", "reports")))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"implement_verify-{slug(task)}.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return IOSuccess(ctx.merge_outputs({"report_path": str(path)}))


workflow = Workflow(
    "implement_verify",
    (
        with_verification(
            agent_step(
                "implement",
                prompt=IMPLEMENT_PROMPT,
                agent=DEMO_AGENT,
                contract=OutputContract(("SUMMARY",)),
                retry=RetryPolicy(max_attempts=2),
                cwd="{target_dir}",
                timeout=1800,
                # The agent's job is to change files in target_dir: say so, or CLIs refuse.
                edits=True,
                idle_timeout=600,
            ),
            shell_step("checks", script_from="check_command", cwd="{target_dir}", timeout=1800),
            max_attempts=3,
        ),
        # After a success it reads the summary and the checks' output too.
        Step(
            "finalize",
            finalize,
            always_run=True,
            reads=("task", "summary", "checks_stdout", "output_dir"),
            writes=("report_path",),
        ),
    ),
    description="An agent changes a project until its checks pass; always writes a report.",
    inputs=("task", "target_dir", "check_command"),
    optional_inputs=("output_dir",),
)
