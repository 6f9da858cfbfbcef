"""A ticket's rounds in the journal: one run per ticket and event, claimed in one transaction.

`claim` records a round and queues its run together, or neither: a row
for the same ticket and event already there (a second poll, a redelivered
webhook, a restarted watcher, a second watcher on another host) starts
nothing, on both backends, since `(ticket, event)` is unique and the
check and the insert share the transaction that holds the write lock.
A ticket with a run not over, or past its rounds a day, is refused;
past its source's runs an hour, deferred. `refuse` records a refusal
once (so it is answered at most once). Rows are never pruned: they are
what keeps a ticket from starting again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

from adws import io_ops
from adws.journal.records.tickets import ACTIVE, TicketRound

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.journal.records.tickets import TicketClaim
    from adws.journal.store.backend import Connection
    from adws.journal.store.journal import Journal
    from adws.journal.store.schema import Statement

__all__ = ["claim", "refuse", "rounds", "set_comment", "shown", "ticket_of", "unshown"]

DAY: Final = 86_400.0
HOUR: Final = 3_600.0
_ACTIVE_SQL: Final = ", ".join(f"'{status}'" for status in ACTIVE)
_INSERT: Final = (
    "INSERT INTO tickets (ticket, event, round, state, author, source, recorded, at,"
    " run_id, parent, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (ticket, event) DO NOTHING"
)


def _why_not(db: Connection, ask: TicketClaim) -> tuple[str, str] | None:
    """Say why `ask` may not start now (`refused` or `deferred`, and why), or None."""
    active = db.execute(
        "SELECT t.run_id, r.status FROM tickets AS t JOIN runs AS r ON r.run_id = t.run_id"  # noqa: S608 - fixed words
        f" WHERE t.ticket = ? AND r.status IN ({_ACTIVE_SQL}) ORDER BY t.id LIMIT 1",
        (ask.ticket,),
    ).fetchone()
    if active is not None:
        return "refused", f"run {active[0]} of this ticket is {active[1]}; one at a time"
    today = db.execute(
        "SELECT COUNT(*) FROM tickets WHERE ticket = ? AND state = 'started' AND at > ?",
        (ask.ticket, ask.at - DAY),
    ).fetchone()[0]
    if int(today) >= ask.limits.rounds_per_day:
        return (
            "refused",
            f"{today} rounds of this ticket today (at most {ask.limits.rounds_per_day})",
        )
    hour = db.execute(
        "SELECT COUNT(*) FROM tickets WHERE source = ? AND state = 'started' AND at > ?",
        (ask.source, ask.at - HOUR),
    ).fetchone()[0]
    if int(hour) >= ask.limits.runs_per_hour:
        return (
            "deferred",
            f"{hour} runs from {ask.source} this hour (at most {ask.limits.runs_per_hour})",
        )
    return None


def claim(
    journal: Journal, ask: TicketClaim, run_id: str, queued: Sequence[Statement]
) -> TicketRound:
    """Record a round of `ask.ticket` for `run_id` and run `queued` (its run's rows), or neither.

    Returns the ticket's row for the event: `started` with `run_id` when
    this call started it; else what was there (its own run, or why it was
    refused), or the new refusal or deferral; `new` says which. The
    ticket's rows are locked first (on a server; SQLite's write lock holds
    the whole file), and the row is inserted only if none is there
    (`ON CONFLICT DO NOTHING`): of two hosts asking at once, one writes.
    """
    with journal.transaction() as db:
        db.execute(f"SELECT id FROM tickets WHERE ticket = ?{db.locks_rows}", (ask.ticket,))  # noqa: S608 - fixed words
        row = _row(db, ask.ticket, ask.event)
        if row is not None and row.state != "deferred":
            return row
        why = _why_not(db, ask)
        if why is not None:
            if row is not None:  # deferred before, and still: nothing new to say
                return row
            state, reason = why
            wrote = db.execute(_INSERT, _values(ask, 0, state, None, None, reason)).rowcount
            return attrs.evolve(_written(db, ask.ticket, ask.event), new=bool(wrote))
        last = db.execute(
            "SELECT MAX(round), (SELECT run_id FROM tickets WHERE ticket = ? AND state = 'started'"
            " ORDER BY round DESC LIMIT 1) FROM tickets WHERE ticket = ? AND state = 'started'",
            (ask.ticket, ask.ticket),
        ).fetchone()
        number = int(last[0] or 0) + 1
        if row is not None:
            wrote = db.execute(
                "UPDATE tickets SET state = 'started', round = ?, run_id = ?, parent = ?,"
                " reason = NULL, at = ? WHERE ticket = ? AND event = ? AND state = 'deferred'",
                (number, run_id, last[1], ask.at, ask.ticket, ask.event),
            ).rowcount
        else:
            wrote = db.execute(
                _INSERT, _values(ask, number, "started", run_id, last[1], None)
            ).rowcount
        if wrote:
            for sql, params in queued:
                db.execute(sql, params)
        return attrs.evolve(_written(db, ask.ticket, ask.event), new=bool(wrote))


def refuse(journal: Journal, ask: TicketClaim, reason: str) -> bool:
    """Record that `ask` was refused (who may not start work); tell whether it is new.

    A refusal already recorded for the event is not recorded again, so it
    is answered at most once.
    """
    with journal.transaction() as db:
        return bool(db.execute(_INSERT, _values(ask, 0, "refused", None, None, reason)).rowcount)


def set_comment(journal: Journal, run_id: str, comment_id: int) -> None:
    """Keep the id of the status comment of `run_id`'s round (edited as the run goes on)."""
    journal.write("UPDATE tickets SET comment_id = ? WHERE run_id = ?", (comment_id, run_id))


_COLUMNS: Final = (
    "SELECT t.ticket, t.event, t.round, t.state, t.author, t.recorded, t.run_id, t.parent,"
    " t.reason, r.status, t.comment_id"
)
_FROM: Final = " FROM tickets AS t LEFT JOIN runs AS r ON r.run_id = t.run_id"
_SELECT: Final = _COLUMNS + _FROM


def rounds(journal: Journal, ticket: str) -> list[TicketRound]:
    """List a ticket's rows, oldest first (none: a journal from before tickets)."""
    if not journal.has_table("tickets"):
        return []
    rows = journal.query(f"{_SELECT} WHERE t.ticket = ? ORDER BY t.id", (ticket,))
    return [_round(row) for row in rows]


def ticket_of(journal: Journal, run_id: str) -> TicketRound | None:
    """Return the round `run_id` was started for (None: no ticket's)."""
    if not journal.has_table("tickets"):
        return None
    rows = journal.query(f"{_SELECT} WHERE t.run_id = ?", (run_id,))
    return _round(rows[0]) if rows else None


def _values(  # noqa: PLR0913, PLR0917 - a row's columns
    ask: TicketClaim,
    number: int,
    state: str,
    run_id: str | None,
    parent: str | None,
    reason: str | None,
) -> tuple[object, ...]:
    return (
        ask.ticket,
        ask.event,
        number,
        state,
        ask.author,
        ask.source,
        io_ops.utc_now(),
        ask.at,
        run_id,
        parent,
        reason,
    )


def _row(db: Connection, ticket: str, event: str) -> TicketRound | None:
    found = db.execute(f"{_SELECT} WHERE t.ticket = ? AND t.event = ?", (ticket, event)).fetchone()
    return None if found is None else _round(tuple(found))


def _round(row: Sequence[object]) -> TicketRound:
    ticket, event, number, state, author, recorded, run_id, parent, reason, status, comment = row
    return TicketRound(
        str(ticket),
        str(event),
        int(str(number)),
        "started" if state == "started" else "deferred" if state == "deferred" else "refused",
        str(author),
        str(recorded),
        None if run_id is None else str(run_id),
        None if parent is None else str(parent),
        None if reason is None else str(reason),
        None if status is None else str(status),
        None if comment is None else int(str(comment)),
    )


def _written(db: Connection, ticket: str, event: str) -> TicketRound:
    found = _row(db, ticket, event)
    assert found is not None  # noqa: S101 - written in this transaction
    return found


def unshown(journal: Journal, source: str) -> list[tuple[TicketRound, str | None]]:
    """List the started rounds of `source` whose run's status is not what their comment shows.

    Each with the status last shown (None: none yet), oldest first; what a
    watcher edits its status comments from.
    """
    rows = journal.query(
        f"{_COLUMNS}, t.shown{_FROM} WHERE t.source = ? AND t.state = 'started'"
        " AND r.status IS NOT NULL AND (t.shown IS NULL OR t.shown <> r.status) ORDER BY t.id",
        (source,),
    )
    return [(_round(row[:-1]), None if row[-1] is None else str(row[-1])) for row in rows]


def shown(journal: Journal, run_id: str, was: str | None, status: str) -> bool:
    """Take the showing of `status` for `run_id`'s comment, compare-and-set on `was`.

    True: this caller moved it from `was` and shows it; False: another
    watcher (on any host) got there first, and this one leaves the comment
    alone, so a status is shown by one watcher, once.
    """
    with journal.transaction() as db:
        if was is None:
            sql = "UPDATE tickets SET shown = ? WHERE run_id = ? AND shown IS NULL"
            return bool(db.execute(sql, (status, run_id)).rowcount)
        sql = "UPDATE tickets SET shown = ? WHERE run_id = ? AND shown = ?"
        return bool(db.execute(sql, (status, run_id, was)).rowcount)
