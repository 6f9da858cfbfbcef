"""agent_step: rendering, contract instructions, feedback, retries and outputs."""

from __future__ import annotations

import math

import pytest
from returns.io import IOFailure, IOSuccess
from returns.unsafe import unsafe_perform_io

from adws import (
    RetryPolicy,
    Workflow,
    WorkflowContext,
    run_workflow,
    with_verification,
)
from adws.agents import AgentRequest, CommandAgent, ScriptedAgent
from adws.agents.step import AgentSpec, agent_step, compose_prompt
from adws.agents.swap import use_agent
from adws.contract.validator import OutputContract
from adws.shell.step import shell_step
from tests.strategies import Claim, Packet

RESEARCH_OK = 'Found two sources.\nSTATUS: done\nRESEARCH_PACKET_JSON: {"claims": ["a", "b"]}'
VERIFY_BAD = 'STATUS: done\nVERIFIED_PACKET_JSON: {"verdict": "pass", "claims": [{"text": "a"}]}'
VERIFY_OK = (
    'STATUS: done\nVERIFIED_PACKET_JSON: {"verdict": "pass", "claims": '
    '[{"text": "a", "source": "https://a.test"}]}'
)
WRITE_OK = "STATUS: done\nFINAL_REPORT: # Report\nClaim a holds."


def research_flow(agent: ScriptedAgent, *, verify_attempts: int = 3) -> Workflow:
    return Workflow(
        "research",
        (
            agent_step(
                "research",
                prompt="Research {topic}.",
                agent=agent,
                contract=OutputContract(("RESEARCH_PACKET_JSON",)),
            ),
            agent_step(
                "verify",
                prompt="Verify this packet:\n{research_packet_json}",
                agent=agent,
                contract=OutputContract(schemas={"VERIFIED_PACKET_JSON": Packet}),
                retry=RetryPolicy(max_attempts=verify_attempts),
            ),
            agent_step(
                "write",
                prompt="Write a report from {verified_packet_json}",
                agent=agent,
                contract=OutputContract(("FINAL_REPORT",)),
            ),
        ),
    )


def start() -> WorkflowContext:
    return WorkflowContext(inputs={"topic": "wetness"})


def test_a_malformed_verifier_packet_never_lets_the_writer_run() -> None:
    agent = ScriptedAgent([RESEARCH_OK, VERIFY_BAD])
    result = run_workflow(research_flow(agent, verify_attempts=1), start())
    assert isinstance(result, IOFailure)
    error = unsafe_perform_io(result.failure())
    assert (error.step_name, error.error_type) == ("verify", "ContractViolation")
    assert error.context["problems"] == (
        "VERIFIED_PACKET_JSON does not match Packet: $.claims[0].source: required field missing",
    )
    assert [r.step_name for r in agent.requests] == ["research", "verify"]


def test_a_corrected_second_answer_lets_the_writer_run_and_saw_the_problems() -> None:
    agent = ScriptedAgent([RESEARCH_OK, VERIFY_BAD, VERIFY_OK, WRITE_OK])
    result = run_workflow(research_flow(agent), start())
    assert isinstance(result, IOSuccess)
    final = unsafe_perform_io(result.unwrap())
    assert [r.step_name for r in agent.requests] == ["research", "verify", "verify", "write"]
    assert [r.attempt for r in agent.requests] == [1, 1, 2, 1]
    second = agent.prompts[2]
    assert (
        "- attempt 1/3 failed: ContractViolation: VERIFIED_PACKET_JSON does not match Packet: "
        "$.claims[0].source: required field missing"
    ) in second
    assert "## Feedback from earlier attempts" not in agent.prompts[1]
    assert final.inputs["verified_packet_json"] == Packet("pass", (Claim("a", "https://a.test"),))
    assert final.inputs["research_packet_json"] == {"claims": ("a", "b")}
    assert final.inputs["final_report"] == "# Report\nClaim a holds."
    assert '"source": "https://a.test"' in agent.prompts[3]


def test_blocked_ends_the_run_as_blocked_without_a_retry() -> None:
    agent = ScriptedAgent([RESEARCH_OK, "STATUS: blocked\nREASON: the sources are paywalled"])
    result = run_workflow(research_flow(agent), start())
    error = unsafe_perform_io(result.failure())
    assert (error.step_name, error.error_type, error.message) == (
        "verify",
        "Blocked",
        "the sources are paywalled",
    )
    assert error.context["attempts"] == 1
    assert len(agent.requests) == 2


def test_retry_status_is_retried_with_its_reason_as_feedback() -> None:
    agent = ScriptedAgent(["STATUS: retry\nREASON: rate limited", WRITE_OK])
    step = agent_step("write", prompt="go", agent=agent, contract=OutputContract(("FINAL_REPORT",)))
    assert isinstance(run_workflow(Workflow("w", (step,))), IOSuccess)
    assert "- attempt 1/3 failed: AgentRetryRequested: rate limited" in agent.prompts[1]


def test_a_missing_placeholder_fails_before_the_agent_is_called() -> None:
    agent = ScriptedAgent([WRITE_OK])
    step = agent_step("write", prompt="About {topic} and {depth}", agent=agent)
    error = unsafe_perform_io(run_workflow(Workflow("w", (step,)), start()).failure())
    assert (error.error_type, error.message) == (
        "MissingInput",
        "the prompt of step 'write' needs input 'depth'; inputs available: topic",
    )
    assert agent.requests == ()


def test_the_prompt_carries_the_contract_instructions() -> None:
    agent = ScriptedAgent([WRITE_OK])
    step = agent_step(
        "write",
        prompt="Write about {topic}.",
        agent=agent,
        contract=OutputContract(("FINAL_REPORT",)),
        timeout=9,
        cwd="/tmp/{topic}",
    )
    run_workflow(Workflow("w", (step,)), start())
    request = agent.requests[0]
    assert request == AgentRequest(
        request.prompt, "write", attempt=1, timeout=9, cwd="/tmp/wetness"
    )
    assert request.prompt == compose_prompt(
        "Write about wetness.", OutputContract(("FINAL_REPORT",)), ()
    )
    assert request.prompt.startswith("Write about wetness.\n\n## Output contract\n")
    assert "FINAL_REPORT: <text>" in request.prompt


def test_a_missing_cwd_placeholder_is_named() -> None:
    step = agent_step("write", prompt="x", agent=ScriptedAgent([]), cwd="{repo}")
    error = unsafe_perform_io(run_workflow(Workflow("w", (step,))).failure())
    assert error.message == "the cwd of step 'write' needs input 'repo'; inputs available: none"


def test_an_agent_failure_passes_through() -> None:
    step = agent_step("write", prompt="x", agent=ScriptedAgent([]), retry=RetryPolicy())
    error = unsafe_perform_io(run_workflow(Workflow("w", (step,))).failure())
    assert (error.error_type, error.step_name) == ("AgentFailed", "write")


def test_use_agent_replaces_every_agent_step_including_nested_ones() -> None:
    old, new = ScriptedAgent([]), ScriptedAgent(["STATUS: done", "STATUS: done"])
    main = agent_step("implement", prompt="do it", agent=old, retry=RetryPolicy(max_attempts=2))
    check = shell_step("check", ["true"])
    flow = Workflow(
        "w",
        (
            with_verification(main, check, max_attempts=2),
            agent_step("final", prompt="end", agent=old, always_run=True),
        ),
    )
    swapped = use_agent(flow, new)
    assert isinstance(run_workflow(swapped), IOSuccess)
    assert [r.step_name for r in new.requests] == ["implement", "final"]
    inner = swapped.steps[0].children[0]
    assert isinstance(inner.spec, AgentSpec)
    assert (inner.spec.agent, inner.retry.max_attempts) == (new, 2)
    assert swapped.steps[1].always_run
    assert swapped.steps[0].children[1] is check


def test_outputs_are_the_declared_keys_in_lower_case() -> None:
    agent = ScriptedAgent(["STATUS: done\nSUMMARY: s\nDATA_JSON: [1]\nREASON: ignored"])
    step = agent_step(
        "a", prompt="x", agent=agent, contract=OutputContract(("SUMMARY", "DATA_JSON"))
    )
    final = unsafe_perform_io(run_workflow(Workflow("w", (step,))).unwrap())
    assert dict(final.inputs) == {"summary": "s", "data_json": (1,)}


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"agent": "claude -p"},
            TypeError,
            "agent_step 'a': agent must be an AgentBackend such as CommandAgent('claude -p'), got 'claude -p'",
        ),
        ({"agent": 3}, TypeError, "agent_step 'a': agent must be callable, got 3"),
        ({"prompt": None}, TypeError, "agent_step 'a': prompt must be a str, got None"),
        (
            {"contract": ("X",)},
            TypeError,
            "agent_step 'a': contract must be an OutputContract, got ('X',)",
        ),
        (
            {"timeout": math.inf},
            ValueError,
            "agent_step 'a': timeout must be a finite number >= 0.0 or None, got inf",
        ),
        ({"cwd": 1}, TypeError, "agent_step 'a': cwd must be a str or None, got 1"),
        ({"retry": 3}, TypeError, "Step 'a': retry must be a RetryPolicy, got 3"),
    ],
)
def test_impossible_agent_steps_are_refused_at_definition(
    kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    arguments: dict[str, object] = {"prompt": "p", "agent": ScriptedAgent([]), **kwargs}
    with pytest.raises(error) as raised:
        agent_step("a", **arguments)  # type: ignore[arg-type] # each case is one bad argument
    assert str(raised.value) == message


def test_a_command_agent_with_an_impossible_timeout_is_refused() -> None:
    with pytest.raises(TypeError, match="CommandAgent: timeout must be a finite number"):
        CommandAgent("claude -p", timeout="5")  # type: ignore[arg-type] # wrong on purpose
