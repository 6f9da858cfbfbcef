"""Let an agent change a project, in a worktree of its own, until the project's checks pass.

    workspace: [ reproduce (if asked) ─► targets ─►
                 implement ─► checks ─(fail: output fed back)─► implement … ] ─► finalize (always)

`target_dir` is a git repository; the agent never touches its checkout. It
works in a fresh `git worktree` on the branch `adws/<run>/workspace` (the
folder is the agent's current directory), and `check_command` (for example
`make check`) runs after each attempt, as the script the user chose
(`script_from`: no agent can write that input), in a verify tree adws builds
of the round's change. The checks first run once on the untouched worktree
(the baseline).

What must pass: the tests the `must_pass` input names (ids or globs,
`tests/test_calc.py::test_add`), and with `-i reproduce=yes` the tests an
agent first writes to show the problem (they must fail on the untouched
code). Each target must run and pass (pytest lists passes with `-rA`:
`check_command="pytest -rA"`), and no check may newly fail; what still
fails comes back to the agent, targets first, up to three rounds. With
neither input the change is only checked to break nothing, and the report
says so. A change to the project's tests or to how they run (conftest,
pytest's configuration, `sitecustomize.py`, `*.pth`) fails the round
`Tampered`; an answer with no file changed fails `NoChange`. When the
checks pass, the change is committed on that branch (the agent's SUMMARY is
the message) and the worktree removed; when they never pass, the worktree
is kept for inspection and `adws resume` goes on in it. `finalize` always
writes a markdown report: the branch, commit and diffstat, what the checks
proved, or the failure.

    adws run implement_verify -i task="..." -i target_dir=. -i check_command="pytest -rA" \
        -i must_pass="tests/test_calc.py::test_add"      (or: -i reproduce=yes)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from _common import (
    change_lines,
    proved_lines,
    save_report,
    verified_workspace,
)

from adws import (
    PipelineError,
    Step,
    Workflow,
    WorkflowContext,
)

if TYPE_CHECKING:
    from returns.io import IOResult

IMPLEMENT_PROMPT = """You are working in a git worktree of the repository at {target_dir}:
{worktree}, your current directory. Change files there only.
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
        lines += proved_lines(ctx.inputs, None)
        lines += ["", "## Change", *change_lines(ctx.inputs, "workspace")]
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
        lines += proved_lines(ctx.inputs, failure)
        kept = failure.context.get("worktree")
        if kept:
            branch = failure.context.get("branch")
            lines += ["", f"The worktree is kept for inspection: `{kept}` (branch `{branch}`)."]
        feedback = failure.context.get("feedback", ())
        if feedback:
            lines += ["", "## Feedback given to the agent", *[f"- {line}" for line in feedback]]
    return save_report(ctx, "implement_verify", lines)


workflow = Workflow(
    "implement_verify",
    (
        # The agents and the checks run in the worktree: its folder is their default cwd.
        verified_workspace(IMPLEMENT_PROMPT),
        # After a success it reads the summary, the change and the checks' output too.
        Step(
            "finalize",
            finalize,
            always_run=True,
            reads=(
                "task",
                "summary",
                "checks_stdout",
                "implement_verified_proved",
                "output_dir",
                "workspace_branch",
                "workspace_commit",
                "workspace_diffstat",
            ),
            writes=("report_path",),
        ),
    ),
    description=(
        "An agent changes a project in a worktree until its checks pass and the tests named"
        " (must_pass, or a reproducer's) pass, committed on a branch; always writes a report."
    ),
    inputs=("task", "target_dir", "check_command"),
    optional_inputs=("output_dir", "must_pass", "reproduce"),
)
