"""A ticket into a run: one per ticket and event, through `Runs`, answered at most once.

Every source (GitHub's issues, a webhook, a command's JSON) comes here:
the author is checked by the source's `Gate` first (a refusal recorded
once, with its reason), then `Runs.submit_ticket` queues the round, or
says why not (a run of the ticket not over, its rounds a day, its
source's runs an hour), in the same transaction as the journal's check.
The ticket's words are the run's inputs, never a shell word, path or flag.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, final

import attrs

from adws import io_ops
from adws.journal.records.tickets import TicketClaim, TicketLimits, TicketRound
from adws.journal.store import tickets as journal_tickets
from adws.runs import Refused, RunRequest, Runs
from adws.tickets.gate import Gate

if TYPE_CHECKING:
    from adws.tickets.values import Ticket

__all__ = ["Intake", "Taken"]

ISSUE: Final = "issue"
"""The event of a ticket's first round: the ticket itself."""


@final
@attrs.frozen
class Taken:
    """What became of one ticket's event: `started`, `refused`, `deferred`, or `seen` before.

    `round` is the journal's row (None: refused before the journal was
    asked, by a source's gate, and recorded; see `reason`); `new` says
    whether this call decided it (so it is answered once).
    """

    ticket: str
    state: Literal["started", "refused", "deferred", "seen"]
    run_id: str | None = None
    reason: str | None = None
    new: bool = False
    round: TicketRound | None = None


@final
@attrs.frozen
class Intake:
    """Start runs of `workflow` from one source's tickets (`github:OWNER/NAME`, a command)."""

    runs: Runs
    source: str
    workflow: str
    gate: Gate | None = None
    limits: TicketLimits = attrs.field(factory=TicketLimits)
    workflows: str | Path | None = None
    clock: Callable[[], float] = io_ops.wall_clock
    inputs: Mapping[str, object] = attrs.field(factory=dict)
    """Inputs every run gets besides the ticket's (`-i target_dir=.`); the ticket's win."""
    review_workflow: str | None = None
    """The workflow of review rounds (None: `workflow`)."""

    def take(  # noqa: PLR0913 - the ticket, and what a source knows of its event
        self,
        ticket: Ticket,
        *,
        event: str = ISSUE,
        author: str | None = None,
        permission: Callable[[str], str] = lambda _user: "none",
        inputs: Mapping[str, object] | None = None,
        workflow: str | None = None,
    ) -> Taken | Refused:
        """Start the round `event` of `ticket` by `author` (default: its author), if it may.

        `inputs` are added to the ticket's own (a review comment's); a
        `Refused` is a request the workflow cannot take (asked wrongly:
        the watcher stops).
        """
        who = author or ticket.author
        ask = TicketClaim(ticket.key, event, who, self.source, self.clock(), self.limits)
        journal = self.runs.journal()
        if isinstance(journal, Refused):
            return journal
        if self.gate is not None:
            known = _known(journal_tickets.rounds(journal, ticket.key), event)
            if known is not None:
                return known
            why = self.gate.why_not(who, permission)
            if why is not None:
                new = journal_tickets.refuse(journal, ask, why)
                return Taken(ticket.key, "refused", reason=why, new=new)
        request = RunRequest(
            workflow or self.workflow,
            inputs={**self.inputs, **ticket.inputs(), **(inputs or {})},
            workflows=self.workflows,
        )
        row = self.runs.submit_ticket(request, ask)
        if isinstance(row, Refused):
            return row
        return _taken(row)


def _known(rows: list[TicketRound], event: str) -> Taken | None:
    """Return what the journal already decided for `event` (None: nothing, or a deferral)."""
    for row in rows:
        if row.event == event and row.state != "deferred":
            return _taken(row)
    return None


def _taken(row: TicketRound) -> Taken:
    state: Literal["started", "refused", "deferred", "seen"] = row.state if row.new else "seen"
    return Taken(row.ticket, state, row.run_id, row.reason, row.new, row)
