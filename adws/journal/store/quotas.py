"""The agents' own quota in the journal: each account's windows, and calls parked on a full one.

What an agent CLI says about its account's quota (`adws.engine.caps.QuotaReport`:
a window, the share used, when it resets) is one row of `agent_quotas`
per account and window, replaced by each newer report, so every process
and host sharing the journal sees the latest. Before an agent call, the
account's windows are read: one whose used share is at or past the run's
`--park-at` (default 0.95) and whose reset is still to come parks the
call until that reset (`CapFull` with `wake_at`), so the runs of a team
stop one by one at the window's end instead of each failing on it.

Where the issue is silent: a window past `--park-at` with no reset named
does not park (nobody can say when to come back; the agent's own limit
reply will, see `adws.agents.quota`); a report of a window without a
share keeps the share reported before only while its reset has not come;
a window whose reset has passed counts no more.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Final, final

import attrs

from adws.engine.caps import CapFull, QuotaReport

if TYPE_CHECKING:
    from collections.abc import Callable

    from adws.journal.store.journal import Journal

__all__ = ["DEFAULT_PARK_AT", "QuotaWindow", "book", "forget_full", "parked", "record", "windows"]

DEFAULT_PARK_AT: Final = 0.95
"""The used share of a window past which new calls park until it resets (`--park-at`)."""

_UPSERT: Final = (
    "INSERT INTO agent_quotas (account, window_name, used, resets_at, updated)"
    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (account, window_name) DO UPDATE SET"
    " used = CASE WHEN excluded.used IS NULL AND agent_quotas.resets_at > ?"
    " THEN agent_quotas.used ELSE excluded.used END,"
    " resets_at = COALESCE(excluded.resets_at, agent_quotas.resets_at), updated = excluded.updated"
)
_READ: Final = (
    "SELECT account, window_name, used, resets_at, updated FROM agent_quotas"
    " WHERE (? IS NULL OR account = ?) ORDER BY account, window_name"
)


@final
@attrs.frozen
class QuotaWindow:
    """One window of an agent account's quota, as last reported."""

    account: str
    window: str
    used: float | None
    resets_at: float | None
    updated: str

    def to_dict(self) -> dict[str, object]:
        """Return the JSON-safe dict `adws caps --json` prints."""
        return attrs.asdict(self)


def record(journal: Journal, account: str, reports: tuple[QuotaReport, ...], now: float) -> None:
    """Keep what a call said of `account`'s windows (`now`: Unix seconds)."""
    if not reports:
        return
    stamp = dt.datetime.fromtimestamp(now, tz=dt.UTC).isoformat(timespec="seconds")
    with journal.transaction() as db:
        for report in reports:
            values = (account, report.window, report.used, report.resets_at, stamp, now)
            db.execute(_UPSERT, values)


def forget_full(journal: Journal, now: float) -> None:
    """Forget the windows still to reset: a person said to go on now (`adws resume --now`).

    A window that is still full says so again on the next call.
    """
    with journal.transaction() as db:
        db.execute("DELETE FROM agent_quotas WHERE resets_at > ?", (now,))


def windows(journal: Journal, account: str | None = None) -> list[QuotaWindow]:
    """Return the windows the journal knows (of `account`, or of every account).

    A journal from before them, opened read-only, knows none.
    """
    if not journal.has_table("agent_quotas"):
        return []
    rows = journal.query(_READ, (account, account))
    return [
        QuotaWindow(
            str(row[0]),
            str(row[1]),
            None if row[2] is None else float(row[2]),
            None if row[3] is None else float(row[3]),
            str(row[4]),
        )
        for row in rows
    ]


def parked(journal: Journal, account: str, park_at: float, now: float) -> CapFull | None:
    """Say why a call on `account` waits for a window to reset (None: none is past `park_at`).

    Of several full windows, the one that resets last decides.
    """
    full = [
        (window.resets_at, window.used, window.window)
        for window in windows(journal, account)
        if window.used is not None
        and window.used >= park_at
        and window.resets_at is not None
        and window.resets_at > now
    ]
    if not full:
        return None
    resets, used, name = max(full)
    reason = f"agent account {account}: window {name} {used:.0%} used (parks at {park_at:.0%})"
    return CapFull(reason, resets)


@final
class _Book:
    """A run's `QuotaBook`: the journal, the run's `--park-at` and its clock."""

    def __init__(self, journal: Journal, park_at: float, clock: Callable[[], float]) -> None:
        self.journal, self.park_at, self.clock = journal, park_at, clock

    def parked(self, account: str) -> CapFull | None:
        return parked(self.journal, account, self.park_at, self.clock())

    def record(self, account: str, reports: tuple[QuotaReport, ...]) -> None:
        record(self.journal, account, reports, self.clock())


def book(journal: Journal, park_at: float, clock: Callable[[], float]) -> _Book:
    """Return the `QuotaBook` `adws.runs` hands a run that has a journal."""
    return _Book(journal, park_at, clock)
