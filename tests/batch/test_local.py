"""The local pool's worker hears its coordinator: the budget spent, a cancel for its run."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from adws import io_ops
from adws.batch.local import LocalPool, heard
from adws.batch.tasks import OVER_BUDGET
from adws.runs.interrupts import CANCEL_SIGNAL, Interrupts

if TYPE_CHECKING:
    import pytest


def test_a_cancel_counts_only_for_the_run_the_worker_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(io_ops.RUN_MARK, "r2")
    interrupts = Interrupts()
    heard(("cancel", "r1", "ana", "t", "late"), interrupts)  # its run ended: not this one's
    assert [interrupts.cancelled] == [None]
    with interrupts.installed():
        heard(("cancel", "r2", "ana", "t", "now"), interrupts)
    found = interrupts.cancelled
    assert found is not None
    assert (found.by, found.reason) == ("ana", "now")
    assert signal.getsignal(CANCEL_SIGNAL) is signal.SIG_DFL


def test_the_budget_word_closes_the_batch_to_agent_calls() -> None:
    heard(("over budget", "b-local"), Interrupts())
    assert "b-local" in OVER_BUDGET
    OVER_BUDGET.discard("b-local")


def test_a_cancel_for_a_worker_that_is_gone_is_dropped() -> None:
    LocalPool().cancel(object(), ("r1", "ana", "t", ""))  # type: ignore[arg-type] # no such worker


def test_a_step_start_for_a_worker_that_is_gone_is_dropped() -> None:
    LocalPool().recorded(object(), "r1", None)  # type: ignore[arg-type] # no such worker
