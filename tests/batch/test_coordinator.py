"""The coordinator's rarer paths, with a scripted pool (the I/O boundary) and a real journal."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest
from returns.io import IOSuccess

from adws import Step, Workflow
from adws.batch.coordinator import run_batch
from adws.batch.ledger import Ledger
from adws.batch.tasks import Batch, Cancel, Message, Task
from adws.engine.events import StepSucceeded
from adws.journal import Journal
from adws.journal.identity.fingerprint import step_fingerprints
from adws.journal.records.options import RunOptions
from adws.journal.records.runs import CancelRecord
from adws.journal.store.cancels import request
from adws.journal.store.statements import starting_statement, statements_for
from adws.runs.batches import queue_runs


def _ok(ctx: Any) -> Any:
    return IOSuccess(ctx)


FLOW = Workflow("flow", (Step("one", _ok), Step("two", _ok)), inputs=("n",))


class ScriptedPool:
    """A pool whose workers say what the test scripts, one message per receive."""

    def __init__(self, script: list[Message]) -> None:
        self.script = script
        self.sent: list[Task] = []
        self.signals: list[int] = []
        self.cancels: list[tuple[int, Cancel]] = []
        self.answers: list[tuple[int, str, str | None]] = []
        self.slots = 0

    def start(self) -> int:
        self.slots += 1
        return self.slots

    def send(self, slot: int, task: Task) -> None:
        self.sent.append(task)
        self.slot = slot

    def receive(self, timeout: float) -> list[tuple[int, Message]]:  # noqa: ARG002 - Pool's signature
        return [(self.slot, self.script.pop(0))] if self.script else []

    def forget(self, slot: int) -> None:
        pass

    def signal_all(self, signum: int) -> None:
        self.signals.append(signum)

    def over_budget(self, batch_id: str) -> None:
        pass

    def cancel(self, slot: int, cancel: Cancel) -> None:
        self.cancels.append((slot, cancel))

    def recorded(self, slot: int, run_id: str, why: str | None) -> None:
        self.answers.append((slot, run_id, why))

    def close(self, grace: float = 5.0) -> None:
        pass


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "runs.db")


def _batch(journal: Journal) -> tuple[Batch, str, list[Any]]:
    batch_id, runs = queue_runs(journal, FLOW, [(1, {"n": 1})], source="x", options=RunOptions())
    return Batch(batch_id, "flow", "workflows", (0, "here")), runs[0].run_id, runs


def _finished(journal: Journal, run_id: str, step: str, fingerprint: str) -> None:
    event = StepSucceeded(run_id, step, 0, 2, 1, 0.1, None, {}, None)  # type: ignore[arg-type] # the context is not read
    journal.apply(statements_for(event, "", {step: fingerprint}))


def test_a_lost_run_whose_steps_all_finished_is_marked_succeeded(journal: Journal) -> None:
    batch, run_id, runs = _batch(journal)
    steps = step_fingerprints(FLOW)
    for step in ("one", "two"):
        _finished(journal, run_id, step, steps[step])
    pool = ScriptedPool([("lost", "killed by SIGKILL")])
    report, _ = run_batch(journal, FLOW, batch, runs, concurrency=1, pool=pool)
    assert [run.status for run in report.runs] == ["succeeded"]
    assert len(pool.sent) == 1


def test_a_lost_run_whose_finished_step_changed_ends_worker_lost(journal: Journal) -> None:
    batch, run_id, runs = _batch(journal)
    _finished(journal, run_id, "one", "f" * 20)  # not what `one` hashes to now
    pool = ScriptedPool([("lost", "killed by SIGKILL")])
    report, _ = run_batch(journal, FLOW, batch, runs, concurrency=1, pool=pool)
    (run,) = report.runs
    assert run.status == "failed"
    assert run.error is not None
    assert run.error.error_type == "WorkerLost"
    assert run.error.message.startswith(
        f"its worker died (killed by SIGKILL); step 'one' of run {run_id} changed since it finished"
    )


def test_a_run_whose_cleanup_kills_its_worker_a_third_time_ends_worker_lost(
    journal: Journal,
) -> None:
    batch, _, runs = _batch(journal)
    pool = ScriptedPool([("lost", "exit status 3")] * 3)
    report, _ = run_batch(journal, FLOW, batch, runs, concurrency=1, pool=pool)
    (run,) = report.runs
    assert run.error is not None
    assert run.error.message == (
        "the worker running step 'one' died a third time (exit status 3), in cleanup"
    )
    assert [task.lost_json is not None for task in pool.sent] == [False, False, True]


def test_a_lost_run_pruned_from_under_the_batch_ends_its_way(journal: Journal) -> None:
    batch, run_id, runs = _batch(journal)

    class Pruning(ScriptedPool):
        def receive(self, timeout: float) -> list[tuple[int, Message]]:
            journal.write("DELETE FROM runs WHERE run_id = ?", (run_id,))
            return super().receive(timeout)

    pool = Pruning([("lost", "killed by SIGKILL")])
    report, _ = run_batch(journal, FLOW, batch, runs, concurrency=1, pool=pool)
    assert report.runs == ()
    assert report.status == "succeeded"  # nothing of it is left to report


def test_a_journal_failure_after_a_signal_halts_nothing_twice(journal: Journal) -> None:
    pool = ScriptedPool([])
    halted: list[int] = []
    ledger = Ledger(journal, lambda: halted.append(1))
    assert not ledger.apply([("UPDATE runs SET pid = ?", (2**63,))], "a huge number")
    assert ledger.failures == [
        "a huge number: OverflowError: Python int too large to convert to SQLite INTEGER"
    ]
    assert halted == [1]
    assert not ledger.apply([("UPDATE runs SET pid = 1", ())], "later")
    assert ledger.take("r1") == "run r1 was not started: the journal cannot record it"
    assert ledger.describe() == (
        "a huge number: OverflowError: Python int too large to convert to SQLite INTEGER",
        "1 later write not tried",
    )
    assert pool.signals == []


def test_a_ledger_names_a_claim_and_an_end_it_could_not_write(journal: Journal) -> None:
    ledger = Ledger(journal)
    journal.close()
    assert ledger.take("r1") == "run r1 was not started: the journal cannot record it"
    assert ledger.failures[0].startswith("the start of run r1: ProgrammingError: ")
    fresh = Ledger(journal)
    fresh.close("b1", "failed", {})
    assert fresh.failures[0].startswith("the end of batch b1: ProgrammingError: ")


def test_a_ledger_records_each_runs_end_after_a_failure_when_it_can(journal: Journal) -> None:
    batch, run_id, _ = _batch(journal)
    ledger = Ledger(journal)
    ledger.apply([("UPDATE runs SET pid = ?", (2**63,))], "a huge number")
    ledger.close(batch.batch_id, "failed", {run_id: "interrupted"})
    assert ledger.describe()[-1] == "(each run's end and the batch's were recorded after all)"
    assert journal.runs()[0].status == "interrupted"
    ledger.journal.close()
    ledger.close(batch.batch_id, "failed", {run_id: "failed"})  # the last try fails quietly
    assert len(ledger.describe()) == 2


def test_the_coordinator_halts_once_whatever_stopped_it_first(journal: Journal) -> None:
    from adws.batch.pool import Stop  # noqa: PLC0415 - the handler on its own

    pool = ScriptedPool([])
    stop = Stop(pool)
    stop(signal.SIGINT, None)
    stop.halt()
    assert (stop.signals, pool.signals) == (1, [signal.SIGINT])


def test_a_cancel_asked_for_a_run_in_flight_is_passed_to_its_worker_once(
    journal: Journal,
) -> None:
    batch, run_id, runs = _batch(journal)

    class Asking(ScriptedPool):
        """A worker quiet for three seconds: the coordinator looks for cancels each second."""

        def __init__(self) -> None:
            super().__init__([])
            self.ticks = 0

        def receive(self, timeout: float) -> list[tuple[int, Message]]:  # noqa: ARG002 - Pool's signature
            self.ticks += 1
            if self.ticks == 2:
                request(journal, run_id, CancelRecord("ana", "t", "enough"))
            if self.ticks < 30:
                time.sleep(0.1)
                return []
            return [(self.slot, ("finished", run_id, "cancelled", None, [], ()))]

    pool = Asking()
    run_batch(journal, FLOW, batch, runs, concurrency=1, pool=pool)
    assert pool.cancels == [(pool.slot, (run_id, "ana", "t", "enough"))]


def test_a_ledger_reads_no_cancel_from_a_journal_it_cannot_read(journal: Journal) -> None:
    ledger = Ledger(journal)
    journal.close()
    assert ledger.cancels(["r1"]) == {}
    ledger.failures.append("a write that failed")
    assert ledger.cancels(["r1"]) == {}


def test_a_step_start_is_answered_once_recorded_and_refused_once_the_journal_failed(
    journal: Journal,
) -> None:
    batch, run_id, runs = _batch(journal)
    starts: Message = ("journal", run_id, [starting_statement(run_id)], 0.0, True)
    huge: Message = ("journal", run_id, [("UPDATE runs SET pid = ?", (2**63,))], 0.0)
    end: Message = ("finished", run_id, "interrupted", None, [], ())
    pool = ScriptedPool([starts, huge, starts, end])
    report, _ = run_batch(journal, FLOW, batch, runs, concurrency=1, pool=pool, journal_wait=0.0)
    assert pool.answers == [
        (1, run_id, None),
        (
            1,
            run_id,
            (
                f"interrupted: the journal {journal.path} did not record run {run_id} for 0s "
                f"(the step statements of run {run_id}: OverflowError: Python int too large to "
                "convert to SQLite INTEGER); no further step starts unrecorded"
            ),
        ),
    ]
    assert pool.signals == [signal.SIGTERM]  # the batch halts: its runs stop after cleanup
    assert report.unrecorded[0].startswith(f"the step statements of run {run_id}: Overflow")


def test_a_ledger_tries_a_write_again_for_its_wait_then_names_it(journal: Journal) -> None:
    halted: list[int] = []
    ledger = Ledger(journal, lambda: halted.append(1), wait=0.3)
    assert ledger.stopping("r1").endswith(
        "(a write before it failed); no further step starts unrecorded"
    )
    started = time.monotonic()
    assert not ledger.apply([("UPDATE no_such_table SET x = 1", ())], "a write", starts=True)
    assert time.monotonic() - started >= 0.3  # tried again, on new connections, for its wait
    assert ledger.failures == ["a write: OperationalError: no such table: no_such_table"]
    assert halted == [1]


def test_a_step_start_the_coordinator_could_not_record_stops_the_run_there() -> None:
    from adws.batch.tasks import _Forwarder  # noqa: PLC0415 - the worker's side, tested alone
    from adws.engine.events import StepStarted  # noqa: PLC0415 - as above
    from adws.journal.store.observer import JournalLost  # noqa: PLC0415 - as above

    sent: list[Message] = []
    task = Task("r1", Batch("b1", "w", "flows", (1, "h")), "{}")
    forward = _Forwarder(task, sent.append, (None, {}, "whole", None), lambda: "the disk is full")
    with pytest.raises(JournalLost, match="the disk is full"):
        forward(StepStarted("r1", "one", 1, 2, 1, False))
    assert [(message[0], message[1], message[-1]) for message in sent] == [("journal", "r1", True)]
