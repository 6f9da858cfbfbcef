"""adws: run AI-developer workflows as railway-oriented pipelines that fail closed.

The names below are loaded on first use, so `adws --help` does not pay for
importing the executor, `returns` and `attrs`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from adws.combinators import with_verification
    from adws.context import WorkflowContext
    from adws.errors import ErrorType, PipelineError
    from adws.events import RunEvent, RunObserver
    from adws.executor import run_workflow
    from adws.step import RetryPolicy, Step, StepFunction, Workflow

__all__ = [
    "ErrorType",
    "PipelineError",
    "RetryPolicy",
    "RunEvent",
    "RunObserver",
    "Step",
    "StepFunction",
    "Workflow",
    "WorkflowContext",
    "run_workflow",
    "with_verification",
]

_HOMES = {
    "ErrorType": "adws.errors",
    "PipelineError": "adws.errors",
    "RetryPolicy": "adws.step",
    "RunEvent": "adws.events",
    "RunObserver": "adws.events",
    "Step": "adws.step",
    "StepFunction": "adws.step",
    "Workflow": "adws.step",
    "WorkflowContext": "adws.context",
    "run_workflow": "adws.executor",
    "with_verification": "adws.combinators",
}


def __getattr__(name: str) -> object:
    """Import a public name from its module the first time it is asked for."""
    home = _HOMES.get(name)
    if home is None:
        msg = f"module 'adws' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """List the public names, loaded or not."""
    return sorted(__all__)
