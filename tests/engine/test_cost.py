"""Usage per attempt and budgets that fail closed, through the real executor."""

from __future__ import annotations

import math
import threading
import time
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.io import IOFailure, IOSuccess

from adws import (
    ErrorType,
    PipelineError,
    RetryPolicy,
    Step,
    Workflow,
    WorkflowContext,
    run_workflow,
)
from adws.agents import AgentBackend, AgentRequest, AgentResponse, ScriptedAgent
from adws.agents.step import agent_step
from adws.contract.validator import OutputContract
from adws.engine.combinators import with_verification
from adws.engine.concurrency import fan_out, parallel
from adws.engine.events import (
    AttemptFailed,
    BranchAttemptFailed,
    BranchFinished,
    RunFinished,
    StepSucceeded,
)
from adws.engine.metering import charge
from adws.engine.usage import MAX_COST_USD, MAX_COUNT, Budget, Usage
from tests.conftest import Events, failure, success

if TYPE_CHECKING:
    from collections.abc import Callable

    from returns.io import IOResult

DONE = "STATUS: done\nANSWER: yes\n"
CONTRACT = OutputContract(("ANSWER",))


def costing(
    cost: float, text: str | None = None, tokens: int = 100
) -> Callable[[AgentRequest], AgentResponse]:
    """Answer `text` (a valid report by default), reporting that the call cost `cost`."""

    def respond(request: AgentRequest) -> AgentResponse:
        answer = text if text is not None else f"STATUS: done\n{request.step_name.upper()}: yes\n"
        return AgentResponse(answer, {}, Usage(cost, tokens, 0, 1, "m"))

    return respond


def ask(name: str, agent: ScriptedAgent, budget: Budget | None = None) -> Step:
    contract = OutputContract((name.upper(),))
    return agent_step(name, prompt=f"{name}?", agent=agent, contract=contract, budget=budget)


def cleanup_step(seen: list[WorkflowContext]) -> Step:
    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        seen.append(ctx)
        return IOSuccess(ctx)

    return Step("cleanup", run, always_run=True)


def finished(events: Events) -> RunFinished:
    last = events.events[-1]
    assert isinstance(last, RunFinished)
    return last


def test_a_retried_step_costs_both_attempts(events: Events) -> None:
    """The rejected answer's cost is on its AttemptFailed, the accepted one's on StepSucceeded."""
    agent = ScriptedAgent([costing(0.25, "no status here"), costing(0.5)])
    success(run_workflow(Workflow("w", (ask("answer", agent),)), observers=[events]))
    [failed] = [e for e in events.events if isinstance(e, AttemptFailed)]
    [succeeded] = [e for e in events.events if isinstance(e, StepSucceeded)]
    assert failed.usage == Usage(0.25, 100, 0, 1, "m")
    assert succeeded.usage == Usage(0.5, 100, 0, 1, "m")
    assert finished(events).usage == Usage(0.75, 200, 0, 2, "m")


def test_a_budget_stops_the_third_of_three_steps_without_calling_its_agent(
    events: Events,
) -> None:
    """The third call would start at $0.20 spent: it is not made, not retried; cleanup runs."""
    agents = [ScriptedAgent([costing(0.1)] * 3) for _ in range(3)]
    seen: list[WorkflowContext] = []
    steps = (*(ask(f"s{i}", agents[i]) for i in range(3)), cleanup_step(seen))
    workflow = Workflow("w", steps, budget=Budget(max_cost_usd=0.2))
    error = failure(run_workflow(workflow, observers=[events]))
    assert (error.step_name, error.error_type) == ("s2", ErrorType.BUDGET_EXCEEDED)
    assert error.message == (
        "the run has spent $0.2000 of its $0.2000 budget (max_cost_usd); the agent was not called"
    )
    assert error.context["attempts"] == 1  # never retried, though the step allows 3
    assert error.context["spent"] == Usage(0.2, 200, 0, 2, "m").to_dict()
    assert error.context["budget"] == {"max_cost_usd": 0.2, "max_tokens": None}
    assert [len(agent.requests) for agent in agents] == [1, 1, 0]
    assert [ctx.failure.error_type for ctx in seen if ctx.failure] == ["BudgetExceeded"]
    assert finished(events).budget == Budget(max_cost_usd=0.2)


def test_a_token_budget_and_the_callers_budget_combine_with_the_workflows() -> None:
    """The tighter of each limit applies: here the caller's 150 tokens, not the workflow's $5.

    The second call, estimated at the first one's 100 tokens, would end at 200: it never starts.
    """
    agents = [ScriptedAgent([costing(0.01)]) for _ in range(3)]
    workflow = Workflow(
        "w", tuple(ask(f"s{i}", agents[i]) for i in range(3)), budget=Budget(max_cost_usd=5.0)
    )
    error = failure(run_workflow(workflow, budget=Budget(max_tokens=150)))
    assert error.step_name == "s1"
    assert error.message == (
        "the run has spent $0.0100, 100 tokens of its $5.0000, 150 tokens budget and a call"
        " of step 's1' is estimated at $0.0100, 100 tokens; the agent was not called"
    )


def test_a_steps_budget_is_the_runs_spend_past_which_that_step_does_not_call() -> None:
    cheap = ScriptedAgent([costing(0.3)])
    capped = ScriptedAgent([costing(0.3)])
    workflow = Workflow("w", (ask("first", cheap), ask("second", capped, Budget(0.25))))
    assert failure(run_workflow(workflow)).step_name == "second"
    assert capped.requests == ()


def test_a_resumed_run_counts_what_its_earlier_sessions_spent() -> None:
    agent = ScriptedAgent([costing(0.1)])
    workflow = Workflow("w", (ask("only", agent),), budget=Budget(max_cost_usd=1.0))
    error = failure(run_workflow(workflow, spent=Usage(cost_usd=1.0)))
    assert error.error_type == ErrorType.BUDGET_EXCEEDED
    assert agent.requests == ()


def test_a_failed_call_that_reports_usage_is_charged(events: Events) -> None:
    """An AgentFailed whose context carries `usage` (claude's is_error) still costs."""

    def broken(request: AgentRequest) -> IOResult[AgentResponse, PipelineError]:
        usage = Usage(0.4).to_dict()
        return IOFailure(PipelineError(request.step_name, "AgentFailed", "x", {"usage": usage}))

    step = agent_step("s", prompt="p", agent=broken, retry=RetryPolicy(max_attempts=3))
    failure(run_workflow(Workflow("w", (step,)), observers=[events]))
    assert finished(events).usage == Usage(cost_usd=1.2000000000000002)
    assert finished(events).usage.to_dict()["cost_usd"] == 1.2  # type: ignore[union-attr] # checked above


def test_a_run_without_usage_reports_none(events: Events) -> None:
    agent = ScriptedAgent(["STATUS: done\nS: yes\n"])
    success(run_workflow(Workflow("w", (ask("s", agent),)), observers=[events]))
    assert finished(events).usage is None


def test_the_attempt_a_ctrl_c_stopped_keeps_what_it_spent(events: Events) -> None:
    def spend_then_interrupt(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        charge(Usage(cost_usd=0.3))
        raise KeyboardInterrupt

    error = failure(
        run_workflow(Workflow("w", (Step("s", spend_then_interrupt),)), observers=[events])
    )
    assert error.error_type == ErrorType.INTERRUPTED
    [stopped] = [e for e in events.events if isinstance(e, AttemptFailed)]
    assert stopped.usage == Usage(cost_usd=0.3)


def test_usage_inside_a_combinator_adds_up_on_the_outer_step(events: Events) -> None:
    main = ask("main", ScriptedAgent([costing(0.1)]))
    combined = with_verification(main, ask("check", ScriptedAgent([costing(0.2)])))
    success(run_workflow(Workflow("w", (combined,)), observers=[events]))
    [done] = [e for e in events.events if isinstance(e, StepSucceeded)]
    assert done.usage is not None
    assert (done.usage.tokens, done.usage.turns, round(done.usage.cost_usd or 0, 9)) == (
        200,
        2,
        0.3,
    )


def test_branch_events_carry_their_own_usage_and_the_step_their_sum(events: Events) -> None:
    agent = ScriptedAgent([costing(0.1, "garbage"), costing(0.2, DONE), costing(0.3, DONE)])
    step = fan_out(
        "each",
        agent_step("one", prompt="{item}", agent=agent, contract=CONTRACT),
        over="items",
        max_concurrency=1,
    )
    workflow = Workflow("w", (step,), inputs=("items",))
    success(run_workflow(workflow, WorkflowContext({"items": ["a", "b"]}), observers=[events]))
    [rejected] = [e for e in events.events if isinstance(e, BranchAttemptFailed)]
    ends = [(e.branch, e.usage) for e in events.events if isinstance(e, BranchFinished)]
    assert rejected.usage == Usage(0.1, 100, 0, 1, "m")
    assert ends == [
        ("each[0]", Usage(0.2, 100, 0, 1, "m")),
        ("each[1]", Usage(0.3, 100, 0, 1, "m")),
    ]
    [done] = [e for e in events.events if isinstance(e, StepSucceeded)]
    assert done.usage is not None
    assert math.isclose(done.usage.cost_usd or 0, 0.6)


def paid(cost: float, calls: list[str], lock: threading.Lock, pause: float = 0.05) -> AgentBackend:
    """Answer in `pause` seconds (so calls overlap), reporting that the call cost `cost`."""

    def respond(request: AgentRequest) -> IOResult[AgentResponse, PipelineError]:
        with lock:
            calls.append(request.prompt)
        time.sleep(pause)
        return IOSuccess(AgentResponse(DONE, {}, Usage(cost, 100, 0, 1, "m")))

    return respond


def eight_branches(
    agent: AgentBackend, budget: Budget, *, before: tuple[Step, ...] = ()
) -> Workflow:
    step = fan_out(
        "each", agent_step("one", prompt="{item}", agent=agent, contract=CONTRACT), over="items"
    )
    return Workflow("w", (*before, step), inputs=("items",), budget=budget)


def test_a_fan_out_of_eight_under_a_cap_of_three_calls_spends_exactly_the_cap(
    events: Events,
) -> None:
    """Eight real threads, $1 a call, $3 budget: exactly three calls, $3 spent.

    The first call runs alone (no estimate yet), then two more reserve $1
    each; the rest wait, and fail once nothing is in flight.
    """
    calls: list[str] = []
    agent = paid(1.0, calls, threading.Lock())
    workflow = eight_branches(agent, Budget(max_cost_usd=3.0))
    error = failure(
        run_workflow(workflow, WorkflowContext({"items": list("abcdefgh")}), observers=[events])
    )
    assert (error.error_type, len(calls)) == (ErrorType.BUDGET_EXCEEDED, 3)
    assert finished(events).usage == Usage(3.0, 300, 0, 3, "m")
    assert error.message == (
        "the run has spent $3.0000 of its $3.0000 budget (max_cost_usd); the agent was not called"
    )


def test_calls_that_cost_more_than_their_estimate_overshoot_by_that_error_only() -> None:
    """An earlier $1 call sets the estimate; the branches then cost $1.25 each.

    Under $3.25, two branches start at once ($1 spent + $1 + $1 reserved),
    and no third: $3.50 is spent, the cap plus each call's estimate error
    ($0.25 for each of the two in flight).
    """
    calls: list[str] = []
    lock = threading.Lock()
    first = agent_step("first", prompt="go", agent=paid(1.0, [], lock, 0.0), contract=CONTRACT)
    workflow = eight_branches(paid(1.25, calls, lock), Budget(3.25), before=(first,))
    events = Events()
    failure(
        run_workflow(workflow, WorkflowContext({"items": list("abcdefgh")}), observers=[events])
    )
    assert (len(calls), finished(events).usage) == (2, Usage(3.5, 300, 0, 3, "m"))


def test_a_call_estimated_from_the_history_reserves_that_estimate() -> None:
    """With the run's `estimate` saying $2 a call and $1 actual, a $5 budget starts two at once."""
    calls: list[str] = []
    agent = paid(1.0, calls, threading.Lock(), 0.2)
    workflow = eight_branches(agent, Budget(max_cost_usd=5.0))
    estimates = {"one": Usage(2.0)}
    failure(
        run_workflow(workflow, WorkflowContext({"items": list("abcdefgh")}), estimate=estimates.get)
    )
    # $0 + $2 + $2 fit, a third $2 does not; once both settle ($2 spent), $2 + $2 fit, and
    # then $4 spent + $2 does not: four calls, $4.
    assert len(calls) == 4


def test_a_token_budget_reserves_tokens() -> None:
    calls: list[str] = []
    agent = paid(1.0, calls, threading.Lock())
    failure(
        run_workflow(
            eight_branches(agent, Budget(max_tokens=250)),
            WorkflowContext({"items": list("abcdefgh")}),
        )
    )
    assert len(calls) == 2


def test_a_call_that_raises_gives_back_its_reservation() -> None:
    """A branch whose agent raises settles its reservation: the others still fit."""
    calls: list[str] = []
    lock = threading.Lock()

    def respond(request: AgentRequest) -> IOResult[AgentResponse, PipelineError]:
        with lock:
            calls.append(request.prompt)
        if request.prompt.startswith("b"):
            msg = "boom"
            raise RuntimeError(msg)
        return IOSuccess(AgentResponse(DONE, {}, Usage(1.0)))

    first = agent_step("first", prompt="go", agent=paid(1.0, [], lock, 0.0), contract=CONTRACT)
    step = fan_out(
        "each",
        agent_step("one", prompt="{item}", agent=respond, contract=CONTRACT, retry=RetryPolicy(1)),
        over="items",
        max_concurrency=1,
        fail_fast=False,
    )
    workflow = Workflow("w", (first, step), inputs=("items",), budget=Budget(3.0))
    failure(run_workflow(workflow, WorkflowContext({"items": list("abcd")})))
    assert [call.split("\n")[0] for call in calls] == ["a", "b", "c"]


def test_a_cancelled_branch_stops_waiting_for_a_reservation() -> None:
    """A branch waiting for room gives up once its step is cancelled by a sibling's failure."""
    lock = threading.Lock()
    calls: list[str] = []

    def respond(request: AgentRequest) -> IOResult[AgentResponse, PipelineError]:
        with lock:
            calls.append(request.prompt)
        time.sleep(0.3)
        return IOSuccess(AgentResponse("STATUS: done\nA: yes\n", {}, Usage(1.0)))

    def broken(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        time.sleep(0.1)
        return IOFailure(PipelineError("", ErrorType.SHELL_FAILED, "broken"))

    steps = (
        agent_step("a", prompt="a", agent=respond, contract=OutputContract(("A",))),
        agent_step("b", prompt="b", agent=respond, contract=OutputContract(("B",))),
        Step("c", broken),
    )
    workflow = Workflow("w", (parallel("p", steps),), budget=Budget(10.0))
    error = failure(run_workflow(workflow))
    assert (error.error_type, len(calls)) == (ErrorType.SHELL_FAILED, 1)


def test_a_token_budget_that_asks_names_the_tokens_and_the_estimate() -> None:
    """Two calls of 100 tokens under 250: a third would pass it, so the run asks."""
    calls: list[str] = []
    workflow = eight_branches(
        paid(1.0, calls, threading.Lock()), Budget(max_tokens=250, on_exceeded="ask")
    )
    error = failure(run_workflow(workflow, WorkflowContext({"items": list("abcdefgh")})))
    assert (error.error_type, error.message, len(calls)) == (
        ErrorType.AWAITING_APPROVAL,
        "used 200 of 250 tokens; step one needs about 100 tokens",
        2,
    )


def test_a_budget_over_a_backend_that_reports_nothing_lets_every_call_through() -> None:
    def unmetered(request: AgentRequest) -> AgentResponse:
        return AgentResponse(f"STATUS: done\n{request.step_name.upper()}: yes\n", {}, None)

    agent = ScriptedAgent([unmetered, unmetered])
    workflow = Workflow("w", (ask("a", agent), ask("b", agent)), budget=Budget(0.01))
    success(run_workflow(workflow))
    assert len(agent.requests) == 2


def test_cleanup_after_a_failure_fails_over_budget_instead_of_asking() -> None:
    """A run that has failed never asks: its always_run agent step fails BudgetExceeded."""
    seen: list[WorkflowContext] = []

    def broken(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        charge(Usage(1.0))
        return IOFailure(PipelineError("", ErrorType.SHELL_FAILED, "broken"))

    cleanup = agent_step("tidy", prompt="p", agent=ScriptedAgent([]), contract=CONTRACT)
    workflow = Workflow(
        "w",
        (Step("work", broken), Step("tidy", cleanup.run, always_run=True), cleanup_step(seen)),
        budget=Budget(1.0, on_exceeded="ask"),
    )
    error = failure(run_workflow(workflow))
    assert error.error_type == ErrorType.SHELL_FAILED
    late = error.context["always_run_failures"]
    assert isinstance(late, tuple)
    assert [failed.error_type for failed in late] == [ErrorType.BUDGET_EXCEEDED]


def test_waiting_for_an_agent_slot_checks_the_budget_again() -> None:
    """With --max-agents 1 the branches call one at a time, and the estimate must fit.

    $0.10 spent and $0.10 estimated fit in $0.25; a third $0.10 would not.
    """
    agent = ScriptedAgent([costing(0.1)] * 8)
    step = fan_out(
        "each",
        agent_step("one", prompt="{item}", agent=agent, contract=CONTRACT),
        over="items",
    )
    workflow = Workflow("w", (step,), inputs=("items",), budget=Budget(max_cost_usd=0.25))
    failure(run_workflow(workflow, WorkflowContext({"items": list("abcdefgh")}), max_agents=1))
    assert len(agent.requests) == 2


@given(
    costs=st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=8),
    limit=st.integers(min_value=0, max_value=200),
)
def test_a_budget_admits_exactly_the_calls_that_start_under_it(
    costs: list[int], limit: int
) -> None:
    """Calls run one after another while the spend so far plus the largest call fits.

    The first call has no estimate: a budget that fails lets it start under the limit.
    """
    agents = [ScriptedAgent([costing(cents / 100)]) for cents in costs]
    steps = tuple(ask(f"s{i}", agent) for i, agent in enumerate(agents))
    run_workflow(Workflow("w", steps, budget=Budget(max_cost_usd=limit / 100)))
    spent, largest, expected = 0, None, []
    for cents in costs:
        if spent >= limit or (largest is not None and spent + largest > limit):
            break
        expected.append(1)
        spent += cents
        largest = max(largest or 0, cents)
    called = [len(agent.requests) for agent in agents if agent.requests]
    assert called == expected


@given(
    cents=st.integers(min_value=1, max_value=50),
    calls=st.integers(min_value=1, max_value=8),
    limit=st.integers(min_value=0, max_value=200),
)
def test_calls_estimated_exactly_never_spend_past_the_budget_after_the_first(
    cents: int, calls: int, limit: int
) -> None:
    """Equal calls one after another: the spend ends within the budget, or at the first call."""
    agents = [ScriptedAgent([costing(cents / 100)]) for _ in range(calls)]
    steps = tuple(ask(f"s{i}", agent) for i, agent in enumerate(agents))
    run_workflow(Workflow("w", steps, budget=Budget(max_cost_usd=limit / 100)))
    made = sum(len(agent.requests) for agent in agents)
    assert made * cents <= max(limit, cents)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: Budget(max_cost_usd=-1.0),
            "Budget: max_cost_usd must be a finite number >= 0.0 or None, got -1.0",
        ),
        (lambda: Budget(max_tokens=1.5), "Budget: max_tokens must be an int >= 0, got 1.5"),  # type: ignore[arg-type] # the mistake under test
        (lambda: Usage(input_tokens=-3), "Usage: input_tokens must be an int >= 0, got -3"),
        (
            lambda: Usage(input_tokens=2**62),
            f"Usage: input_tokens must be at most 1,000,000,000,000, got {2**62}",
        ),
        (lambda: Usage(cost_usd=1e308), "Usage: cost_usd must be at most 1000000000, got 1e+308"),
        (
            lambda: Budget(max_cost_usd=2e9),
            "Budget: max_cost_usd must be at most 1000000000, got 2000000000.0",
        ),
        (
            lambda: Budget(max_tokens=10**13),
            "Budget: max_tokens must be at most 1,000,000,000,000, got 10000000000000",
        ),
        (
            lambda: Usage(cost_usd=math.nan),
            "Usage: cost_usd must be a finite number >= 0.0 or None, got nan",
        ),
        (lambda: Usage(model=3), "Usage: model must be a str or None, got 3"),  # type: ignore[arg-type] # the mistake under test
        (
            lambda: Budget(1.0, on_exceeded="maybe"),  # type: ignore[arg-type] # the mistake under test
            "Budget: on_exceeded must be 'fail' or 'ask', got 'maybe'",
        ),
        (
            lambda: Workflow("w", (), budget=5),  # type: ignore[arg-type] # the mistake under test
            "workflow 'w': budget must be a Budget or None, got 5",
        ),
        (
            lambda: agent_step("a", prompt="p", agent=ScriptedAgent([]), budget=1.0),  # type: ignore[arg-type] # the mistake under test
            "agent_step 'a': budget must be a Budget or None, got 1.0",
        ),
    ],
)
def test_impossible_usage_and_budgets_are_refused_at_definition(
    build: Callable[[], object], message: str
) -> None:
    with pytest.raises((TypeError, ValueError)) as caught:
        build()
    assert str(caught.value) == message


def test_usage_sums_keep_unknown_apart_from_zero() -> None:
    assert Usage() + Usage() == Usage()
    assert Usage(model="a") + Usage(model="b") == Usage(model="a, b")
    assert Usage(turns=2).describe() == "unknown"
    assert Usage.from_dict("nope") is None
    assert Budget().exceeded(Usage(99.0, 10**9)) is None
    assert Budget(1.0).tighter(None) == Budget(1.0)
    assert Budget(1.0, 50).tighter(Budget(2.0, 10)) == Budget(1.0, 10)


def test_a_sum_past_the_bounds_saturates_and_is_over_any_budget() -> None:
    most = Usage(MAX_COST_USD, MAX_COUNT, MAX_COUNT, MAX_COUNT)
    total = most + most
    assert total == most
    assert total.describe() == "over $1,000,000,000, over 1,000,000,000,000 tokens"
    assert Budget(MAX_COST_USD).exceeded(total) is not None
    assert Budget(max_tokens=MAX_COUNT).exceeded(total) is not None


@pytest.mark.parametrize(
    "columns",
    [
        (float("inf"), None, None, None, None),
        (float("nan"), None, None, None, None),
        (-5.0, None, None, None, None),
        ("free", None, None, None, None),
        (None, 2**70, None, None, None),
        (None, -1, None, None, None),
        (None, True, None, None, None),
    ],
)
def test_a_corrupt_or_overflowed_journal_sum_reads_as_over_any_budget(
    columns: tuple[object, ...],
) -> None:
    spent = Usage.from_sums(*columns)
    assert Budget(0.5, 1_000).exceeded(spent) is not None
    assert Budget(MAX_COST_USD, MAX_COUNT).exceeded(spent) is not None
