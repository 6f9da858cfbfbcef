"""End a run on a person's word: `adws cancel`, `adws batch --cancel`, `Runs.cancel`.

By the run's status:

- queued: it ends `cancelled` at once (compare-and-set: of a cancel and a
  worker taking it, exactly one acts);
- running: its holder (the `adws run` process, a worker's run, a batch's
  coordinator) is asked through the journal and stops it within a few
  seconds, as a Ctrl-C would, its cleanup steps seeing `Cancelled`; a run
  whose holder is gone from this host is ended at once, as one that ended;
- waiting or parked: claimed like a decision (so against an approval at
  the same moment exactly one acts), then continued only to fail its step
  `Cancelled` and run its cleanup steps, here (on another host: its own
  host does, through `adws worker`);
- failed, blocked or interrupted: it ends `cancelled`, never to be resumed;
- succeeded or cancelled: nothing to cancel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from adws import io_ops
from adws.journal.records.runs import CancelRecord
from adws.journal.store import cancels
from adws.runs._continue import Resuming, cancelled_error, continue_run
from adws.runs._values import CancelOutcome, HandedOver, Refused

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from adws.journal import RunRecord
    from adws.journal.store.schema import Guarded
    from adws.runs._execute import Setting
    from adws.runs._values import Observers

__all__ = ["cancel_run"]

_ENDED: Final = frozenset({"failed", "blocked", "interrupted"})


def cancel_run(
    setting: Setting, record: RunRecord, by: str, reason: str, observers: Observers = ()
) -> CancelOutcome | Refused:
    """Cancel `record`'s run as its status allows (see the module's docstring)."""
    run_id, status = record.run_id, record.status
    cancel = CancelRecord(by, io_ops.utc_now(), reason)
    if status == "succeeded":
        return Refused(f"run {run_id} already succeeded; there is nothing to cancel")
    if status == "cancelled":
        return Refused(f"run {run_id} was cancelled already; there is nothing to cancel", 0)
    if status == "queued":  # a live batch's too: its coordinator then leaves it alone
        error = cancelled_error("", cancel)
        ends = [cancels.end_queued(run_id, cancel, error)]
        return _claimed(setting, record, lambda _now: ends, queued=True)
    if status == "running" and not record.stale:
        return _requested(setting, record, cancel)
    if status in _ENDED or status == "running":  # ended, or its holder is gone from this host
        error = cancelled_error(record.failed_step or "", cancel)
        if record.error is not None:
            error = error.with_context(earlier=record.error)
        return _claimed(setting, record, lambda _now: [(cancels.end(run_id, cancel, error), None)])
    return _cleaned_up(setting, record, cancel, observers)


def _claimed(
    setting: Setting,
    record: RunRecord,
    ends: Callable[[str], Sequence[Guarded]],
    *,
    queued: bool = False,
) -> CancelOutcome | Refused:
    """End a run nobody holds in a claim: compare-and-set, so of two deciders one acts.

    A queued run is ended even while the batch it belongs to runs (`force`):
    nothing holds it yet, and the batch's coordinator takes no cancelled run.
    """
    journal = setting.journal
    assert journal is not None  # noqa: S101 - a recorded run is read from its journal
    refused = journal.claim(record.run_id, seen=record.seen, then=ends, take=False, force=queued)
    return Refused(refused) if refused is not None else CancelOutcome(record.run_id, "cancelled")


def _requested(
    setting: Setting, record: RunRecord, cancel: CancelRecord
) -> CancelOutcome | Refused:
    """Ask a running run's holder to stop it; refused when it stopped meanwhile.

    A run already asked to stop is asked once: the first request stands.
    """
    journal = setting.journal
    assert journal is not None  # noqa: S101 - as above
    run_id = record.run_id
    if record.cancel is None and not cancels.request(journal, run_id, cancel):
        changed = journal.changed(run_id, record.seen)
        return Refused(
            changed or f"run {run_id} stopped meanwhile; look again: adws status {run_id}"
        )
    return CancelOutcome(run_id, "requested", holder=_holder(record))


def _cleaned_up(
    setting: Setting, record: RunRecord, cancel: CancelRecord, observers: Observers
) -> CancelOutcome | Refused:
    """Claim a waiting or parked run and run its cleanup steps (its own host does, if elsewhere)."""
    outcome = continue_run(setting, record, Resuming(), cancel=cancel, observers=observers)
    if isinstance(outcome, Refused):
        return outcome
    if isinstance(outcome, HandedOver):
        return CancelOutcome(record.run_id, "requested", holder=f"adws worker on {outcome.host}")
    return CancelOutcome(record.run_id, "cancelled", outcome)


def _holder(record: RunRecord) -> str:
    """Name the process that holds a running run: `process 123 on box`."""
    return f"process {record.pid} on {record.host}"
