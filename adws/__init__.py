"""adws: run AI-developer workflows as railway-oriented pipelines that fail closed.

The names below are loaded on first use, so `adws --help` does not pay for
importing the executor, `returns` and `attrs`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws._lazy import lazy_names

if TYPE_CHECKING:
    from adws.agent_steps import agent_step
    from adws.agent_swap import use_agent
    from adws.agents import (
        AgentBackend,
        AgentRequest,
        AgentResponse,
        ClaudeAgent,
        CommandAgent,
        ScriptedAgent,
    )
    from adws.combinators import sequence, with_verification
    from adws.concurrency import fan_out, parallel
    from adws.context import WorkflowContext
    from adws.contract import AgentReport, OutputContract, validate_agent_output
    from adws.errors import ErrorType, PipelineError
    from adws.events import RunEvent, RunObserver
    from adws.executor import run_workflow
    from adws.keys import Key
    from adws.shell import shell_step
    from adws.step import RetryPolicy, Step, StepFunction, Workflow
    from adws.usage import Budget, Usage
    from adws.workspaces import approval_step, best_of, fast_forward, worktree

__all__ = [
    "AgentBackend",
    "AgentReport",
    "AgentRequest",
    "AgentResponse",
    "Budget",
    "ClaudeAgent",
    "CommandAgent",
    "ErrorType",
    "Key",
    "OutputContract",
    "PipelineError",
    "RetryPolicy",
    "RunEvent",
    "RunObserver",
    "ScriptedAgent",
    "Step",
    "StepFunction",
    "Usage",
    "Workflow",
    "WorkflowContext",
    "agent_step",
    "approval_step",
    "best_of",
    "fan_out",
    "fast_forward",
    "parallel",
    "run_workflow",
    "sequence",
    "shell_step",
    "use_agent",
    "validate_agent_output",
    "with_verification",
    "worktree",
]

_HOMES = {
    "AgentBackend": "adws.agents",
    "AgentReport": "adws.contract",
    "AgentRequest": "adws.agents",
    "AgentResponse": "adws.agents",
    "Budget": "adws.usage",
    "ClaudeAgent": "adws.agents",
    "CommandAgent": "adws.agents",
    "ErrorType": "adws.errors",
    "Key": "adws.keys",
    "OutputContract": "adws.contract",
    "PipelineError": "adws.errors",
    "RetryPolicy": "adws.step",
    "RunEvent": "adws.events",
    "RunObserver": "adws.events",
    "ScriptedAgent": "adws.agents",
    "Step": "adws.step",
    "StepFunction": "adws.step",
    "Usage": "adws.usage",
    "Workflow": "adws.step",
    "WorkflowContext": "adws.context",
    "agent_step": "adws.agent_steps",
    "approval_step": "adws.workspaces",
    "best_of": "adws.workspaces",
    "fan_out": "adws.concurrency",
    "fast_forward": "adws.workspaces",
    "parallel": "adws.concurrency",
    "run_workflow": "adws.executor",
    "sequence": "adws.combinators",
    "shell_step": "adws.shell",
    "use_agent": "adws.agent_swap",
    "validate_agent_output": "adws.contract",
    "with_verification": "adws.combinators",
    "worktree": "adws.workspaces",
}


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
