"""The agent sessions of a run: which session each call ran in, and which it continued.

Each `AgentSessionStarted` becomes one `agent_sessions` row as soon as the
agent's CLI names its session, before the call ends: a call stopped
halfway (Ctrl-C, a killed process) still has its session journaled, and
the call's exchange, once recorded, marks it `ended` (unless the call was
interrupted). `adws status` shows per attempt `session S (continued from
attempt N)`; a resume continues the sessions of the calls it finds cut off
(`interrupted_sessions`). A journal older than this table has no rows, and
a row no adws could have written is left out, never raised; a row whose
session id is not a plain token is read with its `problems` (see
`adws.journal.records.sessions`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from adws import io_ops
from adws.agents.sessions import plain_session, unplain_session
from adws.engine.errors import ErrorType
from adws.journal.records.runs import LATEST_CLOCK, checked_seconds, checked_text, checked_whole
from adws.journal.records.sessions import SessionRecord

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.engine.events import AgentExchanged, AgentSessionStarted
    from adws.journal.store.journal import Journal
    from adws.journal.store.schema import Statement

__all__ = ["ended_statement", "session_statement", "sessions_of"]

_INSERT: Final = (
    "INSERT INTO agent_sessions (run_id, step, attempt, asked_by, session_id, continued,"
    " continues, from_attempt, why, recorded, started)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_ENDED: Final = (
    "UPDATE agent_sessions SET ended = 1"
    " WHERE run_id = ? AND step = ? AND attempt = ? AND asked_by = ? AND ended = 0"
)
_SELECT: Final = (
    "SELECT step, attempt, asked_by, session_id, continued, continues, from_attempt, why, ended,"
    " started FROM agent_sessions WHERE run_id = ? ORDER BY id"
)


def session_statement(event: AgentSessionStarted) -> Statement:
    """Return the row that records the session an agent call runs in."""
    continued = None if event.continued is None else int(event.continued)
    return (
        _INSERT,
        (
            event.run_id,
            event.path,
            event.attempt,
            event.asked_by,
            event.session_id,
            continued,
            event.continues,
            event.from_attempt,
            event.why or None,
            io_ops.utc_now(),
            io_ops.wall_clock(),
        ),
    )


def ended_statement(event: AgentExchanged) -> Statement | None:
    """Mark the sessions of an agent call that ended as ended; None for an interrupted call."""
    if event.error is not None and event.error.error_type == ErrorType.INTERRUPTED:
        return None
    return (_ENDED, (event.run_id, event.path, event.attempt, event.asked_by))


def _record(row: Sequence[Any]) -> SessionRecord | None:
    problems: list[str] = []
    step = checked_text(row[0], "step", problems)
    attempt = checked_whole(row[1], "attempt", problems)
    asked_by = checked_text(row[2], "asked_by", problems)
    session = checked_text(row[3], "session_id", problems)
    continued = checked_whole(row[4], "continued", problems, most=1, optional=True)
    continues = checked_text(row[5], "continues", problems, optional=True)
    from_attempt = checked_whole(row[6], "from_attempt", problems, optional=True)
    why = checked_text(row[7], "why", problems, optional=True)
    ended = checked_whole(row[8], "ended", problems, most=1)
    at = checked_seconds(row[9], "started", problems, most=LATEST_CLOCK, optional=True)
    if problems or not session:
        return None
    hostile = tuple(
        f"{column} is refused: {unplain_session(value)}"
        for column, value in (("session_id", session), ("continues", continues))
        if value is not None and not plain_session(value)
    )
    flag = None if continued is None else bool(continued)
    return SessionRecord(
        step,
        attempt,
        asked_by,
        session,
        flag,
        continues,
        from_attempt,
        why or "",
        bool(ended),
        at,
        hostile,
    )


def sessions_of(journal: Journal, run_id: str) -> list[SessionRecord]:
    """List a run's agent sessions in the order they started (none before this table)."""
    if not journal.has_table("agent_sessions"):
        return []
    found = (_record(row) for row in journal.query(_SELECT, (run_id,)))
    return [record for record in found if record is not None]
