"""`select=judge(step)`: an agent chooses the best of `best_of`'s passing branches.

The judge step (an `agent_step` with `contract=JUDGE_CONTRACT`, or any step
that writes `choice_json`) sees the input `<name>_candidates`: per branch
that passed, its `index`, `summary`, `diffstat` and `diff` (the change as
`git diff` shows it, capped). An agent judge whose prompt never names
`{<name>_candidates}` would choose blind, so `best_of` appends them to its
prompt (`shown_candidates`). Its answer, `CHOICE_JSON`, is validated like
any other (`index` and `reason`); a choice of a branch that did not pass
fails the step naming the choices.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, final

import attrs

from adws._checks import require_type
from adws.contract.template import template_paths
from adws.contract.validator import OutputContract
from adws.engine.context import WorkflowContext
from adws.engine.errors import ErrorType, PipelineError
from adws.engine.retry import retry_step
from adws.engine.step import Step

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["JUDGE_CONTRACT", "Choice", "Judge", "judge", "judged", "shown_candidates"]

_MAX_DIFF_CHARS: Final = 20_000


@final
@attrs.frozen
class Choice:
    """The judge's answer: the index of the branch to keep, and why."""

    index: int = attrs.field(metadata={"description": "the index of the attempt to keep"})
    reason: str = attrs.field(metadata={"description": "why it is the best, in a sentence"})


JUDGE_CONTRACT: Final = OutputContract(schemas={"CHOICE_JSON": Choice})
"""The contract of a judge's `agent_step`: `CHOICE_JSON` with `index` and `reason`."""


@final
@attrs.frozen
class Judge:
    """A `best_of` select that asks `step` to choose (see `judge`)."""

    step: Step


def judge(step: Step) -> Judge:
    """Make `step` the judge of a `best_of`: `best_of(..., select=judge(agent_step(...)))`."""
    require_type("judge", "step", step, Step, "a Step (an agent_step with JUDGE_CONTRACT)")
    return Judge(step)


_SHOWN: Final = (
    "\n\nThe candidates, one per attempt that passed (its index, summary, diffstat and"
    " diff):\n{{{key}}}\n"
)
"""What an agent judge's prompt gets when it never names its candidates."""


def shown_candidates(chosen_by: Judge, name: str) -> Judge:
    """Give an agent judge that never names `{<name>_candidates}` its candidates, appended.

    A step that builds its own prompt again (an `agent_step`: its spec has
    `prompt` and `with_prompt`) is rebuilt with the candidates after its
    prompt; any other judge (a Python step reading the input) is kept.
    """
    spec = chosen_by.step.spec
    prompt, rebuild = getattr(spec, "prompt", None), getattr(spec, "with_prompt", None)
    key = f"{name}_candidates"
    if not isinstance(prompt, str) or not callable(rebuild):
        return chosen_by
    if any(placeholder.key == key for placeholder in template_paths(prompt)):
        return chosen_by
    return Judge(rebuild(chosen_by.step, prompt.rstrip() + _SHOWN.format(key=key)))


def _choice(value: object) -> tuple[object, object]:
    if isinstance(value, Mapping):
        return value.get("index"), value.get("reason")
    return getattr(value, "index", None), getattr(value, "reason", None)


def judged(
    name: str,
    chosen_by: Judge,
    ctx: WorkflowContext,
    candidates: Sequence[Mapping[str, object]],
) -> tuple[int, str] | PipelineError:
    """Run the judge on the passing candidates; return its valid choice and reason."""
    key = f"{name}_candidates"
    shown = [
        {**candidate, "diff": str(candidate.get("diff", ""))[:_MAX_DIFF_CHARS]}
        for candidate in candidates
    ]
    asked = WorkflowContext(inputs={**ctx.inputs, key: shown})
    made, _ = retry_step(chosen_by.step, asked)
    if isinstance(made, PipelineError):
        return made.with_step_name(chosen_by.step.name)
    index, reason = _choice(made.outputs.get("choice_json"))
    passed = [int(str(candidate["index"])) for candidate in candidates]
    if isinstance(index, int) and not isinstance(index, bool) and index in passed:
        return index, str(reason or "")
    message = (
        f"the judge {chosen_by.step.name!r} of best_of {name!r} chose {index!r}; it must answer"
        f" CHOICE_JSON with the index of an attempt that passed ({', '.join(map(str, passed))})"
    )
    return PipelineError(name, ErrorType.CONTRACT_VIOLATION, message, {"chosen": repr(index)})
