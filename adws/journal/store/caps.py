"""Caps in the journal: set, removed, read back, and what each window has spent.

A cap is one row of `caps` (its name, its JSON, when it was set), so every
process sharing the journal (SQLite or PostgreSQL) sees the same caps. A
row that does not read back as a cap is reported by name (`CapState.error`)
and never read as "no cap": calls under it do not start.

Spend is what the journal's top-level attempts recorded (as `adws cost`
sums it), counted by when each attempt was recorded: the runs of the cap's
`workflow` (any, if none), the calls of runs started with its `agent`
preset (any, if none). A `--runs` cap counts the runs started in the window
(a queued run has not started: it counts once a worker takes it, by when it
was queued). A queued run a `--runs` cap has no room for stays queued
(`holding`; `adws.journal.store.queue.take_queued` skips it).
"""

from __future__ import annotations

import datetime as dt
import json
import zoneinfo
from collections import Counter
from typing import TYPE_CHECKING, Final, final

import attrs

from adws._exceptions import MalformedError, NotFoundError
from adws.journal.records.caps import Cap

if TYPE_CHECKING:
    from adws.journal.store.journal import Journal
    from adws.journal.store.schema import Statement

__all__ = [
    "CapState",
    "held",
    "holding",
    "refusing_run",
    "refusing_runs",
    "remove",
    "set_cap",
    "start_within",
    "states",
]

_UPSERT: Final = (
    "INSERT INTO caps (name, spec, created) VALUES (?, ?, ?)"
    " ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, created = excluded.created"
)
_SPENDS: Final = (
    "SELECT a.recorded, a.cost_usd, a.input_tokens, a.output_tokens, runs.options"
    " FROM attempts AS a JOIN runs USING (run_id)"
    " WHERE a.step NOT LIKE '%[%' AND a.recorded >= ? AND (? IS NULL OR runs.workflow = ?)"
    " ORDER BY a.recorded"
)
_HELD: Final = (
    "SELECT COALESCE(SUM(h.amount), 0) FROM cap_holds AS h JOIN runs USING (run_id)"
    " WHERE h.cap = ? AND runs.status = 'running' AND NOT EXISTS (SELECT 1 FROM attempts AS a"
    " WHERE h.settled IS NOT NULL AND a.run_id = h.run_id AND a.step NOT LIKE '%[%'"
    " AND a.id > h.settled)"
)
_RUNS: Final = (
    "SELECT started, options FROM runs WHERE started >= ? AND (? IS NULL OR workflow = ?)"
    " AND status <> 'queued'"
    " ORDER BY started"
)


@final
@attrs.frozen
class CapState:
    """A cap and its current window: spent, reserved, when it resets; or why it is unreadable."""

    name: str
    cap: Cap | None
    spent: float = 0.0
    reserved: float = 0.0
    resets: dt.datetime | None = None
    error: str | None = None

    @property
    def remaining(self) -> float:
        """Return what is left of the window (0 for an unreadable cap: nothing may start)."""
        if self.cap is None:
            return 0.0
        return max(round(self.cap.amount - self.spent - self.reserved, 9), 0.0)

    def to_dict(self) -> dict[str, object]:
        """Return the JSON-safe dict `adws caps --json` prints."""
        if self.cap is None:
            return {"name": self.name, "error": self.error}
        return {
            **attrs.asdict(self.cap),
            "spent": self.spent,
            "reserved": self.reserved,
            "remaining": self.remaining,
            "resets": None if self.resets is None else self.resets.isoformat(timespec="seconds"),
        }


def set_cap(journal: Journal, cap: Cap, now: dt.datetime) -> None:
    """Store `cap` (replacing one of that name; its rolling window starts again)."""
    with journal.transaction() as db:
        db.execute(_UPSERT, (cap.name, cap.to_json(), now.isoformat(timespec="seconds")))


def remove(journal: Journal, name: str) -> None:
    """Remove the cap called `name`; one that is not there is `NotFoundError`."""
    with journal.transaction() as db:
        if not db.execute("DELETE FROM caps WHERE name = ?", (name,)).rowcount:
            msg = f"no cap called {name!r}"
            raise NotFoundError(msg)


def _agent_of(options: object) -> str | None:
    try:
        fields = json.loads(options) if isinstance(options, str) else None
    except ValueError:
        return None
    agent = fields.get("agent") if isinstance(fields, dict) else None
    return agent if isinstance(agent, str) else None


def _when(text: object) -> dt.datetime | None:
    try:
        found = dt.datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return None if found is None or found.tzinfo is None else found


def _amounts(journal: Journal, cap: Cap, since: str) -> list[tuple[dt.datetime, float]]:
    """Return what each matching spend since `since` cost in the cap's currency, oldest first."""
    scope = (since, cap.workflow, cap.workflow)
    found: list[tuple[dt.datetime, float]] = []
    if cap.currency == "runs":
        for started, options in journal.query(_RUNS, scope):
            when = _when(started)
            if when is not None and cap.agent in {None, _agent_of(options)}:
                found.append((when, 1.0))
        return found
    for recorded, cost, tokens_in, tokens_out, options in journal.query(_SPENDS, scope):
        when = _when(recorded)
        if when is None or cap.agent not in {None, _agent_of(options)}:
            continue
        amount = cost if cap.currency == "usd" else (tokens_in or 0) + (tokens_out or 0)
        if amount:
            found.append((when, float(amount)))
    return found


def held(journal: Journal, name: str) -> float:
    """Return what calls in flight (and settled calls not yet recorded) hold of cap `name`."""
    return float(journal.query(_HELD, (name,))[0][0] or 0.0)


def _state(
    journal: Journal, name: str, spec: object, created: object, now: dt.datetime
) -> CapState:
    try:
        cap = Cap.from_json(name, spec)
    except MalformedError as exc:
        return CapState(name, None, error=str(exc))
    start = _when(created) or now
    if cap.rolling is None:  # a calendar window counts what was spent before the cap was set
        start = cap.window(now, [])[0]
    spends = _amounts(journal, cap, start.isoformat(timespec="seconds"))
    opened, resets = cap.window(now, [when for when, _amount in spends])
    spent = round(sum(amount for when, amount in spends if opened <= when < resets), 9)
    holding = cap.currency != "runs" and journal.has_table("cap_holds")
    return CapState(name, cap, spent, held(journal, name) if holding else 0.0, resets)


def states(journal: Journal, now: dt.datetime) -> list[CapState]:
    """Return every cap with its current window, by name (unreadable rows included, named)."""
    if not journal.has_table("caps"):
        return []
    rows = journal.query("SELECT name, spec, created FROM caps ORDER BY name")
    return [_state(journal, str(name), spec, created, now) for name, spec, created in rows]


def refusing_run(
    journal: Journal, workflow: str, agent: str | None, now: dt.datetime, count: int = 1
) -> str | None:
    """Say which `--runs` cap `count` new runs of `workflow` (with `agent`) would pass; None: none.

    An unreadable cap refuses too (fail closed): nobody can tell what it allows.
    """
    for state in states(journal, now):
        cap = state.cap
        if cap is None:
            return f"{state.error}; fix it or remove it (adws caps rm {state.name})"
        if cap.currency != "runs" or cap.workflow not in {None, workflow}:
            continue
        if cap.agent not in {None, agent} or state.spent + count <= cap.amount:
            continue
        frees = (state.resets or now).astimezone(zoneinfo.ZoneInfo(cap.tz))
        fit = "" if count == 1 else f"; no room for {count} runs"
        return (
            f"cap {cap.name}: {state.spent:,.0f} of {cap.amount:,.0f} runs started"
            f" ({cap.describe()}){fit}; it frees at {frees.isoformat(timespec='minutes')}"
        )
    return None


def start_within(
    journal: Journal,
    workflow: str,
    agent: str | None,
    now: dt.datetime,
    statements: list[Statement],
) -> str | None:
    """Check the `--runs` caps and write a new run's row (`statements`) in ONE transaction.

    Returns which cap refuses it (nothing written), or None once the row is
    written. The caps' rows are locked first (`BEGIN IMMEDIATE` on SQLite,
    `FOR UPDATE` on PostgreSQL), so of two runs starting at once with room
    for one, the second counts the first's row and is refused.
    """
    with journal.transaction() as db:
        db.execute(f"SELECT name FROM caps ORDER BY name{db.locks_rows}")  # noqa: S608 - a fixed clause
        full = refusing_run(journal, workflow, agent, now)
        if full is None:
            for sql, params in statements:
                db.execute(sql, params)
        return full


def refusing_runs(
    journal: Journal, workflow: str, options: list[str | None], now: dt.datetime
) -> str | None:
    """Say which `--runs` cap has no room for all these runs (each its options' JSON); None: none.

    For `adws batch`: its runs all start, or none does.
    """
    for agent, count in Counter(_agent_of(given) for given in options).items():
        full = refusing_run(journal, workflow, agent, now, count)
        if full is not None:
            return full
    return None


def holding(journal: Journal, workflow: str, options: object, now: dt.datetime) -> str | None:
    """Say which `--runs` cap keeps a queued run queued (its row's `options` JSON); None: none."""
    return refusing_run(journal, workflow, _agent_of(options), now)
