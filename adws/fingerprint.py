"""A stable hash of a workflow's definition, so `adws resume` can tell it changed."""

from __future__ import annotations

import hashlib
import inspect
import json
from typing import TYPE_CHECKING

import attrs

from adws.agent_steps import AgentSpec
from adws.combinators import VerificationSpec
from adws.shell import ShellSpec

if TYPE_CHECKING:
    from adws.step import RetryPolicy, Step, Workflow

__all__ = ["describe_workflow", "fingerprint"]


def _source(function: object) -> str:
    """Name a callable and, where Python can find it, include its source."""
    name = getattr(function, "__qualname__", type(function).__qualname__)
    try:
        return f"{name}\n{inspect.getsource(function)}"  # type: ignore[arg-type] # any callable
    except (OSError, TypeError):
        return str(name)


def _schema(cls: type) -> object:
    return {
        "name": cls.__qualname__,
        "fields": [(field.name, str(field.type)) for field in attrs.fields(cls)],
    }


def _retry(policy: RetryPolicy) -> object:
    values = attrs.asdict(policy, filter=lambda attribute, _: attribute.name != "retry_on")
    return {**values, "retry_on": _source(policy.retry_on)}


def _step(step: Step) -> object:
    spec = step.spec
    described: dict[str, object] = {
        "name": step.name,
        "kind": step.kind,
        "always_run": step.always_run,
        "retry": _retry(step.retry),
        "when": None if step.when is None else _source(step.when),
    }
    if isinstance(spec, AgentSpec):
        contract = spec.contract
        described["agent"] = {
            "prompt": spec.prompt,
            "expects": list(contract.keys),
            "schemas": {key: _schema(cls) for key, cls in contract.schemas.items()},
            "max_output_bytes": contract.max_output_bytes,
            "timeout": spec.timeout,
            "cwd": spec.cwd,
        }
    elif isinstance(spec, ShellSpec):
        described["shell"] = attrs.asdict(spec)
    elif isinstance(spec, VerificationSpec):
        described["rounds"] = spec.max_attempts
    else:
        described["run"] = _source(step.run)
    described["children"] = [_step(child) for child in step.children]
    return described


def describe_workflow(workflow: Workflow) -> dict[str, object]:
    """Describe everything about a workflow that changes what a run would do.

    The agent backend is left out on purpose: `--agent` may pick another one
    for a resumed run without the workflow having changed.
    """
    return {
        "name": workflow.name,
        "inputs": list(workflow.inputs),
        "steps": [_step(step) for step in workflow.steps],
    }


def fingerprint(workflow: Workflow) -> str:
    """Return a short, stable hash of `describe_workflow(workflow)`."""
    text = json.dumps(describe_workflow(workflow), sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
