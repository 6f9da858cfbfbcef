"""adws: run AI-developer workflows as railway-oriented pipelines that fail closed."""

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
