"""A ticket's rounds as `adws runs --ticket KEY` shows them, and the line `adws status` adds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws.io_ops.terminal import escape_controls

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.journal.records.tickets import TicketRound

__all__ = ["round_dict", "rounds_text", "ticket_line"]


def _what(row: TicketRound) -> str:
    if row.state == "started":
        return f"run {row.run_id} ({row.status or 'pruned'})"
    return f"{row.state}: {escape_controls(row.reason or '')}"


def rounds_text(rows: Sequence[TicketRound]) -> str:
    """Render a ticket's rows, oldest first: round, event, who asked, and its run or refusal.

    >>> from adws.journal.records.tickets import TicketRound
    >>> print(rounds_text([TicketRound("k", "issue", 1, "started", "ana", "t", "r1",
    ...     status="queued"), TicketRound("k", "comment:5", 0, "refused", "bo", "t",
    ...     reason="bo may not")]))
    round 1 · issue · by ana · run r1 (queued)
    round - · comment:5 · by bo · refused: bo may not
    """
    lines = []
    for row in rows:
        number = str(row.round) if row.state == "started" else "-"
        event, author = escape_controls(row.event), escape_controls(row.author)
        lines.append(f"round {number} · {event} · by {author} · {_what(row)}")
    return "\n".join(lines)


def ticket_line(row: TicketRound) -> str:
    """Say which ticket a run works for, and its round (`adws status`).

    >>> from adws.journal.records.tickets import TicketRound
    >>> ticket_line(TicketRound("github:o/r#7", "issue", 2, "started", "ana", "t", "r2",
    ...     parent="r1"))
    'ticket github:o/r#7 · round 2 (issue, by ana) · after run r1'
    """
    after = f" · after run {row.parent}" if row.parent else ""
    return (
        f"ticket {escape_controls(row.ticket)} · round {row.round} "
        f"({escape_controls(row.event)}, by {escape_controls(row.author)}){after}"
    )


def round_dict(row: TicketRound) -> dict[str, object]:
    """Return a row as JSON (`--json`)."""
    return {
        "ticket": row.ticket,
        "event": row.event,
        "round": row.round,
        "state": row.state,
        "author": row.author,
        "recorded": row.recorded,
        "run_id": row.run_id,
        "parent": row.parent,
        "reason": row.reason,
        "status": row.status,
    }
