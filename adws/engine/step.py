"""Declare workflows: `Step`, `Workflow`, `RetryPolicy` and `StepFunction`.

Everything here is checked when a workflow module is imported: a bad name,
a duplicate step or an impossible retry policy is a `ValueError` then, never
a surprise in the middle of a run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Final, TypeAlias, final

import attrs
from returns.io import IOResult

from adws._checks import (
    is_input_name,
    require_callable,
    require_type,
)
from adws._exceptions import DefinitionError, DefinitionTypeError
from adws.contract.keys import Key, key_name
from adws.engine.context import WorkflowContext
from adws.engine.errors import PipelineError
from adws.engine.retry_policy import NEVER_RETRIED, RetryPolicy, default_retry_on, retry_after
from adws.engine.usage import Budget

__all__ = [
    "NEVER_RETRIED",
    "RetryPolicy",
    "Step",
    "StepFunction",
    "Workflow",
    "default_retry_on",
    "iter_steps",
    "retry_after",
]

StepFunction: TypeAlias = Callable[[WorkflowContext], IOResult[WorkflowContext, PipelineError]]

_NAME: Final = re.compile(r"[a-z][a-z0-9_]*")


def _check_name(kind: str) -> Callable[[object, attrs.Attribute[str], str], None]:
    def check(_instance: object, _attribute: attrs.Attribute[str], value: str) -> None:
        if _NAME.fullmatch(str(value)) is None or not isinstance(value, str):
            msg = (
                f"{kind} name {value!r} is not an identifier: use lower-case "
                "letters, digits and underscores, starting with a letter"
            )
            raise DefinitionError(msg)

    return check


def _to_steps(steps: Iterable[object]) -> tuple[Step, ...]:
    result: list[Step] = []
    for step in steps:
        if not isinstance(step, Step):
            msg = f"{step!r} is not a Step"
            raise DefinitionTypeError(msg)
        result.append(step)
    return tuple(result)


def _to_names(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(names)


def _to_keys(keys: object) -> tuple[str, ...] | None:
    """Turn declared reads or writes (names or `Key`s) into names; None means inferred."""
    if keys is None:
        return None
    if isinstance(keys, str) or not isinstance(keys, Iterable):
        msg = f"reads and writes must be a tuple of names or Keys, got {keys!r}"
        raise DefinitionTypeError(msg)
    names = tuple(key_name(key) if isinstance(key, Key | str) else key for key in keys)
    for name in names:
        if not is_input_name(name):
            msg = f"{name!r} cannot be read or written: names are lower_snake_case identifiers"
            raise DefinitionError(msg)
    return names


@final
@attrs.frozen
class Step:
    """Name one unit of work and say how the executor should treat it.

    `kind` and `spec` describe what built the step (`agent`, `shell`,
    `verification` or plain `python`) so tools such as `adws show`, the
    fingerprint and `--agent` can inspect it; `children` lists the steps a
    combinator wraps. Most users never set them: `agent_step`, `shell_step`
    and `with_verification` do. `rerun_on_resume` marks a step `adws
    resume` runs again even though it finished (see the attribute). `reads` and `writes` (names or `Key`s)
    declare a plain Python step's dataflow for `adws check`, which infers
    the other kinds' from their templates and contracts.

    >>> Step("Bad Name", lambda ctx: None)  # type: ignore[arg-type,return-value]
    Traceback (most recent call last):
    ...
    adws._exceptions.DefinitionError: step name 'Bad Name' is not an identifier: use lower-case letters, digits and underscores, starting with a letter
    """  # noqa: E501

    name: str = attrs.field(validator=_check_name("step"))
    run: StepFunction
    always_run: bool = attrs.field(default=False, kw_only=True)
    retry: RetryPolicy = attrs.field(factory=RetryPolicy, kw_only=True)
    when: Callable[[WorkflowContext], bool] | None = attrs.field(default=None, kw_only=True)
    kind: str = attrs.field(default="python", kw_only=True)
    spec: object = attrs.field(default=None, kw_only=True)
    children: tuple[Step, ...] = attrs.field(default=(), kw_only=True, converter=_to_steps)
    reads: tuple[str, ...] | None = attrs.field(default=None, kw_only=True, converter=_to_keys)
    """The inputs the step reads, for `adws check` (None: inferred, when it can be)."""
    writes: tuple[str, ...] | None = attrs.field(default=None, kw_only=True, converter=_to_keys)
    """The outputs the step writes, for `adws check` (None: inferred, when it can be)."""
    rerun_on_resume: bool = attrs.field(default=False, kw_only=True)
    """Run again on every resume, before the first unfinished step, its old outputs dropped.

    For a step whose effect does not outlive a session: it makes a scratch
    folder or a worktree that an `always_run` teardown removes.
    """

    def __attrs_post_init__(self) -> None:
        """Refuse what could only fail later, inside a run."""
        owner = f"Step {self.name!r}"
        require_callable(owner, "run", self.run)
        require_type(owner, "always_run", self.always_run, bool, "a bool")
        require_type(owner, "retry", self.retry, RetryPolicy, "a RetryPolicy")
        require_callable(owner, "when", self.when, optional=True)
        require_type(owner, "kind", self.kind, str, "a str")
        require_type(owner, "rerun_on_resume", self.rerun_on_resume, bool, "a bool")


def iter_steps(steps: tuple[Step, ...]) -> Iterator[Step]:
    """Yield every step, and the steps each combinator wraps, depth first."""
    for step in steps:
        yield step
        yield from iter_steps(step.children)


def _check_steps(
    instance: Workflow, _attribute: attrs.Attribute[tuple[Step, ...]], steps: tuple[Step, ...]
) -> None:
    seen: set[str] = set()
    for step in steps:
        if step.name in seen:
            msg = f"workflow {instance.name!r} has two steps named {step.name!r}"
            raise DefinitionError(msg)
        seen.add(step.name)


def _check_scripts(instance: Workflow) -> None:
    """Refuse a `shell_step(script_from=KEY)` whose KEY the user does not give.

    A step that says `allow_generated=True` runs a script an earlier step
    writes; `adws check` notes it instead.
    """
    for step in iter_steps(instance.steps):
        key = getattr(step.spec, "script_from", None)
        generated = getattr(step.spec, "allow_generated", False)
        if key is not None and not generated and key not in instance.inputs:
            msg = (
                f"workflow {instance.name!r}: step {step.name!r} runs the script in input "
                f"{key!r}, which must be one of the workflow's inputs (add inputs=({key!r}, ...)) "
                "so that only the user, never a step, chooses it (or, for a script an earlier "
                "step writes, say allow_generated=True)"
            )
            raise DefinitionError(msg)


def _check_approvals(instance: Workflow) -> None:
    """Refuse an approval step inside another step: a run can pause only between its own steps."""
    for step in instance.steps:
        for inner in iter_steps(step.children):
            if inner.kind == "approval":
                msg = (
                    f"workflow {instance.name!r}: approval step {inner.name!r} is inside step"
                    f" {step.name!r}; an approval step must be one of the workflow's own steps"
                )
                raise DefinitionError(msg)


def _check_inputs(
    instance: Workflow, _attribute: attrs.Attribute[tuple[str, ...]], inputs: tuple[str, ...]
) -> None:
    for key in inputs:
        if _NAME.fullmatch(str(key)) is None or not isinstance(key, str):
            msg = f"workflow {instance.name!r}: input name {key!r} is not an identifier"
            raise DefinitionError(msg)


@final
@attrs.frozen
class Workflow:
    """Declare a named, ordered tuple of steps.

    `inputs` names the inputs a run must be given; the CLI and the executor
    refuse to start without them, naming what is missing. `optional_inputs`
    names those it may be given; `adws check` counts both as available and
    `adws run` refuses any `-i` key that is neither and that no step reads. Workflow names
    follow the same rule as step names, so they are safe on a command line.
    A workflow with no steps is valid: it is the identity, returning the
    context it is given.

    >>> noop = Step("noop", lambda ctx: None)  # type: ignore[arg-type,return-value]
    >>> Workflow("demo", (noop, noop))
    Traceback (most recent call last):
    ...
    adws._exceptions.DefinitionError: workflow 'demo' has two steps named 'noop'
    """

    name: str = attrs.field(validator=_check_name("workflow"))
    steps: tuple[Step, ...] = attrs.field(converter=_to_steps, validator=_check_steps)
    description: str = attrs.field(default="", kw_only=True)
    inputs: tuple[str, ...] = attrs.field(
        default=(), kw_only=True, converter=_to_names, validator=_check_inputs
    )
    optional_inputs: tuple[str, ...] = attrs.field(
        default=(), kw_only=True, converter=_to_names, validator=_check_inputs
    )
    """Inputs a run may be given but need not be (`output_dir`): read with `ctx.inputs.get`."""
    budget: Budget | None = attrs.field(default=None, kw_only=True)
    """The most a run may spend on agent calls (see `Budget`); None sets no limit."""

    def __attrs_post_init__(self) -> None:
        """Check what needs the steps and the inputs together."""
        owner = f"workflow {self.name!r}"
        require_type(owner, "description", self.description, str, "a str")
        require_type(owner, "budget", self.budget, (Budget, type(None)), "a Budget or None")
        both = sorted(set(self.inputs) & set(self.optional_inputs))
        if both:
            msg = f"{owner}: input {both[0]!r} cannot be both required and optional"
            raise DefinitionError(msg)
        _check_scripts(self)
        _check_approvals(self)

    def missing_inputs(self, provided: Mapping[str, object]) -> tuple[str, ...]:
        """Return the declared inputs that `provided` lacks, in declared order."""
        return tuple(key for key in self.inputs if key not in provided)
