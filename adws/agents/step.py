"""`agent_step`: render a prompt, ask an agent, prove the answer, merge its fields."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, TypeVar, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess
from returns.result import Failure
from returns.unsafe import unsafe_perform_io

from adws import io_ops
from adws._checks import require_callable, require_seconds, require_type
from adws.agents._failures import bounded_wait, with_hint
from adws.agents.base import AgentBackend, AgentRequest, AgentResponse
from adws.contract.template import check_template, render_for_step
from adws.contract.validator import OutputContract, validate_agent_output
from adws.engine.errors import ErrorType, PipelineError
from adws.engine.events import AgentActivity, AgentExchanged
from adws.engine.metering import charge
from adws.engine.retry import attempt_number, current_attempt
from adws.engine.scope import current_branch, current_scope, current_worktree
from adws.engine.step import RetryPolicy, Step
from adws.engine.usage import Budget, Usage, usage_of_failure

if TYPE_CHECKING:
    from collections.abc import Callable

    from adws.engine.context import WorkflowContext

__all__ = ["AgentSpec", "agent_step", "compose_prompt"]

_T = TypeVar("_T")


@final
@attrs.frozen
class AgentSpec:
    """Describe an agent step, for `adws show`, `adws validate` and `use_agent`."""

    prompt: str
    agent: AgentBackend
    contract: OutputContract
    timeout: float | None
    cwd: str | None
    budget: Budget | None = None
    edits: bool = False
    idle_timeout: float | None = None


def compose_prompt(prompt: str, contract: OutputContract, feedback: tuple[str, ...]) -> str:
    """Join the rendered prompt, the contract's instructions and the feedback so far."""
    parts = [prompt.rstrip(), contract.instructions()]
    if feedback:
        lines = "\n".join(f"- {line}" for line in feedback)
        parts.append(
            "## Feedback from earlier attempts\n"
            "Your previous answers were rejected. Fix every point below:\n" + lines
        )
    return "\n\n".join(parts) + "\n"


def _outputs(
    response: AgentResponse, contract: OutputContract, step_name: str
) -> IOResult[dict[str, object], PipelineError]:
    checked = validate_agent_output(response.text, contract, step_name=step_name)
    if isinstance(checked, Failure):
        return IOFailure(with_hint(checked.failure(), response.text))
    report = checked.unwrap()
    outputs: dict[str, object] = {
        key.lower(): report.data.get(key, report.fields[key]) for key in contract.keys
    }
    if response.metadata:
        outputs[f"{step_name}_agent"] = response.metadata
    return IOSuccess(outputs)


def _over_budget(step_name: str, budget: Budget | None) -> PipelineError | None:
    """Refuse the call when the run's spend so far has reached the tightest budget."""
    scope = current_scope()
    limit = budget.tighter(scope.budget) if budget is not None else scope.budget
    if limit is None:
        return None
    spent = scope.meter.usage
    why = limit.exceeded(spent)
    if why is None:
        return None
    return PipelineError(
        step_name,
        ErrorType.BUDGET_EXCEEDED,
        f"{why}; the agent was not called",
        {"spent": spent.to_dict(), "budget": limit.to_dict()},
    )


def _of_type(value: object, kind: type[_T]) -> _T | None:
    """Keep a value a backend put in an error's context only when it has the expected type."""
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


def _raised(step_name: str, exc: BaseException) -> PipelineError:
    """Describe an agent call that raised instead of answering (Ctrl-C included)."""
    kind = ErrorType.INTERRUPTED if isinstance(exc, KeyboardInterrupt) else ErrorType.STEP_EXCEPTION
    return PipelineError(step_name, kind, f"the agent raised {type(exc).__name__}: {exc}")


def _exchanged(
    request: AgentRequest,
    answer: IOResult[AgentResponse, PipelineError],
    checked: IOResult[object, PipelineError],
    seconds: float,
) -> Usage | None:
    """Report the call whole to the run's observers (the journal keeps it); return its cost.

    A failed call is described by what its backend put in the error's
    context (`stdout_tail`, `returncode`, `stderr_tail`, `session_id`).
    """
    usage: Usage | None
    if isinstance(answer, IOSuccess):
        response = unsafe_perform_io(answer.unwrap())
        text: str | None = response.text
        exit_code, stderr, usage = response.exit_code, response.stderr, response.usage
        session = _of_type(response.metadata.get("session_id"), str)
    else:
        details = unsafe_perform_io(answer.failure()).context
        text = _of_type(details.get("stdout_tail"), str)
        exit_code = _of_type(details.get("returncode"), int)
        stderr = _of_type(details.get("stderr_tail"), str) or ""
        session = _of_type(details.get("session_id"), str)
        usage = usage_of_failure(details)
    error = None if isinstance(checked, IOSuccess) else unsafe_perform_io(checked.failure())
    scope = current_scope()
    path, attempt = current_attempt()
    scope.emit(
        AgentExchanged(
            scope.run_id,
            path or request.branch or request.step_name,
            attempt or request.attempt,
            request.step_name,
            request.prompt,
            text,
            exit_code,
            stderr,
            session,
            seconds,
            usage,
            error,
            request.max_output_bytes,
        )
    )
    return usage


def agent_step(  # noqa: PLR0913 - the step's whole configuration, all keyword-only
    name: str,
    *,
    prompt: str,
    agent: AgentBackend,
    contract: OutputContract = OutputContract(),  # noqa: B008 - frozen, safe to share
    retry: RetryPolicy = RetryPolicy(max_attempts=3),  # noqa: B008 - frozen, safe to share
    always_run: bool = False,
    timeout: float | None = None,
    cwd: str | None = None,
    when: Callable[[WorkflowContext], bool] | None = None,
    budget: Budget | None = None,
    rerun_on_resume: bool = False,
    edits: bool = False,
    idle_timeout: float | None = None,
) -> Step:
    """Build a step that asks `agent` and lets only a proven answer through.

    `prompt` and `cwd` may hold `{key}`, `{key.field}` and `{key[0]}`
    placeholders filled from the inputs (a missing key, field or element is
    `MissingInput` naming the path, before the agent is called; a brace
    group that looks like a placeholder but is not one is a `ValueError`
    now). The agent
    sees the prompt, the contract's instructions and every feedback line so
    far. The contract's keys become outputs under lower-case names, `*_JSON`
    keys holding the parsed JSON or the schema instance; what the backend
    measured (cost, turns, session id, seconds) becomes `<name>_agent` when
    it reported anything, so it reaches the run's events and journal. A
    `ContractViolation` is retried (with its problems as feedback) within
    `retry`; `Blocked` never is. The backend's `usage` is charged to the
    attempt (and journaled with it), and before every call the run's spend
    so far is checked against `budget`, the workflow's and the command
    line's: past the tightest, the agent is not called and the step fails
    `BudgetExceeded`, which is never retried. `rerun_on_resume` makes `adws
    resume` ask again even after a success (see `Step`). Impossible arguments (an agent
    given as a string, a timeout of `"5"`) are refused here, at definition
    time.

    Inside a `worktree` step, an agent step with no `cwd` of its own runs in
    the worktree's folder (see `adws.engine.scope.current_worktree`).

    `edits=True` says the agent may change files in its `cwd`; each CLI
    backend turns it into its own switch (`claude`: `--permission-mode
    acceptEdits`; `codex`: `--sandbox workspace-write`, else `read-only`;
    `ClaudeAgent`: its permission mode), and a CLI that reports a refused
    tool fails the attempt with `PermissionDenied` (never retried).
    `idle_timeout` (seconds): an agent that prints nothing for that long is
    stopped (`AgentHung`). Failures of the infrastructure (an API error, a
    hang, a timeout) are retried without feedback: the model never
    answered. An `AgentUnavailable` that names when the service will take
    calls again is retried after that wait, through the run's `sleep`, when
    the wait fits in the run's `max_wait` (whatever `timeout`: it bounds a
    call, not the wait between calls); a later reset parks the run
    (`Parked`, see `adws.engine.parking`), the failed call charged once.
    """
    owner = f"agent_step {name!r}"
    require_type(owner, "prompt", prompt, str, "a str")
    if isinstance(agent, str):
        msg = (
            f"{owner}: agent must be an AgentBackend such as CommandAgent({agent!r}), got {agent!r}"
        )
        raise TypeError(msg)
    require_callable(owner, "agent", agent)
    require_type(owner, "contract", contract, OutputContract, "an OutputContract")
    require_seconds(owner, "timeout", timeout, optional=True)
    require_type(owner, "cwd", cwd, (str, type(None)), "a str or None")
    require_type(owner, "budget", budget, (Budget, type(None)), "a Budget or None")
    require_type(owner, "edits", edits, bool, "a bool")
    require_seconds(owner, "idle_timeout", idle_timeout, optional=True)
    check_template(prompt, owner=f"step {name!r}", what="the prompt")
    if cwd is not None:
        check_template(cwd, owner=f"step {name!r}", what="the cwd")

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        rendered = render_for_step(prompt, ctx.inputs, step_name=name, what="the prompt")
        where = render_for_step(cwd, ctx.inputs, step_name=name, what="the cwd")
        if isinstance(rendered, PipelineError):
            return IOFailure(rendered)
        if isinstance(where, PipelineError):
            return IOFailure(where)
        where = where if where is not None else current_worktree()
        scope, branch = current_scope(), current_branch()

        def report(doing: str) -> None:
            scope.emit(AgentActivity(scope.run_id, name, branch, doing))

        request = AgentRequest(
            compose_prompt(rendered, contract, ctx.feedback),
            name,
            attempt=attempt_number(ctx),
            timeout=timeout,
            cwd=where,
            max_output_bytes=contract.max_output_bytes,
            branch=branch,
            contract=contract,
            edits=edits,
            idle_timeout=idle_timeout,
            on_activity=report,
        )
        agents = scope.agents  # the run's cap on agent calls in flight
        with agents if agents is not None else contextlib.nullcontext():
            # Checked once a slot is free: the spend may have grown while it waited.
            refused = _over_budget(name, budget)
            if refused is not None:
                return IOFailure(refused)
            started = io_ops.monotonic()
            try:
                answer = agent(request)
            except BaseException as exc:
                # The prompt went out: keep it, and why no answer came, before the error goes on.
                raised: IOResult[AgentResponse, PipelineError] = IOFailure(_raised(name, exc))
                _exchanged(request, raised, raised, io_ops.monotonic() - started)
                raise
            seconds = io_ops.monotonic() - started
        answer = answer.alt(lambda error: bounded_wait(error, scope.max_wait))
        checked = answer.bind(lambda response: _outputs(response, contract, name))
        charge(_exchanged(request, answer, checked, seconds))
        return checked.map(ctx.merge_outputs)

    return Step(
        name,
        run,
        always_run=always_run,
        retry=retry,
        when=when,
        rerun_on_resume=rerun_on_resume,
        kind="agent",
        spec=AgentSpec(prompt, agent, contract, timeout, cwd, budget, edits, idle_timeout),
    )
