"""`approval_step`: the run waits here until a person approves or rejects it."""

from __future__ import annotations

from typing import TYPE_CHECKING, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess

from adws._checks import require_seconds, require_type
from adws.contract.template import check_template, render_for_step
from adws.engine.errors import ErrorType, PipelineError
from adws.engine.scope import Decision, current_scope
from adws.engine.step import Step

if TYPE_CHECKING:
    from adws.engine.context import WorkflowContext

__all__ = ["ApprovalSpec", "Decision", "approval_step"]


@final
@attrs.frozen
class ApprovalSpec:
    """Describe an approval step, for `adws show`, `adws check` and the fingerprint."""

    message: str
    timeout: float | None

    def describe(self) -> str:
        """Say what the step does, for `adws show`."""
        limit = "" if self.timeout is None else f" (rejected after {self.timeout:g}s)"
        return f"waits for a person to approve: {self.message!r}{limit}"


def approval_step(name: str, *, message: str, timeout: float | None = None) -> Step:
    """Build a step at which the run waits for a person: `adws approve` or `adws reject`.

    `message` may hold placeholders (`Merge {best_branch}? {best_diffstat.text}`),
    rendered from the inputs when the step is reached. With no decision yet
    the step fails `AwaitingApproval` (message in `context["message"]`,
    `timeout` in `context["timeout"]`): the run ends `waiting` (exit 3), no
    later step runs and the `always_run` steps wait too, since the run has
    not ended. `adws approve RUN` records who approved, when and why
    (`--note`) and continues the run: the step then succeeds with the
    output `<name>_approval` (`verdict`, `by`, `at`, `note`). `adws reject
    RUN --reason ...` continues it too: the step fails `Rejected` (never
    retried; the run cannot be resumed after), and the `always_run` steps
    run. `timeout` (seconds): a wait older than that is ended as rejected
    with the reason `timeout` by `adws approvals`, `approve` or `resume`.

    The step must be one of the workflow's own steps, never inside a
    combinator or a parallel step (a `Workflow` holding one there is a
    `ValueError`): the run pauses between steps.
    """
    owner = f"approval_step {name!r}"
    require_type(owner, "message", message, str, "a str")
    check_template(message, owner=owner, what="the message")
    require_seconds(owner, "timeout", timeout, optional=True)

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        rendered = render_for_step(message, ctx.inputs, step_name=name, what="the message")
        if isinstance(rendered, PipelineError):
            return IOFailure(rendered)
        decision = current_scope().decisions.get(name)
        if decision is None:
            context = {"message": rendered, "timeout": timeout}
            return IOFailure(PipelineError(name, ErrorType.AWAITING_APPROVAL, rendered, context))
        if decision.verdict == "rejected":
            reason = decision.note or "no reason given"
            return IOFailure(
                PipelineError(
                    name,
                    ErrorType.REJECTED,
                    f"rejected by {decision.by}: {reason}",
                    {"decision": decision.to_dict()},
                )
            )
        return IOSuccess(ctx.merge_outputs({f"{name}_approval": decision.to_dict()}))

    return Step(name, run, kind="approval", spec=ApprovalSpec(message, timeout))
