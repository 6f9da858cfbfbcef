"""Agent steps facing agents as they really fail: waits a service names, feedback, edits, limits."""

from __future__ import annotations

import sys
import time

import pytest
from returns.io import IOFailure, IOResult, IOSuccess

from adws import (
    OutputContract,
    PipelineError,
    RetryPolicy,
    Workflow,
    agent_step,
    io_ops,
    run_workflow,
    use_agent,
)
from adws.agents import AgentRequest, AgentResponse, CommandAgent, ScriptedAgent
from adws.agents.step import AgentSpec
from adws.agents.swap import limits_of
from adws.engine.errors import INFRASTRUCTURE, ErrorType
from adws.engine.events import RunFinished
from adws.engine.step import default_retry_on
from adws.testing import FunctionAgent
from tests.conftest import Events, FakeSleep, failure, success


class Flaky:
    """Fail with `errors` in turn, then answer; record each request."""

    def __init__(self, *errors: PipelineError) -> None:
        self.errors = list(errors)
        self.requests: list[AgentRequest] = []

    def __call__(self, request: AgentRequest) -> IOResult[AgentResponse, PipelineError]:
        self.requests.append(request)
        if self.errors:
            return IOFailure(self.errors.pop(0))
        return IOSuccess(AgentResponse("STATUS: done"))


def unavailable(**context: object) -> PipelineError:
    return PipelineError("ask", ErrorType.AGENT_UNAVAILABLE, "API error 429", context)


def run_ask(agent: object, sleep: FakeSleep, **step: object) -> IOResult[object, PipelineError]:
    ask = agent_step("ask", prompt="go", agent=agent, **step)  # type: ignore[arg-type] # test knobs
    return run_workflow(Workflow("w", (ask,)), sleep=sleep)


def test_infrastructure_failures_are_retried_without_feedback_but_counted(
    fake_sleep: FakeSleep,
) -> None:
    agent = Flaky(
        PipelineError("ask", ErrorType.TIMEOUT, "slow"),
        PipelineError("ask", ErrorType.AGENT_HUNG, "silent"),
    )
    success(run_ask(agent, fake_sleep))
    assert [r.attempt for r in agent.requests] == [1, 2, 3]
    assert all("Feedback from earlier attempts" not in r.prompt for r in agent.requests)
    assert {"AgentUnavailable", "AgentHung", "Timeout", "AgentFailed"} == INFRASTRUCTURE


def test_a_bad_answer_after_a_timeout_is_fed_back_as_attempt_two(fake_sleep: FakeSleep) -> None:
    answers = iter(["no status", "STATUS: done"])

    def answer(request: AgentRequest) -> str:
        if request.attempt == 1:
            time.sleep(0)
        return next(answers)

    agent = Flaky(PipelineError("ask", ErrorType.TIMEOUT, "slow"))
    function = FunctionAgent(answer)

    def both(request: AgentRequest) -> IOResult[AgentResponse, PipelineError]:
        return agent(request) if not agent.requests else function(request)

    success(run_ask(both, fake_sleep))
    attempts = [r.attempt for r in function.requests]
    assert attempts == [2, 3]
    assert "attempt 2/3 failed: ContractViolation" in function.requests[1].prompt


def test_an_api_error_without_a_wait_is_not_retried(fake_sleep: FakeSleep) -> None:
    error = failure(run_ask(Flaky(unavailable()), fake_sleep))
    assert (error.error_type, error.context["attempts"]) == ("AgentUnavailable", 1)


def test_a_named_wait_is_slept_through_the_runs_sleep(fake_sleep: FakeSleep) -> None:
    agent = Flaky(unavailable(retry_after=42))
    success(run_ask(agent, fake_sleep, retry=RetryPolicy(max_attempts=2, delay=1)))
    assert fake_sleep.calls == [42.0]


def test_a_reset_time_becomes_the_wait(
    fake_sleep: FakeSleep, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(io_ops, "wall_clock", lambda: 1000.0)
    success(run_ask(Flaky(unavailable(resets_at=1030)), fake_sleep, timeout=60))
    assert fake_sleep.calls == [30.0]


def test_a_reset_already_past_is_retried_at_once(
    fake_sleep: FakeSleep, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(io_ops, "wall_clock", lambda: 1000.0)
    agent = Flaky(unavailable(resets_at=900))
    success(run_ask(agent, fake_sleep))
    assert (len(agent.requests), fake_sleep.calls) == (2, [])


def test_a_wait_past_the_steps_timeout_is_still_waited_for(fake_sleep: FakeSleep) -> None:
    """A timeout bounds a call, not the wait between calls."""
    agent = Flaky(unavailable(retry_after=600))
    success(run_ask(agent, fake_sleep, timeout=60))
    assert (fake_sleep.calls, len(agent.requests)) == ([600.0], 2)


def test_a_wait_past_the_runs_max_wait_parks_the_run_with_no_retry(
    fake_sleep: FakeSleep, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(io_ops, "wall_clock", lambda: 1000.0)
    agent = Flaky(unavailable(retry_after=3600, limit="claude usage limit"))
    events = Events()
    ask = agent_step("ask", prompt="go", agent=agent)
    result = run_workflow(Workflow("w", (ask,)), sleep=fake_sleep, observers=[events])
    error = failure(result)
    assert (error.error_type, error.message) == ("Parked", "API error 429")
    assert (error.context["wake_at"], error.context["reason"]) == (4600.0, "claude usage limit")
    assert (error.context["was"], error.context["attempts"]) == ("AgentUnavailable", 1)
    assert (len(agent.requests), fake_sleep.calls) == (1, [])
    finished = events.events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.status == "parked"


def test_max_wait_is_the_runs_and_a_reset_within_it_is_waited_for(
    fake_sleep: FakeSleep, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(io_ops, "wall_clock", lambda: 1000.0)
    ask = agent_step("ask", prompt="go", agent=Flaky(unavailable(resets_at=4600)))
    success(run_workflow(Workflow("w", (ask,)), sleep=fake_sleep, max_wait=3600))
    assert fake_sleep.calls == [3600.0]
    short = agent_step("ask", prompt="go", agent=Flaky(unavailable(resets_at=1061)))
    parked = failure(run_workflow(Workflow("w", (short,)), sleep=FakeSleep(), max_wait=60))
    assert (parked.error_type, parked.context["wake_at"]) == ("Parked", 1061.0)


def test_a_limit_without_a_name_parks_for_the_first_line_of_its_message(
    fake_sleep: FakeSleep,
) -> None:
    error = PipelineError("ask", ErrorType.AGENT_UNAVAILABLE, "quota\nmore", {"retry_after": 999})
    parked = failure(run_ask(Flaky(error), fake_sleep))
    assert parked.context["reason"] == "quota"
    bare = PipelineError("ask", ErrorType.AGENT_UNAVAILABLE, " ", {"retry_after": 999})
    assert failure(run_ask(Flaky(bare), FakeSleep())).context["reason"] == "AgentUnavailable"


def test_max_wait_must_be_a_number_of_seconds() -> None:
    with pytest.raises(ValueError, match=r"max_wait must be a finite number >= 0\.0, got -1"):
        run_workflow(Workflow("w", ()), max_wait=-1)


def test_a_reset_named_by_the_clock_counts_from_local_time(
    fake_sleep: FakeSleep, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = time.mktime((2026, 1, 5, 9, 0, 30, 0, 0, -1))
    monkeypatch.setattr(io_ops, "wall_clock", lambda: now)
    success(run_ask(Flaky(unavailable(resets_at_clock="09:02")), fake_sleep))
    assert fake_sleep.calls == [150.0]  # codex cuts the seconds off: the minute's end is safe
    this_minute = FakeSleep()
    success(run_ask(Flaky(unavailable(resets_at_clock="09:00")), this_minute))
    assert this_minute.calls == [30.0]  # named to the minute: by its end
    tomorrow = failure(run_ask(Flaky(unavailable(resets_at_clock="08:00")), FakeSleep()))
    assert tomorrow.context["wake_at"] == now + 86_400.0 - 3630.0 + 60.0  # parked till then


def test_a_forged_reset_is_no_wait(fake_sleep: FakeSleep) -> None:
    error = failure(run_ask(Flaky(unavailable(resets_at=1e15)), fake_sleep))
    assert (error.context["attempts"], fake_sleep.calls) == (1, [])


def test_permission_denied_and_permanent_errors_are_never_retried() -> None:
    assert not default_retry_on(PipelineError("s", ErrorType.PERMISSION_DENIED, "Write"))
    assert not default_retry_on(
        PipelineError("s", ErrorType.AGENT_FAILED, "gone", {"permanent": True})
    )
    assert default_retry_on(PipelineError("s", ErrorType.AGENT_FAILED, "gone", {"permanent": 1}))


def test_edits_and_idle_timeout_reach_the_request_and_survive_a_swap() -> None:
    agent = ScriptedAgent(["STATUS: done"])
    # It changes no file: allowed here (see tests/agents/test_no_change.py for when it is not).
    step = agent_step(
        "ask", prompt="go", agent=agent, edits=True, idle_timeout=30, allow_no_change=True
    )
    assert isinstance(step.spec, AgentSpec)
    assert (step.spec.edits, step.spec.idle_timeout) == (True, 30)
    swapped = ScriptedAgent(["STATUS: done"])
    success(run_workflow(use_agent(Workflow("w", (step,)), swapped)))
    [request] = swapped.requests
    assert (request.edits, request.idle_timeout) == (True, 30)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"edits": "yes"}, "agent_step 'ask': edits must be a bool, got 'yes'"),
        (
            {"idle_timeout": -1},
            "agent_step 'ask': idle_timeout must be a finite number >= 0.0 or None, got -1",
        ),
    ],
)
def test_impossible_edits_or_idle_timeouts_are_refused_at_definition(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises((TypeError, ValueError)) as caught:
        agent_step("ask", prompt="go", agent=ScriptedAgent([]), **options)  # type: ignore[arg-type] # the mistakes under test
    assert str(caught.value) == message


def test_limits_of_reads_what_a_backend_was_given() -> None:
    assert limits_of(ScriptedAgent([])) == {"timeout": None, "cwd": None, "env": None}
    agent = CommandAgent("x", timeout=5, cwd="/w", env={"A": "1"})
    assert limits_of(agent) == {"timeout": 5, "cwd": "/w", "env": {"A": "1"}}


@pytest.mark.agent_process  # a real command answers
def test_an_answer_with_a_failing_exit_is_agent_failed_and_keeps_its_usage() -> None:
    script = "import json; print(json.dumps({'type': 'result', 'is_error': False, 'result': 'STATUS: done', 'total_cost_usd': 0.5})); raise SystemExit(3)"
    from adws.agents.parsers import claude_json  # noqa: PLC0415 - only this test parses JSON

    agent = CommandAgent([sys.executable, "-c", script], parse=claude_json)
    error = failure(agent(AgentRequest("p", "s")))
    assert error.message.endswith("exited with 3: no stderr")
    assert error.context["usage"]["cost_usd"] == 0.5


@pytest.mark.agent_process  # a real command answers
def test_a_line_that_says_nothing_reports_no_activity() -> None:
    seen: list[str] = []
    agent = CommandAgent(
        ["printf", "a\\nb\\n"], activity=lambda line: line if line == "b" else None
    )
    success(agent(AgentRequest("p", "s", on_activity=seen.append)))
    assert seen == ["b"]


def test_a_contract_cap_bounds_the_output_factor() -> None:
    with pytest.raises(ValueError, match="output_factor"):
        CommandAgent("x", output_factor=0)
    assert OutputContract().max_output_bytes == 1 << 20
