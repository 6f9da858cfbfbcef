"""Caps that hold across runs, as the engine sees them: a gate each agent call passes.

The engine knows nothing of where caps live (the journal, see
`adws.journal.store.caps`): `adws.runs` hands a run that has a journal a
`CapGate` in its scope. Before an agent call starts, the agent step asks
the gate with the call's estimate; the gate checks every cap that applies
and reserves the estimate against each in one transaction, returning the
function that settles the reservation to the call's real spend when the
call ends (None: it spent nothing, the reservation is released), or a
`CapFull` saying why the call may not start: a cap whose window has no
room parks the run until it frees (`wake_at`), an unreadable cap refuses
the call outright (`wake_at` None: nobody can tell what it allows).

The agent's own quota counts too: `QuotaReport` is what a CLI said about
one window of its account (how much of it is used, when it resets), and
`QuotaBook` is where a run keeps them (the journal, see
`adws.journal.store.quotas`): the agent step records each call's reports
under its account and, before the next call, asks whether a window past
the run's `--park-at` parks it until that window resets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeAlias, final

import attrs

from adws.engine.usage import Usage

__all__ = ["CapFull", "CapGate", "CapSettle", "QuotaBook", "QuotaReport"]

CapSettle: TypeAlias = Callable[[Usage | None], None]
"""Settle a call's cap reservation to what it really spent (None: nothing; released)."""


@final
@attrs.frozen
class CapFull:
    """Why a call may not start under a cap: the reason, and when its window frees (Unix s)."""

    reason: str
    wake_at: float | None = None


CapGate: TypeAlias = Callable[[str, Usage | None], CapSettle | CapFull]
"""Check and reserve a call of an agent step (its name, its estimate) against every cap."""


@final
@attrs.frozen
class QuotaReport:
    """What an agent CLI said about one window of its account's quota.

    `window` is the CLI's name of it (claude's `five_hour`, codex's
    `300m`, `usage limit` for a usage-limit reply); `used` the share used,
    0 to 1 (None: not said); `resets_at` when the window resets (Unix s;
    None: not said).
    """

    window: str
    used: float | None
    resets_at: float | None


class QuotaBook(Protocol):
    """Where a run keeps what agents said of their accounts' quotas, and asks before a call."""

    def parked(self, account: str) -> CapFull | None:
        """Say why a call on `account` must wait for a window to reset (None: it may start)."""

    def record(self, account: str, reports: tuple[QuotaReport, ...]) -> None:
        """Keep what a call on `account` said of its windows (each replaces the one before)."""
