"""Progress lines and descriptions."""

from __future__ import annotations

import attrs
from returns.io import IOResult, IOSuccess

from adws import PipelineError, RetryPolicy, Step, Workflow, WorkflowContext
from adws.engine.events import (
    AgentExchanged,
    AttemptFailed,
    BranchAttemptFailed,
    BranchFinished,
    BranchStarted,
    ObserverFailed,
    RoundFailed,
    RunEvent,
    RunFinished,
    RunStarted,
    StepSkipped,
    StepStarted,
    StepSucceeded,
)
from adws.journal import AttemptRecord, RunRecord
from adws.render import (
    Progress,
    describe_retry,
    error_lines,
    format_event,
    status_text,
    to_mermaid,
    whole_error,
)
from adws.render.status import wall_seconds

ERROR = PipelineError("verify", "ContractViolation", "STATUS missing\nmore")


def test_progress_lines() -> None:
    ctx = WorkflowContext()
    assert format_event(RunStarted("r", "w", ("a", "b"), ctx)) == "w: run r, 2 steps"
    assert format_event(RunStarted("r", "w", ("a", "b"), ctx, 1, resumed=True)) == (
        "w: run r, 2 steps, resuming at b"
    )
    assert format_event(RunStarted("r", "w", ("a",), ctx, 1, resumed=True)) == "w: run r, 1 step"
    assert format_event(StepStarted("r", "verify", 1, 4, 3, False)) == "[2/4] verify … running"
    assert format_event(AttemptFailed("r", "verify", 1, 4, 2, 3, ERROR, True, 0.0, 0.1)) == (
        "[2/4] verify … attempt 2/3 failed: ContractViolation: STATUS missing; retrying"
    )
    assert format_event(AttemptFailed("r", "verify", 1, 4, 1, 3, ERROR, True, 2.0, 0.1)).endswith(
        "; retrying in 2.0s"
    )
    assert format_event(AttemptFailed("r", "verify", 1, 4, 1, 1, ERROR, False, 0.0, 0.1)) == (
        "[2/4] verify … failed: ContractViolation: STATUS missing"
    )
    assert format_event(StepSkipped("r", "write", 2, 4, "halted")) == (
        "[3/4] write … skipped (an earlier step failed)"
    )
    assert (
        format_event(StepSkipped("r", "write", 2, 4, "condition"))
        == "[3/4] write … skipped (condition is false)"
    )
    assert (
        format_event(RunFinished("r", "w", "succeeded", None, ctx, 1.25))
        == "w succeeded in 1.2s (run r)"
    )
    assert format_event(RunFinished("r", "w", "failed", ERROR, ctx, 2)) == (
        "w failed in 2.0s at verify: ContractViolation: STATUS missing (run r)"
    )
    no_step = PipelineError("", "MissingInput", "")
    assert (
        format_event(RunFinished("r", "w", "failed", no_step, ctx, 0))
        == "w failed in 0.0s: MissingInput:  (run r)"
    )
    assert format_event(ObserverFailed("r", "journal", "OSError: disk full")) == (
        "warning: observer journal failed and was detached: OSError: disk full"
    )


def test_long_errors_are_cut_to_one_readable_line() -> None:
    long = PipelineError("s", "ShellFailed", "x" * 500)
    line = format_event(AttemptFailed("r", "s", 0, 1, 1, 1, long, False, 0.0, 0.0))
    assert line.endswith("x…")
    assert len(line) < 300


def test_describe_retry_mentions_jitter() -> None:
    assert (
        describe_retry(RetryPolicy(2, delay=1, jitter=0.5))
        == "2 attempts, wait 1s x2 up to 60s +≤0.5s jitter"
    )


def test_mermaid_draws_no_failure_edge_after_the_last_always_run_step() -> None:
    flow = Workflow("w", (Step("a", noop, always_run=True), Step("b", noop)))
    assert to_mermaid(flow).splitlines()[-2:] == [
        "    b --> finish((done))",
        "    classDef always stroke-dasharray: 5 3",
    ]


def noop(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOSuccess(ctx)


def test_status_text_marks_steps_never_reached() -> None:
    record = RunRecord(
        "r", "w", "f", "running", ("a", "b"), "{}", "t0", None, None, None, None, None, None, 0
    )
    attempt = AttemptRecord("a", 0, 1, "succeeded", "t1", 0.5, None, None)
    assert status_text(record, [attempt]) == (
        "run r · w · running\nstarted t0\n  1. a: succeeded (1 attempt, 0.5s)\n  2. b: not run"
    )


# -- errors whole, progress with memory, status by the wall clock ---------------------

SHELL = PipelineError(
    "label",
    "ShellFailed",
    "`tools/label.sh {n} {label}` exited with 4:\nlabelling\nerror: no tracker",
    {
        "command": "tools/label.sh {n} {label}",
        "values": {"n": "42", "label": "needs triage"},
        "returncode": 4,
        "stdout_tail": "labelling\n",
        "stderr_tail": "error: no tracker\n",
    },
)


def test_a_failed_command_is_shown_with_its_values_quoted_and_its_output_tails() -> None:
    assert error_lines(SHELL) == [
        "ran: tools/label.sh {n} {label}",
        "  with n=42 label='needs triage'",
        "stdout:",
        "  labelling",
        "stderr:",
        "  error: no tracker",
    ]


def test_an_argv_command_is_shown_exactly_as_it_ran() -> None:
    error = PipelineError("s", "ShellFailed", "x", {"argv": ["git", "commit", "-m", "a b"]})
    assert error_lines(error) == ["ran: git commit -m 'a b'"]
    long = PipelineError("s", "ShellFailed", "x", {"command": "c {v}", "values": {"v": "y" * 300}})
    assert error_lines(long)[1] == f"  with v='{'y' * 199}…'"


def test_a_multi_line_message_and_a_traceback_follow_the_first_line() -> None:
    error = PipelineError(
        "s", "StepException", "step 's' raised:\nline two\nline three", {"traceback": "Trace\n  x"}
    )
    assert error_lines(error) == ["line two", "line three"]
    assert error_lines(error, verbose=True) == [
        "line two",
        "line three",
        "traceback:",
        "  Trace",
        "    x",
    ]


def test_a_contract_violation_lists_its_problems_and_the_end_of_the_answer() -> None:
    answer = "\n".join(f"line {n}" for n in range(20)) + "\n" + "z" * 300
    error = PipelineError(
        "s", "ContractViolation", "a; b", {"problems": ("a", "b"), "raw_output": answer}
    )
    lines = error_lines(error)
    assert lines[:3] == ["- a", "- b", "the answer ended:"]
    assert lines[3:5] == ["  line 9", "  line 10"]
    assert lines[-1] == f"  {'z' * 199}…"
    empty = PipelineError("s", "ContractViolation", "STATUS missing", {"problems": ["x"]})
    assert error_lines(empty) == ["the answer was empty"]


def test_a_parallel_steps_error_says_how_each_branch_ended() -> None:
    error = PipelineError(
        "v[1]",
        "AgentFailed",
        "no",
        {
            "branches": {
                "v[0]": {"status": "succeeded", "error": None},
                "v[1]": {"status": "failed", "error": {"error_type": "AgentFailed", "message": ""}},
                "v[2]": "not a mapping",
            },
            "rounds": 3,
        },
    )
    assert error_lines(error) == [
        "v[0]: succeeded",
        "v[1]: failed: AgentFailed: ",
        "verification failed in each of 3 rounds",
    ]


def test_cleanup_failures_are_described_whole_after_the_first_error() -> None:
    late = PipelineError("cleanup", "StepException", "broke:\nbadly")
    error = SHELL.with_context(always_run_failures=[late, "not an error"])
    assert whole_error(error, prefix="error: ")[-3:] == [
        "    error: no tracker",
        "also failed while cleaning up: cleanup: StepException: broke",
        "  badly",
    ]


def lines_of(progress: Progress, *events: RunEvent) -> list[str]:
    return [line for event in events for line in progress.lines(event)]


def test_a_failure_is_printed_whole_under_its_progress_line() -> None:
    failed = AttemptFailed("r", "label", 1, 2, 1, 1, SHELL, False, 0.0, 0.1)
    assert lines_of(Progress(), failed) == [
        "[2/2] label … failed: ShellFailed: `tools/label.sh {n} {label}` exited with 4",
        "      ran: tools/label.sh {n} {label}",
        "        with n=42 label='needs triage'",
        "      stdout:",
        "        labelling",
        "      stderr:",
        "        error: no tracker",
    ]
    retried = AttemptFailed("r", "label", 1, 2, 1, 2, SHELL, True, 0.0, 0.1)
    assert len(lines_of(Progress(), retried)) == 1


def test_branches_are_reported_by_name_and_a_run_names_what_it_dropped() -> None:
    ctx = WorkflowContext()
    broken = PipelineError("v[1]", "AgentFailed", "gone")
    progress = Progress()
    lines = lines_of(
        progress,
        BranchStarted("r", "v", 0, 1, "v[0]", 1),
        BranchFinished("r", "v", 0, 1, "v[0]", "succeeded", 2, 0.5, None, {}, 1, 0, 3),
        BranchAttemptFailed("r", "v", 0, 1, "v[1]", 1, 1, broken, False, 0.0, 0.1),
        BranchFinished("r", "v", 0, 1, "v[1]", "failed", 1, 0.1, broken, {}, 1, 1, 3),
        BranchFinished("r", "v", 0, 1, "v[2]", "cancelled", 0, 0.0, None, {}, 1, 1, 3),
        BranchFinished("r", "v", 0, 1, "v[3]", "reused", 0, 0.0, None, {}, 2, 1, 3),
        StepSucceeded("r", "v", 0, 1, 1, 0.6, ctx),
        AgentExchanged("r", "v[0]", 1, "v", "p", "a", 0, "", None, 0.1, None, None, 10),
        RunFinished("r", "w", "succeeded", None, ctx, 0.7),
    )
    assert lines == [
        "[1/1] v[0] … running",
        "[1/1] v[0] … ok in 0.5s (2 attempts) · 1/3 done, 0 failed",
        "[1/1] v[1] … failed: AgentFailed: gone",
        "[1/1] v[1] … gave up · 1/3 done, 1 failed",
        "[1/1] v[2] … cancelled · 1/3 done, 1 failed",
        "[1/1] v[3] … kept from an earlier session · 2/3 done, 1 failed",
        "[1/1] v … ok in 0.6s",
        "w succeeded in 0.7s (run r); v dropped v[1] failed: AgentFailed: gone, v[2] cancelled",
    ]


def test_a_verification_says_how_many_rounds_it_took() -> None:
    ctx = WorkflowContext()
    no = PipelineError("review", "AgentRetryRequested", "too short")
    progress = Progress()
    lines = lines_of(
        progress,
        RoundFailed("r", "d_verified", 0, 2, "d_verified", 1, 1, 3, no, True),
        StepSucceeded("r", "d_verified", 0, 2, 2, 1.0, ctx),
        RoundFailed("r", "x", 1, 2, "x[0]", 1, 1, 2, no, True),
        RoundFailed("r", "x", 1, 2, "x[0]", 1, 2, 2, no, False),
        BranchFinished("r", "x", 1, 2, "x[0]", "succeeded", 1, 0.5, None, {}, 1, 0, 1),
        BranchFinished("r", "x", 1, 2, "x[1]", "succeeded", 1, 0.5, None, {}, 2, 0, 2),
    )
    assert lines == [
        (
            "[1/2] d_verified … round 1/3: verification failed: AgentRetryRequested: too short;"
            " running it again"
        ),
        "[1/2] d_verified … ok in 1.0s (2 attempts, 2 rounds)",
        (
            "[2/2] x[0] … round 1/2: verification failed: AgentRetryRequested: too short;"
            " running it again"
        ),
        "[2/2] x[0] … round 2/2: verification failed: AgentRetryRequested: too short",
        "[2/2] x[0] … ok in 0.5s (3 rounds) · 1/1 done, 0 failed",
        "[2/2] x[1] … ok in 0.5s · 2/2 done, 0 failed",
    ]


def test_a_parallel_steps_failure_lists_its_branches_not_their_errors_again() -> None:
    error = PipelineError(
        "v[0]", "AgentFailed", "x\ny", {"branches": {"v[0]": {"status": "failed", "error": None}}}
    )
    failed = AttemptFailed("r", "v", 0, 1, 1, 1, error, False, 0.0, 0.1)
    assert lines_of(Progress(), failed)[1:] == ["      v[0]: failed"]
    assert format_event(
        AgentExchanged("r", "a", 1, "a", "p", None, None, "", None, 1.0, None, None, 1)
    ) == ("a … a's agent gave no answer in 1.0s")


def row(  # noqa: PLR0913, PLR0917 - a journal row, by hand
    step: str,
    attempt: int,
    status: str,
    started: float | None,
    seconds: float,
    error: PipelineError | None = None,
) -> AttemptRecord:
    return AttemptRecord(
        step, 0, attempt, status, "t", seconds, error, None, None, None, None, started=started
    )


def test_a_step_is_timed_by_the_wall_clock_not_by_adding_its_attempts() -> None:
    rows = [
        row("s", 1, "retried", 100.0, 2.0),
        row("s", 2, "succeeded", 100.0, 5.0),  # a success spans its earlier attempts
        row("s", 1, "failed", 500.0, 1.0),  # a later session: the gap does not count
        row("s", 1, "failed", None, 0.5),  # an old row: its time is added
    ]
    assert wall_seconds(rows) == 6.5


def test_status_lists_branches_in_order_rounds_and_the_error_whole() -> None:
    error = SHELL.with_context(traceback="Trace")
    record = RunRecord(
        "r", "w", "f", "failed", ("v", "d", "e"), "{}", "t0", "t1", 9.0, error, "e", None, None, 0
    )
    no = PipelineError("review", "AgentRetryRequested", "short", {"round": 1})
    attempts = [
        row("v[10]", 1, "succeeded", 10.0, 1.0),
        row("v[2]", 1, "retried", 10.0, 1.0, no),
        row("v[2]", 2, "succeeded", 10.0, 2.0),
        row("v", 1, "succeeded", 10.0, 2.5),
        row("d", 1, "round_failed", 13.0, 0.0, no),
        row("d", 1, "succeeded", 12.0, 2.0),
        row("e", 0, "skipped:condition", 15.0, 0.0),
    ]
    assert status_text(record, attempts, verbose=True).splitlines()[2:] == [
        "  1. v: succeeded (1 attempt, 2.5s)",
        "       v[2]: succeeded (2 attempts, 2.0s)",
        "         attempt 1: AgentRetryRequested: short",
        "       v[10]: succeeded (1 attempt, 1.0s)",
        "  2. d: succeeded (1 attempt, 2 rounds, 2.0s)",
        "       attempt 1, round 1: AgentRetryRequested: short",
        "  3. e: skipped (condition)",
        "error at label: ShellFailed: `tools/label.sh {n} {label}` exited with 4",
        "  ran: tools/label.sh {n} {label}",
        "    with n=42 label='needs triage'",
        "  stdout:",
        "    labelling",
        "  stderr:",
        "    error: no tracker",
        "  traceback:",
        "    Trace",
    ]


def test_a_step_still_running_says_so() -> None:
    record = RunRecord(
        "r", "w", "f", "running", ("a",), "{}", "t0", None, None, None, None, None, None, 0
    )
    assert status_text(record, [row("a", 1, "retried", 1.0, 1.0)]).endswith(
        "  1. a: running (1 attempt, 1.0s)"
    )


def test_a_cancel_is_shown_asked_while_the_run_runs_and_done_once_it_ended() -> None:
    from adws.journal.records.runs import CancelRecord  # noqa: PLC0415 - only here
    from adws.render import runs_table  # noqa: PLC0415 - as above

    asked = CancelRecord("ana", "t1", "wrong input")
    running = RunRecord(
        "r", "w", "f", "running", ("a",), "{}", "t0", None, None, None, None, None, None, 0,
        cancel=asked,
    )  # fmt: skip
    error = PipelineError("a", "Cancelled", "cancelled by ana", {"cancelled_by": "ana"})
    ended = attrs.evolve(running, status="cancelled", error=error, cancel=CancelRecord("ana", "t1"))
    assert "cancel asked by ana at t1: wrong input" in status_text(running, [])
    assert "running (cancel asked)" in runs_table([running])
    shown = status_text(ended, [])
    assert "cancelled by ana at t1\n" in shown
    assert shown.splitlines()[0] == "run r · w · cancelled"


def test_one_attempt_is_shown_whole_with_each_call_and_what_it_cost() -> None:
    from adws.engine.usage import Usage  # noqa: PLC0415 - as above
    from adws.journal.records.exchanges import ExchangeRecord, Text  # noqa: PLC0415 - only here
    from adws.render import attempt_text  # noqa: PLC0415 - as above

    record = RunRecord(
        "r", "w", "f", "failed", ("a",), "{}", "t0", None, None, None, None, None, None, 0
    )
    cut = Text("d1", 5000, "é" * 10)
    call = ExchangeRecord(
        "a",
        1,
        "a",
        "t",
        1.0,
        0.5,
        cut,
        None,
        Text("d2", 4, "warn"),
        1,
        "s-1",
        "AgentFailed",
        "exited with 1",
        Usage(0.01, 10, 5),
    )
    rows = [
        AttemptRecord(
            "a", 0, 1, "failed", "t", 0.5, None, None, None, None, Usage(0.01), started=1.0
        )
    ]
    assert attempt_text(record, "a", rows, [call]).splitlines()[1:] == [
        "step a, attempt 1: failed in 0.5s · $0.0100",
        "",
        "agent call 1 of 1: asked by a · 0.5s · exit 1 · session s-1 · $0.0100, 15 tokens",
        "prompt (5,000 bytes):",
        "  éééééééééé",
        "  … cut: the journal keeps the first 20 bytes (the step's output cap)",
        "answer: none (the agent gave no answer)",
        "stderr (4 bytes):",
        "  warn",
        "this call ended: AgentFailed: exited with 1",
    ]


def test_mermaid_colours_each_branch_by_how_it_ended() -> None:
    from adws import fan_out, parallel  # noqa: PLC0415 - only here

    flow = Workflow(
        "w",
        (
            parallel("p", [Step("a", noop), Step("b", noop), Step("c", noop)]),
            fan_out("f", Step("each", noop), over="xs"),
            fan_out("g", Step("other", noop), over="xs"),
        ),
    )
    outcomes = {
        "p": "failed",
        "p[a]": "succeeded",
        "p[b]": "reused",
        "f": "succeeded",
        "f[0]": "succeeded",
        "f[1]": "failed",
    }
    assert to_mermaid(flow, outcomes).splitlines()[-8:] == [
        "    class p failed",
        "    class a succeeded",
        "    class b succeeded",
        "    class c not_run",
        "    class f succeeded",
        "    class each partial",
        "    class g not_run",
        "    class other not_run",
    ]


def test_a_success_is_timed_apart_from_the_attempts_before_it() -> None:
    from adws.render.status import own_seconds  # noqa: PLC0415 - only here

    first = row("s", 1, "retried", 100.0, 2.0)
    success = row("s", 2, "succeeded", 100.0, 5.0)
    earlier_session = row("s", 1, "retried", 50.0, 1.0)
    assert own_seconds(success, [earlier_session, first, success]) == 3.0
    assert own_seconds(success, [success]) == 5.0
    assert own_seconds(first, [first, success]) == 2.0


def test_a_parked_run_with_no_error_or_time_says_so_rather_than_guess() -> None:
    """A row forged to `parked`, with no error and no wake time, is shown as what is known."""
    from adws.journal import RunRecord  # noqa: PLC0415 - only this test builds one by hand
    from adws.render import status_text  # noqa: PLC0415 - as above

    record = RunRecord(
        "r1", "w", "fp", "parked", (), "", "t", None, None, None, None, None, None, 0
    )
    assert status_text(record, []).splitlines()[2:] == [
        "parked until an unknown time: its agent's limit",
        (
            "  adws resume r1 goes on then (--now: before); adws resume --due resumes every parked "
            "run whose time has come"
        ),
    ]
