"""`agent_step`: render a prompt, ask an agent, prove the answer, merge its fields."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess
from returns.result import Failure
from returns.unsafe import unsafe_perform_io

from adws import io_ops
from adws._checks import require_callable, require_seconds, require_type
from adws._exceptions import DefinitionTypeError
from adws.agents._failures import bounded_wait, with_hint
from adws.agents.base import AgentBackend, AgentRequest, AgentResponse
from adws.agents.quota import agent_account, reports_of
from adws.agents.sessions import (
    CallSessions,
    Continuation,
    SessionMode,
    check_sessions,
    continues_sessions,
    lost_session,
    plan_continuation,
)
from adws.contract.template import check_template, render_for_step
from adws.contract.validator import OutputContract, validate_agent_output
from adws.engine.caps import CapFull, CapSettle
from adws.engine.errors import Cancellation, ErrorType, PipelineError
from adws.engine.events import AgentActivity, AgentExchanged
from adws.engine.metering import charge
from adws.engine.reservations import Refusal, fits, unknown
from adws.engine.retry import attempt_number, current_attempt
from adws.engine.scope import (
    RunScope,
    current_branch,
    current_round,
    current_scope,
    current_worktree,
)
from adws.engine.step import RetryPolicy, Step
from adws.engine.usage import Budget, Usage, dollars, usage_of_failure
from adws.io_ops.changes import stat_snapshot
from adws.workspaces.patches import CallEdits

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from adws.engine.context import WorkflowContext

__all__ = ["AgentSpec", "agent_step", "asking_path", "budget_question", "compose_prompt"]

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
    sessions: SessionMode = "continue"
    allow_no_change: bool = False
    env_pass: tuple[str, ...] = ()

    def build(self, step: Step) -> Step:
        """Build `step` again as this spec says; what `agent_step` does not know of, it keeps.

        Its retry, `always_run`, `when`, reads and writes, `rerun_on_resume`.
        """
        rebuilt = agent_step(
            step.name,
            prompt=self.prompt,
            agent=self.agent,
            contract=self.contract,
            timeout=self.timeout,
            cwd=self.cwd,
            budget=self.budget,
            edits=self.edits,
            idle_timeout=self.idle_timeout,
            sessions=self.sessions,
            allow_no_change=self.allow_no_change,
            env_pass=self.env_pass,
        )
        return attrs.evolve(
            rebuilt,
            always_run=step.always_run,
            retry=step.retry,
            when=step.when,
            reads=step.reads,
            writes=step.writes,
            rerun_on_resume=step.rerun_on_resume,
        )

    def with_prompt(self, step: Step, prompt: str) -> Step:
        """Build `step` again asking `prompt` instead (a judge given its candidates)."""
        return attrs.evolve(self, prompt=prompt).build(step)


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


def _limit(budget: Budget | None, scope: RunScope) -> Budget | None:
    """Return the tightest budget that applies to this call (a raised one replacing limits)."""
    if budget is None:
        return scope.budget
    return budget.tighter(scope.budget).raised_to(scope.raised)


def budget_question(step_name: str, limit: Budget, spent: Usage, estimate: Usage | None) -> str:
    """Ask for more budget, naming the spend and the step.

    >>> budget_question("implement", Budget(5.0), Usage(4.93), Usage(0.4))
    'spent $4.93 of $5.00; step implement needs about $0.40'
    >>> budget_question("plan", Budget(max_tokens=900), Usage(input_tokens=950), None)
    'used 950 of 900 tokens; step plan needs more to call its agent'
    """
    guess = estimate or Usage()
    cost, tokens = spent.cost_usd or 0.0, spent.tokens or 0
    most_cost, most_tokens = limit.max_cost_usd, limit.max_tokens
    over_cost = most_cost is not None and round(cost + (guess.cost_usd or 0.0), 9) >= most_cost
    if most_cost is not None and (over_cost or most_tokens is None):
        said, needs = f"spent {dollars(cost)} of {dollars(most_cost)}", guess.cost_usd
        need = None if needs is None else dollars(needs)
    else:
        said = f"used {tokens:,} of {most_tokens or 0:,} tokens"
        need = None if guess.tokens is None else f"{guess.tokens:,} tokens"
    wants = "more to call its agent" if need is None else f"about {need}"
    return f"{said}; step {step_name} needs {wants}"


def _refused(  # noqa: PLR0913 - the call, its budget, and why it does not fit
    name: str,
    ctx: WorkflowContext,
    limit: Budget,
    *,
    spent: Usage,
    estimate: Usage | None,
    why: str,
) -> PipelineError:
    """Fail the call `BudgetExceeded`, or (`on_exceeded="ask"`) ask a person for more."""
    context: dict[str, object] = {"spent": spent.to_dict(), "budget": limit.to_dict()}
    if estimate is not None:
        context["estimate"] = estimate.to_dict()
    if limit.on_exceeded == "ask" and ctx.failure is None:  # cleanup after a failure never asks
        scope = current_scope()
        said = [d for d in scope.decisions.values() if d.verdict == "rejected"]
        where = current_attempt()[0] or name
        if said:  # the person asked before said no: the run ends here
            reason = said[0].note or "no reason given"
            context["decision"] = said[0].to_dict()
            message = f"rejected by {said[0].by}: {reason} (the budget was not raised)"
            return PipelineError(where, ErrorType.REJECTED, message, context)
        context.update(timeout=None, budget_question=True)
        question = budget_question(name, limit, spent, estimate)
        return PipelineError(where, ErrorType.AWAITING_APPROVAL, question, context)
    message = f"{why}; the agent was not called"
    return PipelineError(name, ErrorType.BUDGET_EXCEEDED, message, context)


def _alone(
    name: str, ctx: WorkflowContext, limit: Budget, *, caps_cost: bool
) -> float | PipelineError | None:
    """Let a call made one at a time start within `limit`: the room it is given, or why not.

    It starts when the spend so far plus its estimate fits (the rule of
    `adws.engine.reservations`). With no estimate, a backend that caps its
    own spend gets the dollars left (returned); another starts under
    `unestimated="allow"`, a budget that fails (nobody to ask) or one a
    person raised, and is otherwise the budget question.
    """
    scope = current_scope()
    spent = scope.meter.usage
    estimate = scope.ledger.estimate(name, scope.estimate)
    why = limit.exceeded(spent)
    if why is None and not unknown(limit, estimate):
        if fits(limit, spent, Usage(), estimate):
            return None
        why = (
            f"the run has spent {spent.describe()} of its {limit.describe()} budget and a call"
            f" of step {name!r} is estimated at {(estimate or Usage()).describe()}"
        )
    elif why is None:
        most = limit.max_cost_usd
        if caps_cost and most is not None:
            return round(most - (spent.cost_usd or 0.0), 9)
        asks = limit.on_exceeded == "ask" and limit.unestimated == "ask"
        if not asks or scope.raised is not None:
            return None
        why = (
            f"a call of step {name!r} has no estimate yet and its agent cannot cap its own"
            f" spend (the run has spent {spent.describe()} of its {limit.describe()} budget)"
        )
    return _refused(name, ctx, limit, spent=spent, estimate=estimate, why=why)


def _admit(name: str, ctx: WorkflowContext, limit: Budget) -> Usage | PipelineError | None:
    """Let a branch's call start within `limit`: the reservation it holds, or why not."""
    scope = current_scope()
    cancel = io_ops.CANCEL.get()
    held = scope.ledger.reserve(
        step=name,
        limit=limit,
        meter=scope.meter,
        history=scope.estimate,
        cancelled=cancel.is_set if cancel is not None else bool,
    )
    if not isinstance(held, Refusal):
        return held
    spent, estimate = held.spent, held.estimate
    why = limit.exceeded(spent) or (
        f"the run has spent {spent.describe()} of its {limit.describe()} budget and a call of "
        f"step {name!r} is estimated at {(estimate or Usage()).describe()}"
    )
    return _refused(name, ctx, limit, spent=spent, estimate=estimate, why=why)


def _admitted(  # noqa: PLR0913 - the call, its budget and its backend
    name: str,
    ctx: WorkflowContext,
    budget: Budget | None,
    scope: RunScope,
    *,
    request: AgentRequest,
    agent: AgentBackend,
) -> tuple[Budget | None, Usage | None, AgentRequest, CapSettle] | PipelineError:
    """Return the budget the call runs under, what it reserved, the request and its caps' settle.

    Or why it may not start (a window of the agent's account past the
    run's `--park-at`, the run's budget, then the caps that hold across
    runs, see `_capped`). A call with no estimate to a backend that caps its
    own spend is sent the room left (`AgentRequest.max_cost_usd`).
    """
    parked = _quota_parked(name, scope, agent_account(agent))  # its environment, read now
    if parked is not None:
        return parked
    limit = _limit(budget, scope)
    held: Usage | None = None
    if limit is not None and request.branch:
        admitted = _admit(name, ctx, limit)
        if isinstance(admitted, PipelineError):
            return admitted
        held = admitted
    elif limit is not None:
        caps_cost = getattr(agent, "caps_cost", False) is True
        room = _alone(name, ctx, limit, caps_cost=caps_cost)
        if isinstance(room, PipelineError):
            return room
        request = attrs.evolve(request, max_cost_usd=room)
    capped = _capped(name, scope)
    if isinstance(capped, PipelineError):
        _settle(scope, limit, held, None, request.branch, capped=_no_cap)
        return capped
    return limit, held, request, capped


def _settle(  # noqa: PLR0913 - the call's reservations, each to give way
    scope: RunScope,
    limit: Budget | None,
    held: Usage | None,
    usage: Usage | None,
    branch: str,
    *,
    capped: CapSettle,
) -> None:
    """Let a charged call's reservations give way to its cost; remember its size."""
    capped(usage)
    if limit is not None and branch:
        scope.ledger.settle(held, usage)
    else:  # remembered under no budget too: the caps across runs estimate calls by it
        scope.ledger.saw(usage)


def _capped(name: str, scope: RunScope) -> CapSettle | PipelineError:
    """Pass a call through the caps that hold across runs: how to settle it, or why not.

    The call's estimate (as the budget's, see `adws.engine.reservations`)
    is reserved against every cap that applies; a cap with no room parks
    the run until its window frees, an unreadable one fails the call
    `BudgetExceeded` (it is never retried).
    """
    gate = scope.caps
    if gate is None:
        return _no_cap
    found = gate(name, scope.ledger.estimate(name, scope.estimate))
    if not isinstance(found, CapFull):
        return found
    if found.wake_at is None:
        return PipelineError(name, ErrorType.BUDGET_EXCEEDED, found.reason)
    context = {"wake_at": found.wake_at, "reason": found.reason, "was": ErrorType.BUDGET_EXCEEDED}
    return PipelineError(name, ErrorType.PARKED, found.reason, context)


def _quota_parked(name: str, scope: RunScope, account: str | None) -> PipelineError | None:
    """Park a call whose agent account has a window past the run's `--park-at`, or None.

    (see `adws.journal.store.quotas`; no journal, no quotas).
    """
    book = scope.quotas
    found = None if book is None or account is None else book.parked(account)
    if found is None:
        return None
    context = {"wake_at": found.wake_at, "reason": found.reason, "was": ErrorType.AGENT_UNAVAILABLE}
    return PipelineError(name, ErrorType.PARKED, found.reason, context)


def _kept_quota(
    scope: RunScope, agent: AgentBackend, answer: IOResult[AgentResponse, PipelineError]
) -> IOResult[AgentResponse, PipelineError]:
    """Keep what a call's CLI said of its account's quota windows; return the answer as it was.

    (see `adws.agents.quota`; no journal, nothing kept.)
    """
    account = agent_account(agent)
    if scope.quotas is None or account is None:
        return answer
    if isinstance(answer, IOSuccess):
        reports = reports_of(unsafe_perform_io(answer.unwrap()).metadata, None)
    else:
        error = unsafe_perform_io(answer.failure())
        reports = reports_of(error.context, error)
    scope.quotas.record(account, reports)
    return answer


def _no_cap(_usage: Usage | None) -> None:
    """Settle a call no cap watched: nothing to do."""


@final
class _Changes:
    """Whether a call's folder changed since its round began: for `NoChange`."""

    def __init__(self, name: str, folder: str | None, *, judged: bool) -> None:
        """Note the folder's state when this step's round began (now, if this is its first call).

        With `judged` false (no `edits`, or `allow_no_change`) nothing is read or judged.
        """
        self.name, self.folder, self.on = name, folder or ".", judged
        place = (str(Path(self.folder).absolute()), name)
        mark = current_round()
        self.start: object = None
        if judged:
            self.start = self.read() if mark is None else mark.remember(place, self.read)

    def read(self) -> Mapping[str, tuple[object, ...]]:
        """Read the folder's state now (see `stat_snapshot`)."""
        return stat_snapshot(self.folder)

    def judged(
        self, checked: IOResult[dict[str, object], PipelineError]
    ) -> IOResult[dict[str, object], PipelineError]:
        """Fail an accepted answer `NoChange` when nothing in the folder was written since."""
        if not self.on or not isinstance(checked, IOSuccess):
            return checked
        if stat_snapshot(self.folder) != self.start:
            return checked
        message = (
            "you changed no file: the task needs a change to the files in your working folder;"
            " make it, then answer"
        )
        where = {"folder": str(Path(self.folder).absolute())}
        return IOFailure(PipelineError(self.name, ErrorType.NO_CHANGE, message, where))


def _of_type(value: object, kind: type[_T]) -> _T | None:
    """Keep a value a backend put in an error's context only when it has the expected type."""
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


def _raised(step_name: str, exc: BaseException) -> PipelineError:
    """Describe an agent call that raised instead of answering (Ctrl-C included)."""
    kind = ErrorType.STEP_EXCEPTION
    if isinstance(exc, KeyboardInterrupt):
        kind = ErrorType.CANCELLED if isinstance(exc, Cancellation) else ErrorType.INTERRUPTED
    return PipelineError(step_name, kind, f"the agent raised {type(exc).__name__}: {exc}")


def _ask(
    agent: AgentBackend, request: AgentRequest
) -> tuple[IOResult[AgentResponse, PipelineError], float]:
    """Call the agent; return its answer and how long it took.

    A call that raises (Ctrl-C included) is journaled before the exception
    goes on: the prompt went out, and why no answer came is kept.
    """
    started = io_ops.monotonic()
    try:
        answer = agent(request)
    except BaseException as exc:
        raised: IOResult[AgentResponse, PipelineError] = IOFailure(_raised(request.step_name, exc))
        _exchanged(request, raised, raised, io_ops.monotonic() - started)
        raise
    return answer, io_ops.monotonic() - started


def _call(  # noqa: PLR0913 - the call, and what continuing its session needs
    agent: AgentBackend,
    request: AgentRequest,
    calls: CallSessions,
    plan: Continuation | None,
    *,
    feedback: tuple[str, ...],
    whole: str,
) -> tuple[IOResult[AgentResponse, PipelineError], float, AgentRequest]:
    """Ask the agent, continuing `plan`'s session; a session the CLI lost is asked afresh.

    Returns the answer, how long it took and the request that got it (the
    whole prompt in a new session, when the first one was lost).
    """
    calls.start(plan, feedback, why=plan.why if plan is not None else "")
    answer, seconds = _ask(agent, request)
    lost = _lost(answer) if plan is not None and not plan.why else None
    if lost is None:
        return answer, seconds, request
    charge(_exchanged(request, answer, answer, seconds))  # the CLI lost the session
    calls.start(plan, feedback, why=lost)
    request = attrs.evolve(request, prompt=whole, session=None)
    answer, seconds = _ask(agent, request)
    return answer, seconds, request


def _lost(answer: IOResult[AgentResponse, PipelineError]) -> str | None:
    """Say what the agent said when it could not find the session to continue, or None."""
    if isinstance(answer, IOSuccess):
        return None
    return lost_session(unsafe_perform_io(answer.failure()))


def asking_path(request: AgentRequest) -> str:
    """Name the attempt a call belongs to as the journal records it: the step or branch path.

    Outside a run's attempt it is the request's branch, else its step.
    """
    return current_attempt()[0] or request.branch or request.step_name


def _exchanged(
    request: AgentRequest,
    answer: IOResult[AgentResponse, PipelineError],
    checked: IOResult[object, PipelineError],
    seconds: float,
    patch: str | None = None,
) -> Usage | None:
    """Report the call whole to the run's observers (the journal keeps it); return its cost.

    A failed call is described by what its backend put in the error's
    context (`stdout_tail`, `returncode`, `stderr_tail`, `session_id`);
    `patch` is what it changed in its worktree (see `CallEdits`).
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
    attempt = current_attempt()[1]
    scope.emit(
        AgentExchanged(
            scope.run_id,
            asking_path(request),
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
            patch,
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
    sessions: SessionMode = "continue",
    allow_no_change: bool = False,
    env_pass: Sequence[str] = (),
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
    `BudgetExceeded`, which is never retried. Inside a branch of `parallel`,
    `fan_out` or `best_of` the call also reserves its estimate while it
    runs (see `adws.engine.reservations`). Under a budget that asks
    (`on_exceeded="ask"`) the step instead waits for a person: `adws approve
    RUN --max-cost USD` raises the budget and the run goes on; after `adws
    reject` the step fails `Rejected`. `rerun_on_resume` makes `adws
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
    Nothing is no fix: with `edits=True`, an answer after which no file in
    the step's folder was created, deleted or written since its round began
    fails `NoChange` ("you changed no file"; retried under `retry` with that
    feedback), unless `allow_no_change=True`. A round is the step's call
    under its retry policy, or one round of a `with_verification` (see
    `adws.engine.scope.Round`): a retry that only mends its answer, after
    an attempt that changed files, has changed something. The folder is
    read from disk (`adws.io_ops.changes.stat_snapshot`; `.git` and tool
    caches such as `__pycache__` left out, ignored files counted).
    `idle_timeout` (seconds): an agent that prints nothing for that long is
    stopped (`AgentHung`). Failures of the infrastructure (an API error, a
    hang, a timeout) are retried without feedback: the model never
    answered. An `AgentUnavailable` that names when the service will take
    calls again is retried after that wait, through the run's `sleep`, when
    the wait fits in the run's `max_wait` (whatever `timeout`: it bounds a
    call, not the wait between calls); a later reset parks the run
    (`Parked`, see `adws.engine.parking`), the failed call charged once.

    `sessions="continue"` (the default): a retry after a rejected answer,
    and the next round of a `with_verification`, continue the agent's
    session of the call before and send it only the feedback, when the
    backend can continue sessions (the `claude` and `codex` presets,
    `ClaudeAgent`; see `adws.agents.sessions`); a session the agent's CLI
    lost is asked again afresh with the whole prompt, and the journal says
    why. `"fresh"` starts every call in a new session with the whole prompt.

    The agent's process sees the user's environment less adws's own
    credentials: `ADWS_JOURNAL`, every `PG*` variable, `GITHUB_TOKEN` and
    `GH_TOKEN` (a prompt-injected agent could print them into its answer).
    `env_pass=("GH_TOKEN",)` lets it see the ones named (see
    `adws.io_ops.environment`).
    """
    owner = f"agent_step {name!r}"
    require_type(owner, "prompt", prompt, str, "a str")
    if isinstance(agent, str):
        msg = (
            f"{owner}: agent must be an AgentBackend such as CommandAgent({agent!r}), got {agent!r}"
        )
        raise DefinitionTypeError(msg)
    require_callable(owner, "agent", agent)
    require_type(owner, "contract", contract, OutputContract, "an OutputContract")
    require_seconds(owner, "timeout", timeout, optional=True)
    require_type(owner, "cwd", cwd, (str, type(None)), "a str or None")
    require_type(owner, "budget", budget, (Budget, type(None)), "a Budget or None")
    for flag, value in (("edits", edits), ("allow_no_change", allow_no_change)):
        require_type(owner, flag, value, bool, "a bool")
    require_seconds(owner, "idle_timeout", idle_timeout, optional=True)
    check_sessions(owner, sessions)
    passed, continuing = (
        io_ops.checked_env_pass(owner, env_pass),
        sessions == "continue" and continues_sessions(agent),
    )
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

        path, journaled = current_attempt()
        calls = CallSessions((path or branch or name, name), journaled or attempt_number(ctx))
        whole = compose_prompt(rendered, contract, ctx.feedback)
        plan = plan_continuation(calls.before(), ctx.feedback, name, whole) if continuing else None
        request = AgentRequest(
            whole if plan is None else plan.prompt,
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
            session=None if plan is None or plan.why else plan.session,
            on_session=calls.announce,
            env_pass=passed,
        )
        agents = scope.agents  # the run's cap on agent calls in flight
        with agents if agents is not None else contextlib.nullcontext():
            # Checked once a slot is free: the spend may have grown while it waited.
            admitted = _admitted(name, ctx, budget, scope, request=request, agent=agent)
            if isinstance(admitted, PipelineError):
                return IOFailure(admitted)
            limit, held, request, capped = admitted
            watched = _Changes(name, where, judged=edits and not allow_no_change)
            changes = CallEdits()
            try:
                answer, seconds, request = _call(
                    agent, request, calls, plan, feedback=ctx.feedback, whole=whole
                )
            except BaseException:  # journaled by _ask; its reservations are given back
                _settle(scope, limit, held, None, branch, capped=capped)
                raise
        answer = _kept_quota(
            scope, agent, answer.alt(lambda error: bounded_wait(error, scope.max_wait))
        )
        answer = calls.finish(answer)
        checked = watched.judged(answer.bind(lambda response: _outputs(response, contract, name)))
        usage = _exchanged(request, answer, checked, seconds, changes.patch())
        charge(usage)
        _settle(scope, limit, held, usage, branch, capped=capped)  # charged first: never reads low
        return checked.map(ctx.merge_outputs)

    return Step(
        name,
        run,
        always_run=always_run,
        retry=retry,
        when=when,
        rerun_on_resume=rerun_on_resume,
        kind="agent",
        spec=AgentSpec(
            prompt,
            agent,
            contract,
            timeout,
            cwd,
            budget,
            edits,
            idle_timeout,
            sessions,
            allow_no_change,
            passed,
        ),
    )
