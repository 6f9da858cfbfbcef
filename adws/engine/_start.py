"""Where a run starts: the first step, a resume's reruns before it, or the error that halts it."""

from __future__ import annotations

from typing import TYPE_CHECKING, final

import attrs

from adws.engine.errors import ErrorType, PipelineError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from adws.engine.context import WorkflowContext
    from adws.engine.step import Workflow

__all__ = ["Start", "starting_point"]


@final
@attrs.frozen
class Start:
    """Where a run starts: the step indices to run in order, and an error that halts it."""

    first: int
    order: tuple[int, ...]
    rerun: tuple[str, ...]
    error: PipelineError | None
    resumed: bool


def starting_point(
    workflow: Workflow, ctx: WorkflowContext, resume_from: str | None, rerun: Iterable[str]
) -> Start:
    """Find the steps to run (a resume's reruns first), or the error that halts the run."""
    names = [step.name for step in workflow.steps]
    resumed = resume_from is not None
    if resume_from is not None and resume_from not in names:
        message = f"workflow {workflow.name!r} has no step {resume_from!r} to resume from"
        error = PipelineError("", ErrorType.INVALID_WORKFLOW, message)
        return Start(len(names), (), (), error, resumed)
    first = 0 if resume_from is None else names.index(resume_from)
    later = tuple(range(first, len(names)))
    missing = workflow.missing_inputs(ctx.inputs)
    if missing:
        message = f"workflow {workflow.name!r} needs input {', '.join(map(repr, missing))}"
        error = PipelineError("", ErrorType.MISSING_INPUT, message, {"missing": list(missing)})
        return Start(first, later, (), error, resumed)
    wanted = frozenset(rerun)
    again = tuple(index for index, name in enumerate(names[:first]) if name in wanted)
    return Start(first, again + later, tuple(names[i] for i in again), None, resumed)
