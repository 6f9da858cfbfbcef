"""The fingerprint changes when, and only when, the definition changes."""

from __future__ import annotations

import functools
import types
from pathlib import Path

from returns.io import IOResult, IOSuccess

from adws import PipelineError, RetryPolicy, Step, Workflow, WorkflowContext, with_verification
from adws.agents import ScriptedAgent
from adws.agents.step import agent_step
from adws.agents.swap import use_agent
from adws.contract.validator import OutputContract
from adws.discovery import discover_workflows
from adws.journal.identity.fingerprint import (
    describe_workflow,
    fingerprint,
    helper_sources,
    step_fingerprints,
)
from adws.shell.step import shell_step
from tests.strategies import Packet


def one(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOSuccess(ctx)


def other(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOSuccess(ctx.merge_outputs({"x": 1}))


def flow(*steps: Step) -> Workflow:
    return Workflow("w", steps)


def test_the_same_definition_hashes_the_same() -> None:
    assert fingerprint(flow(Step("a", one))) == fingerprint(flow(Step("a", one)))
    assert len(fingerprint(flow(Step("a", one)))) == 20


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
    described = steps[0]["spec"]
    assert (described["spec"], described["prompt"], "agent" in described) == (
        "AgentSpec",
        "'p'",
        False,
    )


def test_a_partials_arguments_are_part_of_its_fingerprint() -> None:
    def first(value: int) -> Step:
        return Step("a", functools.partial(with_value, value))

    assert fingerprint(flow(first(1))) == fingerprint(flow(first(1)))
    assert fingerprint(flow(first(1))) != fingerprint(flow(first(2)))


def with_value(value: int, ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOSuccess(ctx.merge_outputs({"v": value}))


MODULE = """
from returns.io import IOSuccess
from adws import Step, Workflow


def helper(ctx):
    return ctx.merge_outputs({"h": 1})


def first(ctx):
    return IOSuccess(helper(ctx))


def second(ctx):
    if ctx.inputs.get("kind") in {"a", "b"}:
        return IOSuccess(ctx)
    return IOSuccess(ctx.merge_outputs({"s": 2}))


workflow = Workflow("edited", (Step("first", first), Step("second", second)))
"""


def fingerprints_of(folder: Path, source: str, name: str = "edited") -> dict[str, str]:
    (folder / "edited.py").write_text(source, encoding="utf-8")
    catalog = discover_workflows(folder)
    assert not catalog.errors, catalog.errors
    return step_fingerprints(catalog.workflows[name])


def test_editing_one_step_leaves_the_others_fingerprints_unchanged(tmp_path: Path) -> None:
    base = fingerprints_of(tmp_path, MODULE)
    assert base == fingerprints_of(tmp_path, MODULE)
    moved = fingerprints_of(tmp_path, "\n\n# a comment that shifts every line\n" + MODULE)
    assert moved == base
    edited = fingerprints_of(tmp_path, MODULE.replace('{"s": 2}', '{"s": 3}'))
    assert (edited["first"], edited["second"] != base["second"]) == (base["first"], True)


def test_a_same_module_helper_the_step_calls_is_part_of_its_fingerprint(tmp_path: Path) -> None:
    base = fingerprints_of(tmp_path, MODULE)
    edited = fingerprints_of(tmp_path, MODULE.replace('{"h": 1}', '{"h": 9}'))
    assert (edited["first"] != base["first"], edited["second"]) == (True, base["second"])


def test_a_helper_module_the_workflow_imports_changes_every_step(tmp_path: Path) -> None:
    (tmp_path / "_shared.py").write_text("LIMIT = 1\n", encoding="utf-8")
    source = "import _shared\n" + MODULE
    base = fingerprints_of(tmp_path, source)
    (tmp_path / "_shared.py").write_text("LIMIT = 2\n", encoding="utf-8")
    edited = fingerprints_of(tmp_path, source)
    assert all(edited[name] != base[name] for name in ("first", "second"))
    assert helper_sources(Workflow("bare", ())) == ""


def make(value: object) -> Step:
    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOSuccess(ctx.merge_outputs({"v": value}))

    return Step("a", run)


def test_closure_values_count_and_addresses_do_not() -> None:
    assert fingerprint(flow(make(1))) != fingerprint(flow(make(2)))
    assert fingerprint(flow(make({"a": [1, {2}]}))) == fingerprint(flow(make({"a": [1, {2}]})))
    assert fingerprint(flow(make(object()))) == fingerprint(flow(make(object())))
    assert fingerprint(flow(make(Packet("pass", ())))) != fingerprint(
        flow(make(Packet("fail", ())))
    )
    assert fingerprint(flow(make(Packet))) == fingerprint(flow(make(Packet)))
    assert fingerprint(flow(make((Packet, Packet)))) == fingerprint(flow(make((Packet, Packet))))


def unbound_closure() -> Step:
    """A step whose closure cell was never filled (its variable is bound later, or never)."""
    late = 1

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOSuccess(ctx.merge_outputs({"late": late}))

    empty = types.FunctionType(run.__code__, run.__globals__, "run", None, (types.CellType(),))
    return Step("a", empty)


def recursive(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return recursive(ctx) if "again" in ctx.inputs else IOSuccess(ctx)


def test_recursion_and_late_bound_closures_are_described() -> None:
    assert fingerprint(flow(Step("a", recursive))) == fingerprint(flow(Step("a", recursive)))
    assert len(fingerprint(flow(unbound_closure()))) == 20


def test_a_thousand_steps_are_fingerprinted_quickly_enough_to_be_measured_not_asserted() -> None:
    workflow = Workflow("big", tuple(make(i).__class__("s" + str(i), one) for i in range(1000)))
    assert len(step_fingerprints(workflow)) == 1000


def test_a_parallel_steps_limits_are_part_of_its_fingerprint() -> None:
    from adws import fan_out, parallel  # noqa: PLC0415 - only these tests need them

    assert fingerprint(flow(parallel("p", [Step("a", one)]))) != fingerprint(
        flow(parallel("p", [Step("a", one)], min_successes=1))
    )
    assert fingerprint(flow(fan_out("f", Step("a", one), over="x"))) != fingerprint(
        flow(fan_out("f", Step("a", one), over="y"))
    )


def test_a_custom_spec_counts_and_a_library_schema_is_named() -> None:
    from adws.engine.usage import Usage  # noqa: PLC0415 - a schema class from a library

    custom = flow(Step("a", one, spec={"limit": 1}))
    assert fingerprint(custom) == fingerprint(flow(Step("a", one, spec={"limit": 1})))
    assert fingerprint(custom) != fingerprint(flow(Step("a", one, spec={"limit": 2})))
    library = agent_step(
        "u", prompt="p", agent=ScriptedAgent([]), contract=OutputContract(schemas={"U_JSON": Usage})
    )
    assert helper_sources(flow(library)) == ""
    # Named by its first home, so a journal from before adws moved it into engine/ still matches.
    assert "adws.usage:Usage" in str(describe_workflow(flow(library)))


def test_a_sequence_fail_fast_and_a_generated_script_are_part_of_a_steps_fingerprint() -> None:
    from adws import fan_out, parallel, sequence  # noqa: PLC0415 - the specs #25 added

    def described(inner: Step, *, fail_fast: bool = True, generated: bool = True) -> dict[str, str]:
        verify = shell_step("verify", script_from="s", allow_generated=generated)
        return step_fingerprints(
            Workflow(
                "w",
                (
                    sequence("stage", [inner, verify]),
                    parallel("checks", [Step("lint", one)], fail_fast=fail_fast),
                    fan_out("each", sequence("pipe", [Step("x", one)]), over="xs"),
                ),
                inputs=("s",),
            )
        )

    base = described(Step("plan", one))
    assert described(Step("plan", one)) == base
    assert described(Step("plan", other))["stage"] != base["stage"]
    assert described(Step("plan", one), generated=False)["stage"] != base["stage"]
    changed = described(Step("plan", one), fail_fast=False)
    assert (changed["checks"] != base["checks"], changed["stage"]) == (True, base["stage"])


def test_a_seed_counts_and_a_worktree_without_one_is_described_as_before() -> None:
    from adws import worktree  # noqa: PLC0415 - only this test builds worktrees

    def seeded(setup: str | None) -> Workflow:
        share = ("deps",) if setup else ()
        return flow(worktree(Step("a", one), setup=setup, share=share))

    plain = describe_workflow(seeded(None))
    assert "seed" not in str(plain)  # fingerprints made before seeds existed stay as they were
    prints = {fingerprint(seeded(setup)) for setup in (None, "npm ci", "npm install")}
    assert len(prints) == 3
