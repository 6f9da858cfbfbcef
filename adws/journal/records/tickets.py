"""A ticket's rounds as the journal holds them (`TicketRound`), and what a claim asks for.

One row per ticket and event (the issue itself, or one `/adws` comment):
`started` with its run, `refused` with the reason (never started, never
asked again), or `deferred` (a limit of the hour: started by a later poll
once there is room). The SQL is `adws.journal.store.tickets`.
"""

from __future__ import annotations

from typing import Final, Literal, final

import attrs

__all__ = ["ACTIVE", "TicketClaim", "TicketLimits", "TicketRound"]

ACTIVE: Final = ("queued", "running", "waiting", "parked")
"""The statuses of a run that is not over: a ticket has at most one such run."""


@final
@attrs.frozen
class TicketLimits:
    """How often a ticket may start work: rounds a day per ticket, runs an hour per source."""

    rounds_per_day: int = 3
    runs_per_hour: int = 20


@final
@attrs.frozen
class TicketClaim:
    """What a source asks of the journal: one run for `ticket` on `event`, by `author`.

    `event` names what asked (`issue`, `comment:123`), unique per ticket;
    `source` the watcher's source (`github:OWNER/NAME`, a command), whose
    runs an hour are counted together on every host; `at` Unix seconds.
    """

    ticket: str
    event: str
    author: str
    source: str
    at: float
    limits: TicketLimits = TicketLimits()


@final
@attrs.frozen
class TicketRound:
    """One row of a ticket: a round started (`run_id`, its `status`), refused or deferred."""

    ticket: str
    event: str
    round: int
    state: Literal["started", "refused", "deferred"]
    author: str
    recorded: str
    run_id: str | None = None
    parent: str | None = None
    reason: str | None = None
    status: str | None = None
    """The run's status now (None: refused, deferred, or a run pruned)."""
    comment_id: int | None = None
    """The run's status comment on the ticket (None: none yet)."""
    new: bool = False
    """This claim wrote the row (started, refused or deferred it); False: it was there."""
