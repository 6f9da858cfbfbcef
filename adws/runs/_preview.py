"""What a resume would do, said before anything runs (`adws resume RUN --plan`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, final

import attrs

from adws.journal.records.plan import StepPlan, stored_branches  # attrs resolves the annotations
from adws.journal.records.runs import RunRecord, named_problems  # as above
from adws.journal.store.estimates import finish_estimate, kept_spend, not_spent
from adws.journal.store.workspaces import worktrees_of
from adws.runs._values import Refused
from adws.runs.resume import resume_plan

if TYPE_CHECKING:
    from adws.engine.step import Workflow
    from adws.journal import Journal

__all__ = ["ResumePreview", "preview"]


@final
@attrs.frozen
class ResumePreview:
    """What a resume of `record` would do with each step, spend and refuse, and its options.

    `kept` says what it does not spend again; `to_finish` what finishing
    should cost by the journal's history (None: nothing left to run);
    `drift` each kept worktree that changed (a resume refuses it);
    `problems` the run's rows the journal cannot read.
    """

    record: RunRecord
    plan: tuple[StepPlan, ...]
    kept: str
    to_finish: str | None
    drift: tuple[str, ...]
    options: str
    problems: tuple[str, ...] = ()


def preview(  # noqa: PLR0913 - the run, its workflow, and how the resume is asked for
    journal: Journal,
    record: RunRecord,
    workflow: Workflow,
    options: str,
    *,
    from_step: str | None = None,
    rerun_changed: bool = False,
) -> ResumePreview | Refused:
    """Say what a resume of `record` would do; refused as a resume is (`--from`, say)."""
    attempts = journal.attempts(record.run_id)
    plan = resume_plan(workflow, attempts, from_step=from_step, rerun_changed=rerun_changed)
    if isinstance(plan, str):
        return Refused(plan)
    to_run = [item.step for item in plan if item.action in {"to run", "rerun"}]
    first = next((item.step for item in plan if item.action == "to run"), None)
    kept = not_spent(kept_spend(plan, attempts, stored_branches(attempts, first)))
    to_finish = finish_estimate(journal, record.workflow, to_run).describe() if to_run else None
    problems = [f"run {record.run_id}: {problem}" for problem in record.problems]
    problems += named_problems("attempts", record.run_id, attempts)
    return ResumePreview(
        record,
        tuple(plan),
        kept,
        to_finish,
        tuple(_drift(journal, record)),
        options,
        tuple(problems),
    )


def _drift(journal: Journal, record: RunRecord) -> list[str]:
    """Say what changed in the worktrees the run kept, as a resume would refuse it."""
    worktrees = worktrees_of(journal, record.run_id)
    if not worktrees:
        return []
    from adws.workspaces.drift import drifted  # noqa: PLC0415 - git only for runs with worktrees

    return drifted(worktrees, record.run_id)
