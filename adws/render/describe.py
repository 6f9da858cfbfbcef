"""Describe a workflow from its definition alone: `adws show`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from adws.agents.step import AgentSpec
from adws.engine.combinators import SequenceSpec, VerificationSpec
from adws.engine.concurrency import FanOutSpec, ParallelSpec
from adws.shell.step import ShellSpec

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from adws.engine.step import RetryPolicy, Step, Workflow

__all__ = ["callable_name", "describe_retry", "show_text"]


def describe_retry(policy: RetryPolicy) -> str:
    """Summarise a retry policy in a few words.

    >>> from adws import RetryPolicy
    >>> describe_retry(RetryPolicy()), describe_retry(RetryPolicy(3, delay=1))
    ('1 attempt', '3 attempts, wait 1s x2 up to 60s')
    """
    if policy.max_attempts == 1:
        return "1 attempt"
    text = f"{policy.max_attempts} attempts"
    if policy.delay:
        text += f", wait {policy.delay:g}s x{policy.backoff:g} up to {policy.max_delay:g}s"
    if policy.jitter:
        text += f" +≤{policy.jitter:g}s jitter"
    return text


def callable_name(function: Callable[..., object]) -> str:
    """Name a function (or a callable object by its class)."""
    return getattr(function, "__name__", type(function).__name__)


def _shell_details(spec: ShellSpec) -> str:
    if spec.command is None and spec.allow_generated:
        return (
            f"runs the script in {spec.script_from}, which an earlier step wrote"
            " (allow_generated: GENERATED CODE)"
        )
    if spec.command is None:
        return f"runs the script in input {spec.script_from}"
    command = spec.command
    return f"runs {command if isinstance(command, str) else json.dumps(command)}"


def _verification(spec: VerificationSpec) -> str:
    """Describe a `with_verification`: its rounds, and what must pass (or that nothing must)."""
    said = f"{spec.main.name} then {spec.verify.name}, up to {spec.max_attempts} rounds"
    targets = spec.must_pass if isinstance(spec.must_pass, str) else ", ".join(spec.must_pass)
    if targets:
        return f"{said}; must pass: {targets}"
    if spec.baseline:
        return f"{said}; checked against a baseline (nothing must pass: only that nothing broke)"
    return said


def _spec_details(spec: object) -> list[str]:  # noqa: PLR0911 - one description per kind of step
    """Describe what built a step: its contract, command, rounds, steps or branches."""
    if isinstance(spec, AgentSpec) and spec.contract.keys:
        keys = [
            f"{key} ({spec.contract.schemas[key].__name__})"
            if key in spec.contract.schemas
            else key
            for key in spec.contract.keys
        ]
        return ["expects " + ", ".join(keys)]
    if isinstance(spec, ShellSpec):
        return [_shell_details(spec)]
    if isinstance(spec, VerificationSpec):
        return [_verification(spec)]
    if isinstance(spec, SequenceSpec):
        return ["runs " + (" then ".join(inner.name for inner in spec.steps) or "nothing")]
    describe = getattr(spec, "describe", None)
    if callable(describe):  # the workspaces' specs say themselves what they do
        return [str(describe())]
    if isinstance(spec, ParallelSpec | FanOutSpec):
        what = (
            f"{len(spec.branches)} branches at once"
            if isinstance(spec, ParallelSpec)
            else f"{spec.step.name} once per element of {spec.over} (as {spec.item})"
        )
        limits = [f"at most {spec.max_concurrency} at a time"] if spec.max_concurrency else []
        if spec.min_successes is not None:
            limits.append(f"needs {spec.min_successes} to succeed")
        if not spec.fail_fast:
            limits.append("every branch runs to its end")
        return [", ".join([f"runs {what}", *limits])]
    return []


def _step_details(step: Step) -> str:
    parts = [step.kind, describe_retry(step.retry)]
    if step.always_run:
        parts.append("always_run")
    if step.when is not None:
        parts.append(f"when {callable_name(step.when)}")
    return " · ".join(parts + _spec_details(step.spec))


def _lines(steps: Iterable[Step], prefix: str) -> list[str]:
    lines: list[str] = []
    for number, step in enumerate(steps, 1):
        lines.append(f"{prefix}{number}. {step.name}: {_step_details(step)}")
        lines.extend(_lines(step.children, prefix + "   "))
    return lines


def show_text(workflow: Workflow) -> str:
    """Describe a workflow's steps for `adws show`."""
    head = workflow.name + (f" — {workflow.description}" if workflow.description else "")
    inputs = ", ".join(workflow.inputs) or "none required"
    if workflow.optional_inputs:
        inputs += f" (optional: {', '.join(workflow.optional_inputs)})"
    return "\n".join([head, f"inputs: {inputs}", *_lines(workflow.steps, "  ")])
