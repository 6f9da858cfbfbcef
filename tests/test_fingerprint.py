"""The fingerprint changes when, and only when, the definition changes."""

from __future__ import annotations

import functools

from returns.io import IOResult, IOSuccess

from adws import PipelineError, RetryPolicy, Step, Workflow, WorkflowContext, with_verification
from adws.agent_steps import agent_step, use_agent
from adws.agents import ScriptedAgent
from adws.contract import OutputContract
from adws.fingerprint import describe_workflow, fingerprint
from adws.shell import shell_step
from tests.strategies import Packet


def one(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOSuccess(ctx)


def other(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOSuccess(ctx.merge_outputs({"x": 1}))


def flow(*steps: Step) -> Workflow:
    return Workflow("w", steps)


def test_the_same_definition_hashes_the_same() -> None:
    assert fingerprint(flow(Step("a", one))) == fingerprint(flow(Step("a", one)))
    assert len(fingerprint(flow(Step("a", one)))) == 16


def test_changes_to_steps_change_the_fingerprint() -> None:
    base = fingerprint(flow(Step("a", one)))
    variants = [
        flow(Step("b", one)),
        flow(Step("a", other)),
        flow(Step("a", one, always_run=True)),
        flow(Step("a", one, retry=RetryPolicy(2))),
        flow(Step("a", one, when=bool)),
        flow(Step("a", one), Step("b", one)),
    ]
    assert all(fingerprint(variant) != base for variant in variants)


def test_agent_contracts_shell_commands_and_rounds_count_but_the_backend_does_not() -> None:
    agent = agent_step(
        "a",
        prompt="p",
        agent=ScriptedAgent([]),
        contract=OutputContract(schemas={"P_JSON": Packet}),
    )
    base = flow(agent)
    assert fingerprint(use_agent(base, ScriptedAgent(["x"]))) == fingerprint(base)
    assert fingerprint(flow(agent_step("a", prompt="q", agent=ScriptedAgent([])))) != fingerprint(
        base
    )
    shell = flow(shell_step("s", "make check"))
    assert fingerprint(shell) != fingerprint(flow(shell_step("s", "make test")))
    checked = flow(with_verification(Step("m", one), Step("v", one), max_attempts=2))
    assert fingerprint(checked) != fingerprint(
        flow(with_verification(Step("m", one), Step("v", one), max_attempts=3))
    )
    steps = describe_workflow(base)["steps"]
    assert isinstance(steps, list)
    fields = steps[0]["agent"]["schemas"]["P_JSON"]["fields"]
    assert [name for name, _ in fields] == ["verdict", "claims"]


def test_callables_without_source_are_named() -> None:
    partial = functools.partial(one)
    described = describe_workflow(flow(Step("a", partial)))["steps"]
    assert isinstance(described, list)
    assert described[0]["run"] == "partial"
