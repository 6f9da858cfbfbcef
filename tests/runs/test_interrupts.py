"""A cancel stops a run as a first Ctrl-C does, failing its step `Cancelled` (`Interrupts.cancel`)."""

from __future__ import annotations

import signal
import threading
import time

import pytest
from returns.io import IOSuccess

from adws import Step, Workflow, WorkflowContext, run_workflow
from adws.engine.errors import Cancellation, ErrorType
from adws.engine.events import StepStarted
from adws.runs.interrupts import CANCEL_SIGNAL, Interrupts
from adws.runs.summary import RunSummary

CANCEL = Cancellation("ana", "2026-01-02T03:04:05+00:00", "wrong input")


def started(name: str, *, always_run: bool = False) -> StepStarted:
    return StepStarted("r1", name, 0, 2, 1, always_run)


def test_a_cancel_while_no_step_runs_stops_the_next_step_that_is_not_cleanup() -> None:
    interrupts = Interrupts()
    interrupts.cancelled = CANCEL
    interrupts.on_cancel(CANCEL_SIGNAL, None)  # as the handler hears it between steps

    interrupts.observe(started("cleanup", always_run=True))  # cleanup is never stopped
    with pytest.raises(Cancellation) as raised:
        interrupts.observe(started("work"))
    assert raised.value is CANCEL
    interrupts.observe(started("later"))  # delivered once


def test_a_cancel_after_a_signal_is_left_to_the_signal() -> None:
    interrupts = Interrupts()
    interrupts.first = signal.SIGINT
    interrupts.cancelled = CANCEL
    interrupts.observe(started("work"))
    interrupts.on_cancel(CANCEL_SIGNAL, None)  # the run is stopping already: nothing more
    assert interrupts.running is not None


def test_a_cancel_from_another_thread_stops_the_step_in_the_main_thread() -> None:
    interrupts = Interrupts()
    waited: list[float] = []

    def wait(_ctx: WorkflowContext) -> IOSuccess[WorkflowContext]:
        began = time.monotonic()
        threading.Timer(0.1, interrupts.cancel, (CANCEL,)).start()
        while time.monotonic() - began < 10:
            time.sleep(0.01)
        waited.append(time.monotonic() - began)
        return IOSuccess(_ctx)

    def cleanup(ctx: WorkflowContext) -> IOSuccess[WorkflowContext]:
        failure = ctx.failure
        assert failure is not None
        seen.append((failure.error_type, failure.message, dict(failure.context)))
        return IOSuccess(ctx)

    seen: list[tuple[str, str, dict[str, object]]] = []
    workflow = Workflow("w", (Step("wait", wait), Step("cleanup", cleanup, always_run=True)))
    summary = RunSummary()
    with interrupts.installed():
        run_workflow(workflow, observers=[interrupts.observe, summary])
    assert waited == []  # stopped, not finished
    assert summary.status == "cancelled"
    assert seen == [
        (
            ErrorType.CANCELLED,
            "cancelled by ana: wrong input",
            {
                "cancelled_by": "ana",
                "cancelled_at": "2026-01-02T03:04:05+00:00",
                "reason": "wrong input",
            },
        )
    ]
    assert signal.getsignal(CANCEL_SIGNAL) is signal.SIG_DFL  # the handler is put back


def test_only_the_first_cancel_counts_and_the_next_run_forgets_it() -> None:
    interrupts = Interrupts()
    with interrupts.installed():
        interrupts.cancel(CANCEL)  # no step runs: the handler holds it for the next one
        interrupts.cancel(Cancellation("bo", "t", "later"))
        time.sleep(0.05)  # the signal is handled between two bytecodes of this thread
    assert interrupts.cancelled is CANCEL
    interrupts.next_run()
    assert [interrupts.cancelled] == [None]
    interrupts.observe(started("work"))  # nothing pending any more
