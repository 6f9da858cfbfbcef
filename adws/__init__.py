"""adws: run AI-developer workflows as railway-oriented pipelines that fail closed.

The names below are loaded on first use, so `adws --help` does not pay for
importing the executor, `returns` and `attrs`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws._lazy import lazy_names

if TYPE_CHECKING:
    from adws._exceptions import AdwsError
    from adws.agents import (
        AgentBackend,
        AgentRequest,
        AgentResponse,
        ClaudeAgent,
        CommandAgent,
        ScriptedAgent,
    )
    from adws.agents.step import agent_step
    from adws.agents.swap import use_agent
    from adws.contract.keys import Key
    from adws.contract.validator import AgentReport, OutputContract, validate_agent_output
    from adws.engine.combinators import sequence, with_verification
    from adws.engine.concurrency import fan_out, parallel
    from adws.engine.context import WorkflowContext
    from adws.engine.errors import ErrorType, PipelineError
    from adws.engine.events import RunEvent, RunObserver
    from adws.engine.executor import run_workflow
    from adws.engine.step import RetryPolicy, Step, StepFunction, Workflow
    from adws.engine.usage import Budget, Usage
    from adws.shell.step import shell_step
    from adws.workspaces import approval_step, best_of, fast_forward, judge, reproduce, worktree

__all__ = [
    "AdwsError",
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
    "judge",
    "parallel",
    "reproduce",
    "run_workflow",
    "sequence",
    "shell_step",
    "use_agent",
    "validate_agent_output",
    "with_verification",
    "worktree",
]

_HOMES = {
    "AdwsError": "adws._exceptions",
    "AgentBackend": "adws.agents",
    "AgentReport": "adws.contract.validator",
    "AgentRequest": "adws.agents",
    "AgentResponse": "adws.agents",
    "Budget": "adws.engine.usage",
    "ClaudeAgent": "adws.agents",
    "CommandAgent": "adws.agents",
    "ErrorType": "adws.engine.errors",
    "Key": "adws.contract.keys",
    "OutputContract": "adws.contract.validator",
    "PipelineError": "adws.engine.errors",
    "RetryPolicy": "adws.engine.step",
    "RunEvent": "adws.engine.events",
    "RunObserver": "adws.engine.events",
    "ScriptedAgent": "adws.agents",
    "Step": "adws.engine.step",
    "StepFunction": "adws.engine.step",
    "Usage": "adws.engine.usage",
    "Workflow": "adws.engine.step",
    "WorkflowContext": "adws.engine.context",
    "agent_step": "adws.agents.step",
    "approval_step": "adws.workspaces",
    "best_of": "adws.workspaces",
    "judge": "adws.workspaces",
    "fan_out": "adws.engine.concurrency",
    "fast_forward": "adws.workspaces",
    "parallel": "adws.engine.concurrency",
    "reproduce": "adws.workspaces",
    "run_workflow": "adws.engine.executor",
    "sequence": "adws.engine.combinators",
    "shell_step": "adws.shell.step",
    "use_agent": "adws.agents.swap",
    "validate_agent_output": "adws.contract.validator",
    "with_verification": "adws.engine.combinators",
    "worktree": "adws.workspaces",
}


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
