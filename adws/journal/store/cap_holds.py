"""Agent calls checked and reserved against the caps that hold across runs, in one transaction.

Before an agent call of a run that has a journal starts, `gate`'s check
reads every cap that applies to it (its run's workflow, its run's agent
preset, or all), and in ONE write transaction (`BEGIN IMMEDIATE` on
SQLite; on PostgreSQL the caps' rows locked `FOR UPDATE`) sums each cap's
window: what the journal's attempts recorded (`adws.journal.store.caps`)
plus what calls in flight hold (`cap_holds`), and reserves the call's
estimate against each cap if spent + held + estimate fits, so two
processes, on one host or two, cannot pass a cap together.

A call that ends settles its holds to what it really spent; a call that
spent nothing releases them. A settled hold counts as spent until its
run's next top-level attempt is recorded (that attempt holds the spend),
so nothing reads low between a call's end and its step's record. Holds
of a run that no longer runs (it ended, parked, or its process died and
it was marked so) count no more.

Where the issue is silent: a call with no estimate yet reserves nothing
and starts only while the cap is not full (as the run's budget does, see
`adws.engine.reservations`); a cap whose window is full parks the run
until the window ends (`Parked`, `wake_at`); one that would fit once the
calls in flight settle waits for them in its process (up to the run's
`--max-wait`); an unreadable cap refuses the call (fail closed).
"""

from __future__ import annotations

import datetime as dt
import time
import zoneinfo
from typing import TYPE_CHECKING, Any, Final, final

import attrs

from adws import io_ops
from adws._exceptions import MalformedError
from adws.engine.caps import CapFull, CapGate, CapSettle
from adws.journal.records.caps import Cap
from adws.journal.store.caps import CapState, states

if TYPE_CHECKING:
    from collections.abc import Callable

    from adws.engine.usage import Usage
    from adws.journal.store.journal import Journal

__all__ = ["Busy", "gate", "reserve", "settle"]

_HOLD: Final = (
    "INSERT INTO cap_holds (cap, run_id, amount, blind, created) VALUES (?, ?, ?, ?, ?)"
    " RETURNING id"
)
_IN_FLIGHT: Final = (
    "SELECT h.cap, SUM(CASE WHEN h.settled IS NULL THEN 0 ELSE h.amount END),"
    " SUM(CASE WHEN h.settled IS NULL THEN h.amount ELSE 0 END),"
    " SUM(CASE WHEN h.settled IS NULL THEN h.blind ELSE 0 END),"
    " SUM(CASE WHEN h.settled IS NULL THEN 1 ELSE 0 END)"
    " FROM cap_holds AS h JOIN runs USING (run_id)"
    " WHERE runs.status = 'running' AND NOT EXISTS (SELECT 1 FROM attempts AS a"
    " WHERE h.settled IS NOT NULL AND a.run_id = h.run_id AND a.step NOT LIKE '%[%'"
    " AND a.id > h.settled) GROUP BY h.cap"
)
"""What calls in flight hold of each cap: settled, in flight, blind (no estimate), how many."""
_NONE_HELD: Final = (0.0, 0.0, 0, 0)
_TICK: Final = 0.05
"""How often a call that waits for calls in flight looks again (seconds)."""
_SETTLING: Final = (
    "SELECT h.cap, h.run_id, caps.spec FROM cap_holds AS h LEFT JOIN caps ON caps.name = h.cap"
    " WHERE h.id = ?"
)
_LAST_ATTEMPT: Final = "SELECT COALESCE(MAX(id), 0) FROM attempts WHERE run_id = ?"


def _applies(cap: Cap, workflow: str, agent: str | None) -> bool:
    return (
        cap.currency != "runs" and cap.workflow in {None, workflow} and cap.agent in {None, agent}
    )


def _amount(cap: Cap, usage: Usage | None) -> float | None:
    """Return what `usage` is in the cap's currency (None: it says nothing about it)."""
    if usage is None:
        return None
    found = usage.cost_usd if cap.currency == "usd" else usage.tokens
    return None if found is None else float(found)


def _said(cap: Cap, amount: float) -> str:
    return f"${amount:,.2f}" if cap.currency == "usd" else f"{amount:,.0f} {cap.currency}"


def _full(state: CapState, cap: Cap, taken: float, now: dt.datetime) -> CapFull:
    """Say why a call does not fit `cap`, parking it until the window ends."""
    resets = state.resets or now
    local = resets.astimezone(zoneinfo.ZoneInfo(cap.tz))
    clock = "%H:%M" if local.second == 0 else "%H:%M:%S"
    when = local.strftime(clock if resets - now < dt.timedelta(days=1) else f"%Y-%m-%d {clock}")
    reason = (
        f"parked until {when} {cap.tz}: cap {cap.name}, {_said(cap, taken)} of"
        f" {_said(cap, cap.amount)}"
    )
    return CapFull(reason, resets.timestamp())


@final
@attrs.frozen
class Busy:
    """A call that fits once calls in flight settle: it waits; else `full` parks it."""

    full: CapFull


def _room(
    row: tuple[Any, ...], state: CapState, cap: Cap, needs: float | None, now: dt.datetime
) -> CapFull | Busy | None:
    """Tell whether a call needing `needs` fits `cap` now (None), once calls settle, or not.

    `row` is what calls in flight hold of the cap (`_IN_FLIGHT`'s sums).
    """
    settled, flying, blind = float(row[0] or 0.0), float(row[1] or 0.0), int(row[2] or 0)
    count = int(row[3] or 0)
    taken = round(state.spent + settled + flying, 9)
    full = _full(state, cap, taken, now)
    spent = round(state.spent + settled, 9)
    if needs is None:  # no estimate: it starts alone, while the cap is not full
        if spent >= cap.amount:
            return full
        return Busy(full) if count else None
    if spent >= cap.amount or round(spent + needs, 9) > cap.amount:
        return full
    if blind or round(taken + needs, 9) > cap.amount:
        return Busy(full)
    return None


def reserve(  # noqa: PLR0913 - the call and where it runs, keyword-only
    journal: Journal,
    *,
    run_id: str,
    workflow: str,
    agent: str | None,
    estimate: Usage | None,
    now: dt.datetime,
) -> list[int] | CapFull | Busy:
    """Check and reserve a call against every cap that applies: the holds it took, or why not.

    `Busy`: it would fit once calls in flight settle (a call with no
    estimate waits for every call in flight, and they for it).
    """
    with journal.transaction() as db:
        db.execute(f"SELECT name FROM caps ORDER BY name{db.locks_rows}")  # noqa: S608 - a fixed clause
        # Holds first, then attempts. On PostgreSQL (read committed) each
        # statement sees the journal as of its own start, and a run's attempt
        # row ends its settled hold: read the other way round, an attempt
        # recorded between the two reads would be counted by neither.
        # This way round it is counted twice at worst, never passed.
        flying = {str(row[0]): tuple(row[1:]) for row in journal.query(_IN_FLIGHT)}
        taking: list[tuple[str, float | None]] = []
        for state in states(journal, now):
            cap = state.cap
            if cap is None:
                return CapFull(f"{state.error}; fix it or remove it (adws caps rm {state.name})")
            if not _applies(cap, workflow, agent):
                continue
            needs = _amount(cap, estimate)
            refused = _room(flying.get(cap.name, _NONE_HELD), state, cap, needs, now)
            if refused is not None:
                return refused
            taking.append((cap.name, needs))
        created = now.isoformat(timespec="seconds")
        return [
            int(
                db.execute(
                    _HOLD, (name, run_id, needs or 0.0, int(needs is None), created)
                ).fetchone()[0]
            )
            for name, needs in taking
        ]


def settle(journal: Journal, holds: list[int], usage: Usage | None) -> None:
    """Settle a call's holds to what it spent (counted until its attempt is recorded).

    A call that spent nothing in a cap's currency, or whose cap was removed
    meanwhile, releases its hold.
    """
    if not holds:
        return
    with journal.transaction() as db:
        for hold in holds:
            name, run_id, spec = db.execute(_SETTLING, (hold,)).fetchone()
            try:
                spent = _amount(Cap.from_json(name, spec), usage)
            except MalformedError:
                spent = None
            if not spent:
                db.execute("DELETE FROM cap_holds WHERE id = ?", (hold,))
                continue
            last = db.execute(_LAST_ATTEMPT, (run_id,)).fetchone()[0]
            db.execute(
                "UPDATE cap_holds SET amount = ?, settled = ? WHERE id = ?", (spent, last, hold)
            )


def gate(  # noqa: PLR0913 - the run, and how it tells the time and waits
    journal: Journal,
    run_id: str,
    workflow: str,
    agent: str | None,
    *,
    patience: float,
    clock: Callable[[], dt.datetime] | None = None,
) -> CapGate:
    """Return the check `adws.runs` hands a run: each agent call reserved against the caps.

    A call that fits once calls in flight settle waits for them (looking
    again every 50 ms) up to `patience` seconds (the run's `--max-wait`),
    then parks as a full cap does.
    """
    now = clock or (lambda: dt.datetime.now(tz=dt.UTC))

    def check(_step: str, estimate: Usage | None) -> CapSettle | CapFull:
        deadline = time.monotonic() + patience
        while True:
            found = reserve(
                journal, run_id=run_id, workflow=workflow, agent=agent, estimate=estimate, now=now()
            )
            if not isinstance(found, Busy):
                break
            if time.monotonic() >= deadline:
                return found.full
            io_ops.sleep(_TICK)
        if isinstance(found, CapFull):
            return found

        def done(usage: Usage | None) -> None:
            settle(journal, found, usage)

        return done

    return check
