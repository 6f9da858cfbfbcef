"""The value every step receives and returns: `WorkflowContext`."""

from __future__ import annotations

from typing import TYPE_CHECKING, final

import attrs
from returns.result import Failure, Result, Success

from adws._frozen import EMPTY, FrozenMap, freeze_mapping
from adws.errors import ErrorType, PipelineError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["WorkflowContext"]


def _freeze_feedback(feedback: object) -> tuple[str, ...]:
    if isinstance(feedback, str):
        return (feedback,)
    return tuple(str(line) for line in feedback)  # type: ignore[attr-defined] # any iterable of lines


@final
@attrs.frozen
class WorkflowContext:
    """Carry a run's data from one step to the next, immutably.

    `inputs` is what earlier steps (and the user) provided; `outputs` is what
    the current step adds; `feedback` is what earlier attempts of the current
    step were told; `failure` is set only for `always_run` steps running after
    a failure. Mappings are copied and frozen on the way in.

    >>> ctx = WorkflowContext(inputs={"topic": "x"}).merge_outputs({"n": 1})
    >>> dict(ctx.inputs), dict(ctx.outputs)
    ({'topic': 'x'}, {'n': 1})
    """

    inputs: FrozenMap = attrs.field(factory=FrozenMap, converter=freeze_mapping)
    outputs: FrozenMap = attrs.field(factory=FrozenMap, converter=freeze_mapping)
    feedback: tuple[str, ...] = attrs.field(default=(), converter=_freeze_feedback)
    failure: PipelineError | None = None

    def merge_outputs(self, mapping: Mapping[str, object]) -> WorkflowContext:
        """Return a context whose outputs also hold `mapping`.

        Within one step a later merge of the same key wins: they are that
        step's own outputs. Clashes with `inputs` are caught at promotion.
        """
        return WorkflowContext(
            self.inputs, self.outputs.extend(mapping), self.feedback, self.failure
        )

    def add_feedback(self, message: str) -> WorkflowContext:
        """Return a context with one more feedback line for the current step."""
        return WorkflowContext(self.inputs, self.outputs, (*self.feedback, message), self.failure)

    def with_failure(self, failure: PipelineError | None) -> WorkflowContext:
        """Return a context that carries `failure` (for `always_run` steps)."""
        return WorkflowContext(self.inputs, self.outputs, self.feedback, failure)

    def promote_outputs(self) -> Result[WorkflowContext, PipelineError]:
        """Move outputs into inputs for the next step, refusing to overwrite.

        Feedback belongs to the step that just finished, so it is cleared.
        The error leaves `step_name` empty; the executor fills it in.

        >>> ctx = WorkflowContext(inputs={"a": 1}, outputs={"b": 2})
        >>> dict(ctx.promote_outputs().unwrap().inputs)
        {'a': 1, 'b': 2}
        >>> print(WorkflowContext({"a": 1}, {"a": 2}).promote_outputs().failure())
        ContextCollision: output 'a' would overwrite an existing input
        """
        if not self.outputs:
            if not self.feedback:
                return Success(self)
            return Success(WorkflowContext(self.inputs, EMPTY, (), self.failure))
        clashes = [key for key in self.outputs if key in self.inputs]
        if clashes:
            names = ", ".join(repr(key) for key in clashes)
            noun = "output" if len(clashes) == 1 else "outputs"
            verb = (
                "would overwrite an existing input"
                if len(clashes) == 1
                else ("would overwrite existing inputs")
            )
            return Failure(
                PipelineError(
                    "",
                    ErrorType.CONTEXT_COLLISION,
                    f"{noun} {names} {verb}",
                    {"keys": clashes},
                )
            )
        promoted = self.inputs.extend(self.outputs)
        return Success(WorkflowContext(promoted, EMPTY, (), self.failure))
