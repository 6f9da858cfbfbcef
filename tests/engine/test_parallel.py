"""parallel and fan_out: branches in threads, the failure policy, outputs, events, limits."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.io import IOFailure, IOResult, IOSuccess

from adws import (
    OutputContract,
    PipelineError,
    RetryPolicy,
    ScriptedAgent,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
    fan_out,
    parallel,
    run_workflow,
    sequence,
    shell_step,
)
from adws.agents import AgentRequest
from adws.engine.events import BranchAttemptFailed, BranchFinished
from adws.journal import Journal, JournalObserver
from adws.render import format_event, show_text, to_mermaid
from adws.runs.summary import RunSummary
from tests.conftest import Events, FakeSleep, failure, success

BARRIER = (
    "touch started_{name}; i=0; while [ $(ls started_* | wc -l) -lt {count} ]; do "
    "i=$((i+1)); [ $i -gt 100 ] && exit 1; sleep 0.05; done"
)


def ok(key: str, value: object = 1) -> Step:
    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOSuccess(ctx.merge_outputs({key: value}))

    return Step(key, run)


def broken(name: str, message: str = "broke") -> Step:
    def run(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOFailure(PipelineError("", "ShellFailed", f"{name} {message}"))

    return Step(name, run)


@pytest.mark.slow
def test_branches_truly_overlap(in_tmp: Path) -> None:
    """Three branches wait until all three have started: only possible if they run together."""
    branches = [shell_step(f"b{i}", BARRIER.format(name=i, count=3)) for i in range(3)]
    ctx = success(run_workflow(Workflow("w", (parallel("all", branches),))))
    assert [ctx.inputs[f"b{i}_returncode"] for i in range(3)] == [0, 0, 0]


@pytest.mark.slow
def test_max_concurrency_limits_how_many_run_at_once(in_tmp: Path) -> None:
    branches = [shell_step(f"b{i}", BARRIER.format(name=i, count=2)) for i in range(2)]
    error = failure(run_workflow(Workflow("w", (parallel("one", branches, max_concurrency=1),))))
    assert (error.step_name, error.error_type) == ("one[b0]", "ShellFailed")


@pytest.mark.slow
def test_a_failure_cancels_the_running_branches_and_leaves_no_process(in_tmp: Path) -> None:
    slow = shell_step("slow", "echo $$ > slow.pid; exec sleep 30")
    quick = shell_step("quick", "while [ ! -s slow.pid ]; do sleep 0.05; done; exit 3")
    events = Events()
    journal = Journal(in_tmp / "runs.db")
    started = time.monotonic()
    error = failure(
        run_workflow(
            Workflow("w", (parallel("both", [slow, quick]),)),
            observers=[events, JournalObserver(journal, "f")],
            run_id="r",
        )
    )
    assert time.monotonic() - started < 20
    assert (error.step_name, error.error_type) == ("both[quick]", "ShellFailed")
    branches = error.context["branches"]
    assert {path: branch["status"] for path, branch in branches.items()} == {
        "both[slow]": "cancelled",
        "both[quick]": "failed",
    }
    assert (branches["both[slow]"]["error"], branches["both[quick]"]["error"]["message"]) == (
        None,
        error.message,
    )
    pid = int((in_tmp / "slow.pid").read_text())
    from adws import io_ops  # noqa: PLC0415 - only this test looks at processes

    assert not io_ops.process_alive(pid) or "State:\tZ" in Path(f"/proc/{pid}/status").read_text()
    rows = {(a.step, a.status, a.attempt) for a in journal.attempts("r")}
    assert {("both[slow]", "cancelled", 1), ("both[quick]", "failed", 1)} <= rows
    # The cancelled branch did not fail: no failed attempt is reported for it.
    failed = [e.branch for e in events.events if isinstance(e, BranchAttemptFailed)]
    assert failed == ["both[quick]"]


def test_the_error_is_the_failed_branch_first_in_declaration_order() -> None:
    late = Step("late", broken("late").run)
    early = Step("early", broken("early").run)
    error = failure(run_workflow(Workflow("w", (parallel("p", [early, late], max_concurrency=1),))))
    assert error.message == "early broke"


def test_min_successes_succeeds_with_k_and_lists_the_failures() -> None:
    step = parallel("p", [ok("a"), broken("b"), ok("c")], min_successes=2)
    ctx = success(run_workflow(Workflow("w", (step,))))
    assert (ctx.inputs["a"], ctx.inputs["c"]) == (1, 1)
    assert ctx.inputs["p_failures"] == (
        {
            "step_name": "p[b]",
            "error_type": "ShellFailed",
            "message": "b broke",
            "context": {"attempts": 1, "feedback": ()},
        },
    )


def test_min_successes_out_of_reach_fails_and_cancels_the_rest() -> None:
    step = parallel("p", [broken("a"), broken("b"), ok("c")], min_successes=2, max_concurrency=1)
    error = failure(run_workflow(Workflow("w", (step,))))
    assert error.message == "a broke"
    assert {path: branch["status"] for path, branch in error.context["branches"].items()} == {
        "p[a]": "failed",
        "p[b]": "failed",
        "p[c]": "cancelled",
    }


def test_fan_out_runs_one_branch_per_element_in_order() -> None:
    def shout(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        word, index = ctx.inputs["word"], ctx.inputs["word_index"]
        if word == "bad":
            return IOFailure(PipelineError("", "Unverified", f"{word} at {index}"))
        return IOSuccess(ctx.merge_outputs({"loud": f"{index}:{word.upper()}"}))

    step = fan_out("shout_all", Step("shout", shout), over="words", item="word", min_successes=2)
    ctx = success(
        run_workflow(Workflow("w", (step,)), WorkflowContext(inputs={"words": ["a", "bad", "c"]}))
    )
    assert ctx.inputs["shout_all"] == ({"loud": "0:A"}, None, {"loud": "2:C"})
    assert [f["message"] for f in ctx.inputs["shout_all_failures"]] == ["bad at 1"]


@pytest.mark.parametrize(
    ("inputs", "kind", "message"),
    [
        ({}, "MissingInput", "fan_out 'f' needs input 'items' to be a list, got None"),
        (
            {"items": "abc"},
            "MissingInput",
            "fan_out 'f' needs input 'items' to be a list, got 'abc'",
        ),
        (
            {"items": [1], "item": 0},
            "ContextCollision",
            "fan_out 'f': input 'item' exists already; choose another item=",
        ),
    ],
)
def test_fan_out_needs_a_list_and_a_free_item_name(
    inputs: dict[str, object], kind: str, message: str
) -> None:
    error = failure(
        run_workflow(
            Workflow("w", (fan_out("f", ok("x"), over="items"),)), WorkflowContext(inputs=inputs)
        )
    )
    assert (error.error_type, error.message) == (kind, message)


def test_fan_out_over_nothing_succeeds_unless_it_needs_successes() -> None:
    ctx = success(
        run_workflow(
            Workflow("w", (fan_out("f", ok("x"), over="items"),)),
            WorkflowContext(inputs={"items": []}),
        )
    )
    assert ctx.inputs["f"] == ()
    needy = fan_out("f", ok("x"), over="items", min_successes=1)
    error = failure(run_workflow(Workflow("w", (needy,)), WorkflowContext(inputs={"items": []})))
    assert (error.error_type, error.message) == (
        "TooFewSuccesses",
        "step 'f' needs 1 successful branches; 0 of 0 succeeded",
    )


def test_two_branches_writing_one_key_collide() -> None:
    step = parallel("p", [Step("a", ok("same").run), Step("b", ok("same").run)])
    error = failure(run_workflow(Workflow("w", (step,))))
    assert (error.error_type, error.message) == (
        "ContextCollision",
        "branch p[b] writes 'same', which another branch wrote",
    )


def test_keys_written_inside_a_combinator_branch_count_too() -> None:
    from adws import with_verification  # noqa: PLC0415 - only this test nests a combinator

    asker = agent_step("a", prompt="p", agent=ScriptedAgent([]), contract=OutputContract(("NOTE",)))
    checker = agent_step(
        "b", prompt="p", agent=ScriptedAgent([]), contract=OutputContract(("NOTE",))
    )
    with pytest.raises(ValueError, match="branches 'a' and 'checked' both write 'note'"):
        parallel("p", [asker, with_verification(Step("m", ok("m").run), checker, name="checked")])


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (
            lambda: parallel("p", [ok("a"), ok("a")]),
            ValueError,
            "parallel 'p': branch names must be distinct, got ['a', 'a']",
        ),
        (
            lambda: parallel("p", [ok("a")], min_successes=2),
            ValueError,
            "parallel 'p': min_successes=2 but there are 1 branches",
        ),
        (
            lambda: parallel("p", ["a"]),  # type: ignore[list-item] # wrong on purpose
            TypeError,
            "parallel 'p': steps must be a sequence of Steps, got 'a'",
        ),
        (
            lambda: parallel("p", [ok("a")], max_concurrency=0),
            ValueError,
            "parallel 'p': max_concurrency must be an int >= 1, got 0",
        ),
        (
            lambda: parallel("p", [ok("a")], when="yes"),  # type: ignore[arg-type] # wrong on purpose
            TypeError,
            "parallel 'p': when must be callable or None, got 'yes'",
        ),
        (
            lambda: parallel(
                "p",
                [
                    agent_step(
                        "x",
                        prompt="p",
                        agent=ScriptedAgent([]),
                        contract=OutputContract(("SUMMARY",)),
                    ),
                    agent_step(
                        "y",
                        prompt="p",
                        agent=ScriptedAgent([]),
                        contract=OutputContract(("SUMMARY",)),
                    ),
                ],
            ),
            ValueError,
            "parallel 'p': branches 'x' and 'y' both write 'summary'; their outputs would collide",
        ),
        (
            lambda: fan_out("f", "step", over="x"),  # type: ignore[arg-type] # wrong on purpose
            TypeError,
            "fan_out 'f': step must be a Step, got 'step'",
        ),
        (
            lambda: fan_out("f", ok("a"), over="x", min_successes=-1),
            ValueError,
            "fan_out 'f': min_successes must be an int >= 0, got -1",
        ),
    ],
)
def test_impossible_parallel_steps_are_refused_at_definition(
    build: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        build()  # type: ignore[operator] # each case builds one bad step
    assert str(raised.value) == message


def test_branch_events_are_named_by_path_and_counted_in_the_summary() -> None:
    events, summary = Events(), RunSummary()
    step = parallel("checks", [ok("lint"), broken("tests")], min_successes=1, max_concurrency=1)
    run_workflow(Workflow("w", (step,)), observers=[events, summary])
    finished = [e for e in events.events if isinstance(e, BranchFinished)]
    assert [(e.branch, e.status, e.done, e.failed, e.of) for e in finished] == [
        ("checks[lint]", "succeeded", 1, 0, 2),
        ("checks[tests]", "failed", 1, 1, 2),
    ]
    assert [format_event(e) for e in finished] == [
        "[1/1] checks[lint] … ok in 0.0s · 1/2 done, 0 failed",
        "[1/1] checks[tests] … gave up · 1/2 done, 1 failed",
    ]
    assert summary.to_dict()["steps"][0]["branches"] == {  # type: ignore[index]
        "checks[lint]": "succeeded",
        "checks[tests]": "failed",
    }
    kinds = events.kinds()
    assert kinds.count("BranchStarted") == 2
    assert (
        format_event(events.events[kinds.index("BranchStarted")]) == "[1/1] checks[lint] … running"
    )


def test_a_branch_retries_under_its_own_policy_through_the_runs_sleep(
    fake_sleep: FakeSleep,
) -> None:
    calls: list[int] = []

    def flaky(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        calls.append(len(ctx.feedback))
        if not ctx.feedback:
            return IOFailure(PipelineError("", "ShellFailed", "slow"))
        return IOSuccess(ctx.merge_outputs({"ok": True}))

    events = Events()
    step = parallel("p", [Step("flaky", flaky, retry=RetryPolicy(2, delay=3))])
    success(run_workflow(Workflow("w", (step,)), sleep=fake_sleep, observers=[events]))
    assert (calls, fake_sleep.calls) == ([0, 1], [3.0])
    failed = next(e for e in events.events if type(e).__name__ == "BranchAttemptFailed")
    assert format_event(failed) == (
        "[1/1] p[flaky] … attempt 1/2 failed: ShellFailed: slow; retrying in 3.0s"
    )


def test_max_agents_caps_agent_calls_in_flight_across_the_run() -> None:
    lock = threading.Lock()
    in_flight, peak = [0], [0]

    def answer(_request: AgentRequest) -> str:
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.05)
        with lock:
            in_flight[0] -= 1
        return "STATUS: done"

    branches = [agent_step(f"a{i}", prompt="p", agent=ScriptedAgent([answer])) for i in range(4)]
    success(run_workflow(Workflow("w", (parallel("p", branches),)), max_agents=2))
    assert peak[0] == 2
    with pytest.raises(ValueError, match="run_workflow: max_agents must be an int >= 1, got 0"):
        run_workflow(Workflow("w", ()), max_agents=0)


def test_show_and_mermaid_draw_fork_and_join() -> None:
    step = parallel("checks", [ok("lint"), ok("tests")], max_concurrency=2, min_successes=1)
    spread = fan_out("each", ok("one"), over="items")
    workflow = Workflow("w", (step, spread))
    assert show_text(workflow).splitlines()[2:] == [
        "  1. checks: parallel · 1 attempt · runs 2 branches at once, at most 2 at a time, needs 1 to succeed",
        "     1. lint: python · 1 attempt",
        "     2. tests: python · 1 attempt",
        "  2. each: fan_out · 1 attempt · runs one once per element of items (as item)",
        "     1. one: python · 1 attempt",
    ]
    drawn = to_mermaid(workflow)
    for line in (
        '    subgraph checks["checks · parallel"]',
        "        checks_fork{{fork}}",
        "        checks_fork --> lint",
        "        tests --> checks_join",
        '    subgraph each["each · one branch per item in items"]',
    ):
        assert line in drawn.splitlines()


@settings(max_examples=60, deadline=None)
@given(
    failing=st.lists(st.booleans(), min_size=1, max_size=5),
    quorum=st.none() | st.integers(min_value=0, max_value=5),
)
def test_whatever_subset_fails_the_result_follows_the_rules(
    failing: list[bool], quorum: int | None
) -> None:
    """One branch at a time, so which branches were cancelled is decided, not raced."""
    count = len(failing)
    needed_raw = quorum if quorum is not None and quorum <= count else None
    branches = [broken(f"b{i}") if bad else ok(f"b{i}", i) for i, bad in enumerate(failing)]
    step = parallel("p", branches, min_successes=needed_raw, max_concurrency=1)
    result = run_workflow(Workflow("w", (step,)))
    needed = count if needed_raw is None else needed_raw
    statuses: list[str] = []
    failed = 0
    for bad in failing:
        if count - failed < needed:
            statuses.append("cancelled")
            continue
        statuses.append("failed" if bad else "succeeded")
        failed += bad
    succeeded = statuses.count("succeeded")
    if succeeded >= needed and count - failed >= needed:
        ctx = success(result)
        expected = {f"b{i}": i for i, status in enumerate(statuses) if status == "succeeded"}
        assert {k: v for k, v in ctx.inputs.items() if k != "p_failures"} == expected
        assert [f["step_name"] for f in ctx.inputs["p_failures"]] == [
            f"p[b{i}]" for i, status in enumerate(statuses) if status == "failed"
        ]
    else:
        error = failure(result)
        first_bad = statuses.index("failed")
        assert error.step_name == f"p[b{first_bad}]"
        assert [branch["status"] for branch in error.context["branches"].values()] == statuses


def test_a_branch_waits_for_real_between_attempts_unless_cancelled() -> None:
    calls: list[float] = []

    def flaky(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        calls.append(time.monotonic())
        if not ctx.feedback:
            return IOFailure(PipelineError("", "ShellFailed", "slow"))
        return IOSuccess(ctx.merge_outputs({"ok": True}))

    step = parallel("p", [Step("flaky", flaky, retry=RetryPolicy(2, delay=0.2))])
    success(run_workflow(Workflow("w", (step,))))
    assert calls[1] - calls[0] >= 0.19


def test_use_agent_reaches_agent_steps_inside_parallel_and_fan_out() -> None:
    from adws import use_agent  # noqa: PLC0415 - the one test of this path

    branch = agent_step(
        "ask", prompt="about {item}", agent=ScriptedAgent([]), contract=OutputContract(("ANSWER",))
    )
    other = agent_step("tell", prompt="p", agent=ScriptedAgent([]))
    workflow = Workflow(
        "w",
        (
            fan_out("each", branch, over="items", min_successes=1),
            parallel("both", [other], max_concurrency=1),
        ),
    )
    agent = ScriptedAgent(["STATUS: done\nANSWER: a", "STATUS: done\nANSWER: b", "STATUS: done"])
    ctx = success(
        run_workflow(use_agent(workflow, agent), WorkflowContext(inputs={"items": ["x", "y"]}))
    )
    assert sorted(answer["answer"] for answer in ctx.inputs["each"]) == ["a", "b"]
    assert sorted(request.step_name for request in agent.requests) == ["ask", "ask", "tell"]


def test_a_cancelled_branch_starts_no_new_process() -> None:
    from adws import io_ops  # noqa: PLC0415 - the branch's view of cancellation

    cancel = threading.Event()
    cancel.set()
    token = io_ops.CANCEL.set(cancel)
    try:
        outcome = io_ops.run_process(["true"])
    finally:
        io_ops.CANCEL.reset(token)
    assert (outcome.returncode, outcome.error) == (None, "cancelled before it started")


class _SetOnceAsked(threading.Event):
    """A branch's cancel event set just after run_process checked it, before its group is known."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def is_set(self) -> bool:
        self.asked += 1
        return self.asked > 1


def test_a_branch_cancelled_while_its_process_starts_kills_that_process() -> None:
    from adws import io_ops  # noqa: PLC0415 - the branch's view of cancellation

    token = io_ops.CANCEL.set(_SetOnceAsked())
    try:
        outcome = io_ops.run_process(["sleep", "60"])
    finally:
        io_ops.CANCEL.reset(token)
    assert outcome.returncode == -signal.SIGKILL  # killed, not left to sleep its 60 s


def test_status_lists_each_branch_and_its_last_error(tmp_path: Path) -> None:
    from adws.render import status_text  # noqa: PLC0415 - only this test renders a status

    journal = Journal(tmp_path / "runs.db")
    step = parallel("checks", [ok("lint"), broken("tests")], min_successes=1, max_concurrency=1)
    run_workflow(Workflow("w", (step,)), observers=[JournalObserver(journal, "f")], run_id="r")
    record = journal.find("r")
    assert not isinstance(record, str)
    assert status_text(record, journal.attempts("r")).splitlines()[2:] == [
        "  1. checks: succeeded (1 attempt, 0.0s)",
        "       checks[lint]: succeeded (1 attempt, 0.0s)",
        "       checks[tests]: failed (1 attempt, 0.0s)",
        "         attempt 1: ShellFailed: tests broke",
    ]


def test_without_fail_fast_every_branch_runs_and_every_failure_is_reported() -> None:
    ran: list[str] = []

    def track(step: Step) -> Step:
        def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
            ran.append(step.name)
            return step.run(ctx)

        return Step(step.name, run)

    branches = [track(broken("lint", "found E501")), track(ok("tests")), track(broken("types"))]
    step = parallel("verify", branches, max_concurrency=1, fail_fast=False)
    error = failure(run_workflow(Workflow("w", (step,))))
    assert ran == ["lint", "tests", "types"]
    assert (error.step_name, error.error_type) == ("verify[lint]", "ShellFailed")
    assert error.message == (
        "lint found E501\n\nalso failed: verify[types]: ShellFailed: types broke"
    )
    assert [f["step_name"] for f in error.context["failures"]] == ["verify[lint]", "verify[types]"]
    assert {path: b["status"] for path, b in error.context["branches"].items()} == {
        "verify[lint]": "failed",
        "verify[tests]": "succeeded",
        "verify[types]": "failed",
    }


def test_fan_out_without_fail_fast_runs_a_sequence_per_item_to_the_end() -> None:
    def check(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        if ctx.inputs["doubled"] > 4:
            return IOFailure(PipelineError("", "ShellFailed", f"{ctx.inputs['doubled']} too big"))
        return IOSuccess(ctx.merge_outputs({"checked": ctx.inputs["doubled"]}))

    def double(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOSuccess(ctx.merge_outputs({"doubled": ctx.inputs["n"] * 2}))

    per_item = sequence("pipe", [Step("double", double), Step("check", check)])
    step = fan_out("each", per_item, over="ns", item="n", max_concurrency=1, fail_fast=False)
    error = failure(run_workflow(Workflow("w", (step,)), WorkflowContext(inputs={"ns": [3, 1, 5]})))
    assert error.message == "6 too big\n\nalso failed: each[2]: ShellFailed: 10 too big"
    assert [b["status"] for b in error.context["branches"].values()] == [
        "failed",
        "succeeded",
        "failed",
    ]
    fine = success(run_workflow(Workflow("w", (step,)), WorkflowContext(inputs={"ns": [1, 2]})))
    assert fine.inputs["each"] == (
        {"doubled": 2, "checked": 2},
        {"doubled": 4, "checked": 4},
    )


def test_fail_fast_false_with_a_quorum_still_succeeds_with_k() -> None:
    step = parallel("p", [broken("a"), ok("b")], min_successes=1, fail_fast=False)
    ctx = success(run_workflow(Workflow("w", (step,))))
    assert [f["step_name"] for f in ctx.inputs["p_failures"]] == ["p[a]"]


def test_fail_fast_must_be_a_bool_and_is_shown_and_kept_by_use_agent() -> None:
    with pytest.raises(TypeError, match="fail_fast"):
        parallel("p", [ok("a")], fail_fast="no")  # type: ignore[arg-type] # a mistake on purpose
    with pytest.raises(TypeError, match="fail_fast"):
        fan_out("f", ok("a"), over="x", fail_fast=0)  # type: ignore[arg-type] # as above
    from adws import use_agent  # noqa: PLC0415 - only this test swaps agents here

    workflow = Workflow(
        "w",
        (
            parallel("p", [ok("a")], fail_fast=False),
            fan_out("f", sequence("s", [ok("b")]), over="x", fail_fast=False),
        ),
    )
    assert show_text(workflow).splitlines()[2:] == [
        "  1. p: parallel · 1 attempt · runs 1 branches at once, every branch runs to its end",
        "     1. a: python · 1 attempt",
        "  2. f: fan_out · 1 attempt · runs s once per element of x (as item), every branch runs to its end",
        "     1. s: sequence · 1 attempt · runs b",
        "        1. b: python · 1 attempt",
    ]
    swapped = use_agent(workflow, ScriptedAgent([]))
    assert [step.spec.fail_fast for step in swapped.steps] == [False, False]  # type: ignore[attr-defined] # specs of parallel steps
    assert swapped.steps[1].children[0].kind == "sequence"


@pytest.mark.parametrize(("field", "value"), [("item", "Not An Identifier"), ("over", "Claims")])
def test_fan_outs_over_and_item_must_be_input_names(field: str, value: str) -> None:
    names = {"over": "claims", "item": "claim", field: value}
    with pytest.raises(ValueError, match="is not an input name") as raised:
        fan_out("fan", Step("a", IOSuccess), over=names["over"], item=names["item"])
    assert str(raised.value) == (
        f"fan_out 'fan': {field} {value!r} is not an input name (lower_snake_case), so no "
        "placeholder could name it"
    )
