"""The value every step receives and returns: `WorkflowContext`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, final

import attrs
from returns.result import Failure, Result, Success

from adws._frozen import EMPTY, FrozenMap, freeze_mapping
from adws.contract.keys import Key, key_name
from adws.engine.errors import ErrorType, PipelineError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["WorkflowContext", "promote"]

T = TypeVar("T")


def _freeze_feedback(feedback: str | Iterable[object]) -> tuple[str, ...]:
    if isinstance(feedback, str):
        return (feedback,)
    return tuple(str(line) for line in feedback)


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

    @classmethod
    def _trusted(
        cls,
        inputs: FrozenMap,
        outputs: FrozenMap,
        feedback: tuple[str, ...],
        failure: PipelineError | None,
    ) -> WorkflowContext:
        """Build from parts that are already frozen, skipping the converters.

        The executor makes two contexts per step; the converters would copy
        what is already immutable.
        """
        ctx = _new(cls)
        _set_inputs(ctx, inputs)
        _set_outputs(ctx, outputs)
        _set_feedback(ctx, feedback)
        _set_failure(ctx, failure)
        return ctx

    def get(self, key: Key[T]) -> T:
        """Return the input `key` names, typed as the key declares (see `Key.read`).

        >>> TOPIC = Key("topic", str)
        >>> WorkflowContext({"topic": "rust"}).get(TOPIC)
        'rust'
        """
        return key.read(self.inputs)

    def merge_outputs(
        self, mapping: Mapping[str, object] | Mapping[Key[Any], object]
    ) -> WorkflowContext:
        """Return a context whose outputs also hold `mapping` (names or `Key`s).

        Within one step a later merge of the same key wins: they are that
        step's own outputs. Clashes with `inputs` are caught at promotion.
        """
        if Key in map(type, mapping):  # every step merges: the check stays in C
            mapping = {key_name(key): value for key, value in mapping.items()}
        outputs = self.outputs.extend(mapping)  # type: ignore[arg-type] # names only, converted above
        return WorkflowContext._trusted(self.inputs, outputs, self.feedback, self.failure)

    def add_feedback(self, message: str) -> WorkflowContext:
        """Return a context with one more feedback line for the current step."""
        feedback = (*self.feedback, str(message))
        return WorkflowContext._trusted(self.inputs, self.outputs, feedback, self.failure)

    def with_failure(self, failure: PipelineError | None) -> WorkflowContext:
        """Return a context that carries `failure` (for `always_run` steps)."""
        if failure is self.failure:
            return self
        return WorkflowContext._trusted(self.inputs, self.outputs, self.feedback, failure)

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
        promoted = promote(self.inputs, self.outputs, self.failure)
        if isinstance(promoted, PipelineError):
            return Failure(promoted)
        return Success(promoted)


def promote(
    inputs: FrozenMap, outputs: FrozenMap, failure: PipelineError | None = None
) -> WorkflowContext | PipelineError:
    """Make the context the next step sees: `inputs` plus `outputs`, or a collision.

    This is `WorkflowContext.promote_outputs` without the `Result` wrapper,
    for the executor's per-step path.
    """
    merged = inputs.extend_unique(outputs)
    if isinstance(merged, list):
        clashes = merged
        names = ", ".join(repr(key) for key in clashes)
        if len(clashes) == 1:
            message = f"output {names} would overwrite an existing input"
        else:
            message = f"outputs {names} would overwrite existing inputs"
        return PipelineError("", ErrorType.CONTEXT_COLLISION, message, {"keys": clashes})
    # `_trusted`'s body, inline: this runs once for every step of every run.
    ctx = _new(WorkflowContext)
    _set_inputs(ctx, merged)
    _set_outputs(ctx, EMPTY)
    _set_feedback(ctx, ())
    _set_failure(ctx, failure)
    return ctx


# Slot descriptors of the frozen class: `_trusted` fills a context through them,
# which is several times cheaper than attrs' __init__ with its converters.
_new = object.__new__
_set_inputs = WorkflowContext.__dict__["inputs"].__set__
_set_outputs = WorkflowContext.__dict__["outputs"].__set__
_set_feedback = WorkflowContext.__dict__["feedback"].__set__
_set_failure = WorkflowContext.__dict__["failure"].__set__
