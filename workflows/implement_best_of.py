"""Three agents try the same change side by side; a person approves the best; it is merged.

    reproduce (if asked, in a worktree of its own) ─► targets
      ─► best: 3 x [ implement ─► checks ─(fail: fed back)─► … ] in worktrees of their own
      ─► approve (the run waits: adws approve RUN / adws reject RUN --reason ...)
      ─► merge (fast-forward target_dir's branch to the winner's commit) ─► finalize (always)

Each attempt works in a fresh `git worktree` of `target_dir` on its own
branch (`adws/<run>/best-0`, `-1`, `-2`) and sees which attempt it is
(`{best_index}`); `check_command` runs after every round, as the script the
user chose, in a verify tree of the round's change. What must pass is what
`implement_verify` says: the `must_pass` input's tests and, with `-i
reproduce=yes`, the tests an agent first writes to show the problem (in a
worktree of its own; the attempts start from its commit, and its tests are
protected from them). The first attempt (by number) whose checks pass wins:
its change is committed on its branch, the others' worktrees and branches
are removed. Then the run waits for a person: `adws approvals` shows the
question, with what the checks proved (targets fixed, new failures,
pre-existing ones left, flaky ones; with no target, that the change was only
checked to break nothing); `adws approve RUN` goes on, `adws reject RUN
--reason ...` ends it. Approved, the target repository's current branch is
fast-forwarded to the winner's commit (refused, naming the files, if that
checkout has uncommitted changes: commit or stash them, then `adws resume
RUN`). `finalize` always writes a markdown report of every attempt.

    adws run implement_best_of -i task="..." -i target_dir=. -i check_command="pytest -rA" \
        -i reproduce=yes
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs
from _common import (
    asked_to_reproduce,
    change_lines,
    implement_until_checks_pass,
    proved_lines,
    reproducer,
    save_report,
    targets_step,
)

from adws import (
    PipelineError,
    Step,
    Workflow,
    WorkflowContext,
    approval_step,
    best_of,
    fast_forward,
    worktree,
)

if TYPE_CHECKING:
    from returns.io import IOResult

ATTEMPTS = 3

IMPLEMENT_PROMPT = """You are working in a git worktree of the repository at {target_dir}:
{worktree}, your current directory. Change files there only.
Attempt: {best_index} of 3 (other attempts work on the same task elsewhere; the
first whose checks pass is proposed for merging).
Task: {task}

Make the change, keeping the project's style. The project's checks
(`{check_command}`) run after you finish; make them pass.
Summarise what you changed in SUMMARY."""

APPROVAL = """Fast-forward {target_dir} to {best_branch} ({best_diffstat.text})?
Attempt {best_winner} of 3 won: {summary}
What the checks proved:
{implement_verified_proved.text}"""


def _attempt_lines(outcomes: object) -> list[str]:
    """One line per attempt: how it ended, what it changed and what it spent."""
    lines = []
    for outcome in outcomes if isinstance(outcomes, list | tuple) else ():
        stat = outcome.get("diffstat") or {}
        error = outcome.get("error") or {}
        what = stat.get("text") if outcome["status"] == "succeeded" else error.get("message", "")
        spent = outcome.get("usage") or {}
        cost = f", ${spent['cost_usd']:.4f}" if spent.get("cost_usd") is not None else ""
        lines.append(f"- attempt {outcome['index']}: {outcome['status']} ({what}{cost})")
    return lines


def finalize(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """Write a markdown report: every attempt, the winner's change, the decision, the merge."""
    task = str(ctx.inputs["task"])
    lines = [f"# implement_best_of: {task}", ""]
    failure = ctx.failure
    if failure is None:
        merged = ctx.inputs["merge_branch"]
        lines += [f"**Result:** approved and merged: `{merged}` is at the winner's commit.", ""]
    else:
        lines += [f"**Result:** {failure.error_type} at `{failure.step_name}`.", ""]
        lines += ["```", failure.message[-3000:], "```", ""]
    outcomes = ctx.inputs.get("best_outcomes", failure.context.get("outcomes") if failure else ())
    lines += ["## Attempts", *_attempt_lines(outcomes)]
    if "best_winner" in ctx.inputs:
        lines += ["", f"## The winner: attempt {ctx.inputs['best_winner']}"]
        lines += [str(ctx.inputs["summary"]), "", *change_lines(ctx.inputs, "best")]
    lines += proved_lines(ctx.inputs, failure)
    approval = ctx.inputs.get("approve_approval")
    if isinstance(approval, Mapping):
        note = f": {approval['note']}" if approval["note"] else ""
        lines += ["", f"Approved by {approval['by']} at {approval['at']}{note}."]
    return save_report(ctx, "implement_best_of", lines)


workflow = Workflow(
    "implement_best_of",
    (
        # The reproducer works in a worktree of its own; the attempts start from its commit.
        attrs.evolve(worktree(reproducer(), name="reproduction"), when=asked_to_reproduce),
        targets_step(start=True),
        best_of(
            "best",
            implement_until_checks_pass(IMPLEMENT_PROMPT),
            n=ATTEMPTS,
            base="{start}",
        ),
        approval_step("approve", message=APPROVAL),
        fast_forward("merge", commit="{best_commit}"),
        # Whatever happened, it reads what is there: the attempts, the winner, the decision.
        Step(
            "finalize",
            finalize,
            always_run=True,
            reads=(
                "task",
                "summary",
                "output_dir",
                "best_winner",
                "best_outcomes",
                "best_branch",
                "best_commit",
                "best_diffstat",
                "implement_verified_proved",
                "approve_approval",
                "merge_branch",
            ),
            writes=("report_path",),
        ),
    ),
    description=(
        "Three agents try a change in worktrees side by side; the first that passes the checks"
        " (and the tests named: must_pass, or a reproducer's) is merged once a person approves;"
        " always writes a report."
    ),
    inputs=("task", "target_dir", "check_command"),
    optional_inputs=("output_dir", "must_pass", "reproduce"),
)
