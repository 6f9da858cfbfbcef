"""Sessions that continue, through `ScriptedAgent(sessions=True)`: the logic, no process."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.io import IOFailure, IOSuccess

from adws import (
    OutputContract,
    RetryPolicy,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
    run_workflow,
    with_verification,
)
from adws.agents import AgentRequest, AgentResponse, ClaudeAgent, CommandAgent, ScriptedAgent
from adws.agents.sessions import (
    CODEX,
    CallSessions,
    feedback_prompt,
    hear_lines,
    interrupted_prompt,
    lost_session,
    plain_session,
    plan_continuation,
    session_listener,
)
from adws.engine.errors import PipelineError
from adws.engine.events import AgentExchanged, AgentSessionStarted
from adws.engine.scope import AgentSession
from adws.testing import FakeModelAPI
from tests.conftest import Events, FakeSleep, failure, success

DONE = "STATUS: done\nSUMMARY: fixed"
CONTRACT = OutputContract(("SUMMARY",))
REJECTED = "attempt 1/3 failed: ContractViolation: SUMMARY missing"


def ask(agent: ScriptedAgent, **step: object) -> Step:
    return agent_step(
        "ask",
        prompt="Sum up the notes.",
        agent=agent,
        contract=CONTRACT,
        **step,  # type: ignore[arg-type] # sessions, retry
    )


def sessions_of(events: Events) -> list[AgentSessionStarted]:
    return [event for event in events.events if isinstance(event, AgentSessionStarted)]


def test_a_retry_after_a_rejected_answer_continues_the_session_with_only_the_feedback() -> None:
    agent = ScriptedAgent(["STATUS: done", DONE], sessions=True)
    events = Events()
    ctx = success(run_workflow(Workflow("w", (ask(agent),)), observers=[events], run_id="r1"))
    first, second = agent.requests
    assert (first.session, second.session) == (None, "scripted-1")
    assert second.prompt == (
        "Your answer was rejected. Fix every point below, then answer again in the format"
        f" asked for:\n- {REJECTED}\n"
    )
    assert "Sum up the notes." in first.prompt
    assert dict(ctx.inputs["ask_agent"]) == {"session_id": "scripted-1", "continued": True}
    assert sessions_of(events) == [
        AgentSessionStarted("r1", "ask", 1, "ask", "scripted-1"),
        AgentSessionStarted("r1", "ask", 2, "ask", "scripted-1", True, "scripted-1", 1, ""),
    ]


def test_sessions_fresh_sends_every_attempt_the_whole_prompt_in_a_new_session() -> None:
    agent = ScriptedAgent(["STATUS: done", DONE], sessions=True)
    success(run_workflow(Workflow("w", (ask(agent, sessions="fresh"),))))
    first, second = agent.requests
    assert (first.session, second.session) == (None, None)
    assert second.prompt.startswith("Sum up the notes.")
    assert REJECTED in second.prompt


def test_a_backend_that_cannot_continue_gets_the_whole_prompt_with_the_feedback() -> None:
    agent = ScriptedAgent(["STATUS: done", DONE])
    ctx = success(run_workflow(Workflow("w", (ask(agent),))))
    second = agent.requests[1]
    assert second.session is None
    assert second.prompt.startswith("Sum up the notes.")
    assert REJECTED in second.prompt
    assert "ask_agent" not in ctx.inputs


def test_a_lost_session_is_asked_again_afresh_in_the_same_attempt_and_says_why() -> None:
    agent = ScriptedAgent(["STATUS: done", DONE], sessions=True)
    agent.forget("scripted-1")
    events = Events()
    ctx = success(run_workflow(Workflow("w", (ask(agent),)), observers=[events], run_id="r2"))
    first, lost, fresh = agent.requests
    assert (lost.session, fresh.session) == ("scripted-1", None)
    assert lost.attempt == fresh.attempt == 2
    assert fresh.prompt.startswith("Sum up the notes.")
    assert REJECTED in fresh.prompt
    why = "ScriptedAgent exited with 1: No conversation found with session ID: scripted-1"
    assert dict(ctx.inputs["ask_agent"]) == {
        "session_id": "scripted-2",
        "continued": False,
        "not_continued": why,
    }
    assert sessions_of(events)[-1] == AgentSessionStarted(
        "r2", "ask", 2, "ask", "scripted-2", False, "scripted-1", 1, why
    )
    assert first.session is None


def test_a_retry_after_a_timeout_has_nothing_new_to_say_and_starts_afresh() -> None:
    def slow(request: AgentRequest) -> AgentResponse:
        return AgentResponse("", {"session_id": "scripted-1"})

    timeout = PipelineError("ask", "Timeout", "ran past its 5s timeout")
    calls: list[AgentRequest] = []

    def agent(request: AgentRequest) -> object:
        calls.append(request)
        if len(calls) == 1:
            assert request.on_session is not None
            request.on_session("s-1")
            from returns.io import IOFailure  # noqa: PLC0415 - a failure, as a backend returns it

            return IOFailure(timeout.with_context(session_id="s-1"))
        return IOSuccess(AgentResponse(DONE, {"session_id": "s-2"}))

    agent.continues_sessions = True  # type: ignore[attr-defined] # a backend that can continue
    step = agent_step("ask", prompt="Sum up.", agent=agent, contract=CONTRACT)  # type: ignore[arg-type]
    success(run_workflow(Workflow("w", (step,)), sleep=FakeSleep()))
    assert [request.session for request in calls] == [None, None]
    assert calls[1].prompt.startswith("Sum up.")
    assert slow(calls[0]).metadata["session_id"] == "scripted-1"


def test_each_verification_round_continues_mains_session_with_the_verify_error() -> None:
    main_agent = ScriptedAgent(
        ["STATUS: done\nSUMMARY: v1", "STATUS: done\nSUMMARY: v2"], sessions=True
    )
    main = agent_step("main", prompt="Write it.", agent=main_agent, contract=CONTRACT)

    def verify_run(ctx: WorkflowContext) -> object:
        if ctx.inputs["summary"] == "v1":
            from returns.io import IOFailure  # noqa: PLC0415 - a failure, as a step returns it

            return IOFailure(PipelineError("verify", "ContractViolation", "tests fail"))
        return IOSuccess(ctx)

    verify = Step("verify", verify_run, retry=RetryPolicy(max_attempts=1))  # type: ignore[arg-type]
    success(run_workflow(Workflow("w", (with_verification(main, verify),))))
    first, second = main_agent.requests
    assert second.session == "scripted-1"
    assert second.prompt == feedback_prompt(
        ["verification round 1/3 failed: ContractViolation: tests fail"]
    )
    assert first.session is None


def test_sessions_must_be_continue_or_fresh_at_definition() -> None:
    with pytest.raises(ValueError, match="agent_step 'ask': sessions must be \"continue\""):
        ask(ScriptedAgent([]), sessions="again")


def test_only_a_command_with_a_session_switch_continues_sessions() -> None:
    plain = CommandAgent("my-agent")
    assert not plain.continues_sessions
    request = AgentRequest("p", "s", session="s-1")
    assert plain.argv_for(request) == ("my-agent",)
    codex = CommandAgent(
        "codex exec --json -", sessions=CODEX, no_edits_argv=("--sandbox=read-only",)
    )
    assert codex.argv_for(request) == (
        "codex", "exec", "resume", "s-1", "--json", "-", "-c", 'sandbox_mode="read-only"',
    )  # fmt: skip
    assert CODEX.resume(("codex", "-s", "workspace-write"), "t") == (
        "codex", "-s", "workspace-write", "resume", "t",
    )  # fmt: skip


def test_the_session_a_cli_names_is_heard_once_and_listeners_join() -> None:
    heard: list[str] = []
    request = AgentRequest("p", "s", on_session=heard.append)
    listen = session_listener(request, CODEX.announced)
    assert listen is not None
    seen: list[str] = []
    keep = seen.append
    both = hear_lines(listen, keep)
    assert both is not None
    for line in (
        '{"type":"thread.started","thread_id":"t-1"}',
        '{"type":"thread.started","thread_id":"t-2"}',
    ):
        both(line)
    assert heard == ["t-1"]
    assert len(seen) == 2
    assert session_listener(AgentRequest("p", "s"), CODEX.announced) is None
    assert hear_lines(None, None) is None
    assert hear_lines(None, keep) is keep


def test_a_lost_session_is_told_apart_from_other_failures() -> None:
    assert lost_session(PipelineError("s", "AgentFailed", "exited with 1: boom")) is None
    codex = PipelineError(
        "s",
        "AgentFailed",
        "exited with 1",
        {
            "stderr_tail": "Error: thread/resume: thread/resume failed: no rollout found for thread id t-1 (code -32600)\n"
        },
    )
    assert lost_session(codex) == (
        "Error: thread/resume: thread/resume failed: no rollout found for thread id t-1 (code -32600)"
    )


def test_a_continuation_needs_the_history_the_session_was_told() -> None:
    note = AgentSession("s-1", 1, ("a",))
    assert plan_continuation(note, ("b", "c"), "ask") is None
    resumed = plan_continuation(AgentSession("s-1", 2, (), interrupted=True), ("x",), "ask")
    assert resumed is not None
    assert (resumed.session, resumed.from_attempt) == ("s-1", 2)
    assert resumed.prompt == interrupted_prompt("ask") + "\n" + feedback_prompt(["x"])


def test_outside_a_run_no_session_is_kept_for_a_next_call() -> None:
    calls = CallSessions(("ask", "ask"), 1)
    calls.start(None, ())
    calls.finish(IOSuccess(AgentResponse("x", {"session_id": "s-1"})))
    assert calls.before() is None
    assert isinstance(FakeModelAPI, type)
    assert (
        failure(
            run_workflow(Workflow("w", (ask(ScriptedAgent([]), retry=RetryPolicy()),)))
        ).error_type
        == "AgentFailed"
    )


def test_only_a_clis_init_event_names_its_session() -> None:
    from adws.agents.sessions import CLAUDE  # noqa: PLC0415 - the switch under test

    assert CLAUDE.announced('{"type": "system", "subtype": "init", "session_id": "s-1"}') == "s-1"
    assert CLAUDE.announced('not JSON but "init"') is None
    assert CLAUDE.announced('{"type": "assistant", "text": "init"}') is None
    assert CLAUDE.announced('{"type": "system", "subtype": "hook", "text": "init"}') is None
    assert CLAUDE.announced('{"type": "system", "subtype": "init", "session_id": 7}') is None


def test_a_session_named_twice_in_one_call_is_journaled_once() -> None:
    def twice(request: AgentRequest) -> object:
        assert request.on_session is not None
        request.on_session("s-1")
        request.on_session("s-2")
        return IOSuccess(AgentResponse(DONE, {"session_id": "s-3"}))

    events = Events()
    step = agent_step("ask", prompt="Sum up.", agent=twice, contract=CONTRACT)  # type: ignore[arg-type]
    ctx = success(run_workflow(Workflow("w", (step,)), observers=[events], run_id="r3"))
    assert sessions_of(events) == [AgentSessionStarted("r3", "ask", 1, "ask", "s-1")]
    assert ctx.inputs["ask_agent"]["session_id"] == "s-3"


HOSTILE = "--dangerously-bypass-approvals-and-sandbox"
REFUSED = f"session id {HOSTILE!r} is not a plain token ([A-Za-z0-9][A-Za-z0-9._:-]{{0,127}})"


LETTERS_AND_DIGITS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


@given(st.text(max_size=200))
def test_a_plain_session_id_can_never_be_read_as_an_option_or_split(value: str) -> None:
    if plain_session(value):
        assert value[0] in LETTERS_AND_DIGITS
        assert len(value) <= 128
        assert set(value) <= set(LETTERS_AND_DIGITS + "._:-")


@pytest.mark.agent_process
@pytest.mark.parametrize("session", [HOSTILE, "-c", "s 1", "s\n1", "", "x" * 200, "é"])
def test_a_command_asked_to_continue_a_session_that_is_no_plain_token_runs_nothing(
    session: str, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    agent = CommandAgent(["touch", str(ran)], sessions=CODEX)
    error = failure(agent(AgentRequest("p", "ask", session=session)))
    assert (error.error_type, error.context["permanent"]) == ("AgentFailed", True)
    assert error.message.startswith(f"{agent!r} was not started for step 'ask': session id ")
    assert not ran.exists()
    success(CommandAgent(["touch", str(ran)])(AgentRequest("p", "ask", session=session)))
    assert ran.exists()  # a command that continues no session never puts it on its line


@pytest.mark.agent_process
def test_a_claude_agent_asked_to_continue_a_hostile_session_starts_nothing() -> None:
    agent = ClaudeAgent(sdk_module="no_such_sdk_here")
    error = failure(agent(AgentRequest("p", "ask", session=HOSTILE)))
    assert error.message == f"{agent!r} was not started for step 'ask': {REFUSED}"


def test_a_session_a_backend_names_that_is_no_plain_token_is_neither_journaled_nor_kept() -> None:
    asked: list[AgentRequest] = []

    def agent(request: AgentRequest) -> object:
        asked.append(request)
        if len(asked) == 2:
            return IOSuccess(AgentResponse(DONE, {"session_id": "s-4"}))
        assert request.on_session is not None
        request.on_session(HOSTILE)
        request.on_session("s-2")  # a plain one after it changes nothing: the call is not trusted
        return IOSuccess(AgentResponse("STATUS: done", {"session_id": "s-3"}))

    agent.continues_sessions = True  # type: ignore[attr-defined] # a backend that continues
    events = Events()
    step = agent_step("ask", prompt="Sum up.", agent=agent, contract=CONTRACT)  # type: ignore[arg-type]
    ctx = success(run_workflow(Workflow("w", (step,)), observers=[events], run_id="r4"))
    assert [request.session for request in asked] == [None, None]  # the retry starts afresh
    assert sessions_of(events) == [AgentSessionStarted("r4", "ask", 2, "ask", "s-4")]
    first = next(e for e in events.events if isinstance(e, AgentExchanged))
    assert first.session_id is None
    assert ctx.inputs["ask_agent"]["session_id"] == "s-4"


@pytest.mark.parametrize("named", [HOSTILE, ["s-1"]])
def test_an_answer_or_failure_naming_a_hostile_session_loses_it_and_says_why(
    named: object,
) -> None:
    calls = CallSessions(("ask", "ask"), 1)
    calls.start(None, ())
    answer = calls.finish(IOSuccess(AgentResponse("x", {"session_id": named})))
    said = success(answer).metadata
    assert said["session_id"] is None
    assert said["session_refused"].startswith("session id ")
    calls.start(None, ())
    failed = calls.finish(
        IOFailure(PipelineError("ask", "AgentFailed", "no", {"session_id": named}))
    )
    assert failure(failed).context["session_id"] is None
    assert calls.before() is None
    calls.start(None, ())
    assert success(calls.finish(IOSuccess(AgentResponse("x", {"session_id": ""})))).metadata == {
        "session_id": ""
    }
