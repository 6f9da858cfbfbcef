"""Notices of due runs on a PostgreSQL journal: the triggers that send them, and a LISTEN.

A PostgreSQL journal notifies the channel `adws_due` in the very
transaction that makes a run due somewhere: a run queued (not a batch's),
a decision given on a question, a cancel asked, a run parked (or parked
again until another time) or interrupted. Triggers send them (migration
24), so no write path can forget one, and none is sent for a change
rolled back. The payload is a hint for people reading the server's log
(`{"run": ID, "what": WHY, "host": H, "wake_at": T}`); a worker never reads
it: whatever it hears, it runs its normal round (reads the journal, claims
compare-and-set), so a forged `NOTIFY` starts nothing that is not due.

A worker listens on a connection of its own
(`adws.journal.store.postgres.open_listener`). SQLite has no notices: its
workers poll (and sleep until the nearest `wake_at`, as every worker does).
"""

from __future__ import annotations

from typing import Final

__all__ = ["CHANNEL", "WORDS"]

CHANNEL: Final = "adws_due"
"""The one channel every notice of a due run goes to."""

_FUNCTION: Final = f"""CREATE OR REPLACE FUNCTION adws_due_notice() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    what TEXT;
BEGIN
    IF TG_TABLE_NAME = 'approvals' THEN
        PERFORM pg_notify('{CHANNEL}',
            json_build_object('run', NEW.run_id, 'what', 'decided')::text);
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        what := 'queued';
    ELSIF NEW.cancel IS NOT NULL AND OLD.cancel IS NULL THEN
        what := 'cancelled';
    ELSE
        what := NEW.status;
    END IF;
    PERFORM pg_notify('{CHANNEL}', json_build_object('run', NEW.run_id, 'what', what,
        'host', NEW.host, 'wake_at', NEW.wake_at)::text);
    RETURN NULL;
END
$$"""

_RUN_QUEUED: Final = "NEW.status = 'queued' AND NEW.batch_id IS NULL"
_RUN_DUE: Final = (
    "(NEW.cancel IS NOT NULL AND OLD.cancel IS NULL)"
    " OR (NEW.status IN ('queued', 'interrupted') AND NEW.status <> OLD.status)"
    " OR (NEW.status = 'parked'"
    " AND (OLD.status <> 'parked' OR NEW.wake_at IS DISTINCT FROM OLD.wake_at))"
)
_RUNS: Final = (
    "CREATE TRIGGER adws_run_queued AFTER INSERT ON runs FOR EACH ROW"
    f" WHEN ({_RUN_QUEUED}) EXECUTE FUNCTION adws_due_notice()"
)
_RUNS_DUE: Final = (
    "CREATE TRIGGER adws_run_due AFTER UPDATE ON runs FOR EACH ROW"
    f" WHEN ({_RUN_DUE}) EXECUTE FUNCTION adws_due_notice()"
)
_DECISIONS: Final = (
    "CREATE TRIGGER adws_run_decided AFTER UPDATE ON approvals FOR EACH ROW"
    " WHEN (NEW.verdict IS NOT NULL AND OLD.verdict IS NULL) EXECUTE FUNCTION adws_due_notice()"
)

WORDS: Final = {
    "notices": _FUNCTION,
    "notices_of_queued": _RUNS,
    "notices_of_runs": _RUNS_DUE,
    "notices_of_decisions": _DECISIONS,
}
"""Migration 24's statements on PostgreSQL (SQLite's words for them are empty)."""
