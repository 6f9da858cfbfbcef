"""The agent sessions of a run, as values: which session each call ran in, which it continued.

`SessionRecord` is one `agent_sessions` row; `by_attempt` groups them
under the attempts they belong to (`adws status`); `interrupted_sessions`
finds the calls a stopped run cut off, whose sessions a resume continues;
`parent_sessions` the sessions a ticket's review round continues.
The SQL is `adws.journal.store.sessions`.

A session id becomes an argument of an agent CLI, so a row whose
`session_id` (or `continues`) is not a plain token
(`adws.agents.sessions.SESSION_ID`: a forged
`--dangerously-bypass-approvals-and-sandbox` would be codex's flag) is a
hostile row: read with its `problems`, shown refused by `status`, and a
resume that would continue it is refused, naming the row
(`UnreadableError`); it never reaches a CLI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, final

import attrs

from adws.engine.scope import AgentSession
from adws.journal.records.runs import UnreadableError, named_problems

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from adws.journal.records.runs import AttemptRecord, RunRecord

__all__ = ["SessionRecord", "by_attempt", "interrupted_sessions", "parent_sessions"]


@final
@attrs.frozen
class SessionRecord:
    """One journaled agent session: the call it served, and what it continued.

    `continued` is None when the call asked for no continuation, True when
    it continued session `continues` of attempt `from_attempt`, False when
    that session was lost and the call started afresh (`why`). `ended` says
    the call ended (was answered, or failed) rather than being cut off.
    """

    step: str
    """The attempt's path: the step, or the branch (`verify_claims[2]`)."""
    attempt: int
    asked_by: str
    session_id: str
    continued: bool | None
    continues: str | None
    from_attempt: int | None
    why: str
    ended: bool
    at: float | None = None
    """When the agent named the session, in Unix seconds."""
    problems: tuple[str, ...] = ()
    """Why the row is refused: a session id in it is not a plain token (see the module)."""

    def describe(self) -> str:
        """Say which session the call ran in and what it continued.

        >>> SessionRecord("ask", 2, "ask", "s-1", True, "s-1", 1, "", True).describe()
        'session s-1 (continued from attempt 1)'
        >>> SessionRecord("ask", 2, "ask", "s-2", False, "s-1", 1, "gone", True).describe()
        'session s-2 (not continued from attempt 1: gone)'
        >>> SessionRecord("ask", 1, "ask", "-x", None, None, None, "", True,
        ...     problems=("session_id is refused: ...",)).describe()
        'session refused: session_id is refused: ...'
        """
        if self.problems:
            return f"session refused: {self.problems[0]}"
        if self.continued is None:
            return f"session {self.session_id}"
        if self.continued:
            return f"session {self.session_id} (continued from attempt {self.from_attempt})"
        before = f"not continued from attempt {self.from_attempt}"
        return f"session {self.session_id} ({before}: {self.why})"

    def to_dict(self) -> dict[str, object]:
        """Return the record for `--json` (with `refused`, the problems, for a hostile row)."""
        said: dict[str, object] = {
            "session_id": self.session_id,
            "asked_by": self.asked_by,
            "continued": self.continued,
            "continues": self.continues,
            "from_attempt": self.from_attempt,
            "why": self.why or None,
            "ended": self.ended,
        }
        if self.problems:
            said["refused"] = list(self.problems)
        return said


_ATTEMPTS: Final = frozenset({"retried", "failed", "succeeded", "cancelled"})


def by_attempt(
    sessions: Sequence[SessionRecord], attempts: Sequence[AttemptRecord]
) -> list[list[SessionRecord]]:
    """Give each attempt row (in order) the sessions its calls ran in.

    A session belongs to the first row of its path and attempt number that
    ended after the session started: a resumed run numbers its attempts
    from 1 again, and its interrupted attempt ended before the resume's
    sessions began. Verification rounds are not attempts: they get none.
    """
    found: list[list[SessionRecord]] = [[] for _ in attempts]
    for record in sessions:
        rows = [
            index
            for index, row in enumerate(attempts)
            if (row.step, row.attempt) == (record.step, record.attempt) and row.status in _ATTEMPTS
        ]
        ended_after = (index for index in rows if _ended_after(attempts[index], record.at))
        chosen = next(ended_after, rows[-1] if rows else None)
        if chosen is not None:
            found[chosen].append(record)
    return found


def _ended_after(row: AttemptRecord, at: float | None) -> bool:
    """Tell whether an attempt row ended after `at` (so a session started then is its)."""
    started = row.started
    return at is None or started is None or started + row.seconds >= at


def interrupted_sessions(
    record: RunRecord, sessions: Sequence[SessionRecord], step: str | None
) -> Mapping[tuple[str, str], AgentSession]:
    """Find the agent calls of `step` (and its branches) that a stopped run cut off.

    Only a run that stopped without recording its end (interrupted, or its
    process gone) had a call in flight; each path's agent step's latest
    session is one when its call never ended. A hostile row among them (a
    session id that is not a plain token) raises `UnreadableError` naming
    it: the resume is refused, and the id never reaches a CLI.
    """
    if step is None or not (record.status == "interrupted" or record.stale):
        return {}
    latest: dict[tuple[str, str], SessionRecord] = {}
    for found in sessions:
        if found.step == step or found.step.startswith(f"{step}["):
            latest[found.step, found.asked_by] = found
    cut_off = [found for found in latest.values() if not found.ended]
    hostile = named_problems("agent_sessions", record.run_id, cut_off)
    if hostile:
        raise UnreadableError("; ".join(hostile), hostile)
    return {
        (one.step, one.asked_by): AgentSession(one.session_id, one.attempt, interrupted=True)
        for one in cut_off
    }


def parent_sessions(
    parent: RunRecord, sessions: Sequence[SessionRecord], host: str
) -> Mapping[tuple[str, str], AgentSession]:
    """Find the sessions a review round's agent steps continue: each one's latest in `parent`.

    An agent CLI keeps its sessions on the host it ran on, so they continue
    only on `parent`'s host; on any other `host` each step's first call
    starts afresh, and its session record says why. A hostile row (a
    session id that is not a plain token) is never continued.

    """
    why = ""
    if parent.host != host:
        why = (
            f"the parent run {parent.run_id} ran on host {parent.host or '(not recorded)'},"
            " where its agents'"
            f" sessions are; this round runs on {host}"
        )
    latest = {(one.step, one.asked_by): one for one in sessions if not one.problems}
    return {
        key: AgentSession(one.session_id, one.attempt, parent=parent.run_id, why=why)
        for key, one in latest.items()
    }
