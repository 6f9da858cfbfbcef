"""The run journal: every run event, durable, for `runs`, `status` and `resume`.

One SQLite file (`.adws/runs.db` by default), WAL mode, or a PostgreSQL
server a team shares (a `postgresql://` URL; see `adws.journal.store.backend`);
one transaction per event, so a crash loses at most the step in flight and
several processes can write at once. The schema carries a version and a
list of forward migrations.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from adws import io_ops
from adws._exceptions import RefusedError
from adws.engine.context import WorkflowContext
from adws.journal.records.codec import decode_context, encode_context
from adws.journal.records.holders import started_here
from adws.journal.records.runs import (
    AttemptRecord,
    RunRecord,
    attempt_from_row,
    column_of,
    run_from_row,
)
from adws.journal.store._open import immediate
from adws.journal.store.backend import ERRORS, JournalError, JournalUrl, where
from adws.journal.store.claims import changed_since, holder_of
from adws.journal.store.postgres import open_server
from adws.journal.store.sqlite import open_readonly, open_writable

if TYPE_CHECKING:
    import tempfile
    from collections.abc import Callable, Iterator, Mapping, Sequence

    from adws.journal.records.holders import Seen
    from adws.journal.store.backend import Connection
    from adws.journal.store.schema import Guarded, Statement


class _RefusedError(RefusedError):
    """A claim refused after it had begun writing: its transaction rolls back."""


def _record(db: Connection, statements: Sequence[Guarded]) -> None:
    """Run a claim's statements; raise `_RefusedError` when a guarded one changes no row."""
    for (sql, params), refusal in statements:
        if db.execute(sql, params).rowcount == 0 and refusal is not None:
            raise _RefusedError(refusal)


__all__ = [
    "DEFAULT_PATH",
    "ENV_VAR",
    "AttemptRecord",
    "Journal",
    "JournalError",
    "RunRecord",
]

DEFAULT_PATH: Final = Path(".adws") / "runs.db"
ENV_VAR: Final = "ADWS_JOURNAL"
BUSY_TIMEOUT_SECONDS: Final = 30.0
ROOM_BYTES: Final = 256 * 1024
"""The free space a journal file's file system must have for a step to start (`has_room`)."""


class Journal:
    """Open (creating and migrating) the journal at `path`, or only read it.

    `path` is a SQLite file or a `postgresql://` URL (a `JournalUrl`, which
    never shows its password). One connection serves every thread of a run
    (a lock serialises it); several processes share the file through
    SQLite's own locking, or the server.
    """

    def __init__(
        self,
        path: Path | str | JournalUrl,
        *,
        busy_timeout: float = BUSY_TIMEOUT_SECONDS,
        sleep: Callable[[float], None] = io_ops.sleep,
        readonly: bool = False,
    ) -> None:
        """Open the database, or raise `JournalError` naming the file and the cause.

        Writers wait up to `busy_timeout` seconds for each other's transactions.
        `readonly` opens an existing journal without writing anything, not
        even a migration, so `runs`, `status` and `resume --plan` work on a
        journal the user cannot write.
        """
        self.path = where(path)
        self._lock = threading.RLock()
        self._copy: tempfile.TemporaryDirectory[str] | None = None
        """A private copy of a read-only journal; removed with this object, or at exit."""
        self._tables: dict[str, bool] = {}
        self._opening = (busy_timeout, sleep)
        self._db: Connection
        if readonly and not isinstance(self.path, JournalUrl):
            self._db, self._copy = open_readonly(self.path, busy_timeout)
        else:
            self._db = self._connect(readonly=readonly)
        self._readonly = readonly

    def _connect(self, *, readonly: bool) -> Connection:
        """Open a connection to a server, or to a file for writing; raise `JournalError`."""
        busy_timeout, sleep = self._opening
        if isinstance(self.path, JournalUrl):
            return self._serve(self.path, busy_timeout, readonly=readonly)
        try:
            return open_writable(self.path, busy_timeout, sleep)
        except (*ERRORS, OSError) as exc:
            msg = (
                f"cannot use the run journal {self.path}: {exc}; move it aside, "
                "point --journal elsewhere, or run with --no-journal"
            )
            raise JournalError(msg) from exc

    def reopen(self) -> None:
        """Replace the connection with a new one: a write failed (a server restarted, a full disk).

        The old connection is closed once the new one is open (quietly: it
        may be broken). A journal file opened only for reading keeps its
        connection (it writes nothing to try again). Raises `JournalError`
        when no new connection can be opened (the old one stays, and is
        tried again next time).
        """
        if self._readonly and not isinstance(self.path, JournalUrl):
            return
        with self._lock:
            fresh = self._connect(readonly=self._readonly)
            with contextlib.suppress(*ERRORS, OSError):
                self._db.close()
            self._db = fresh

    @staticmethod
    def _serve(url: JournalUrl, busy_timeout: float, *, readonly: bool) -> Connection:
        """Connect to a journal's server, or raise `JournalError` naming it (never its password)."""
        try:
            return open_server(url, busy_timeout, readonly=readonly)
        except ImportError as exc:
            msg = (
                f"cannot use the run journal {url}: a PostgreSQL journal needs psycopg;"
                " install adws[postgres]"
            )
            raise JournalError(msg) from exc
        except ERRORS as exc:
            msg = (
                f"cannot use the run journal {url}: {exc}; check the server and the URL,"
                " or point --journal elsewhere"
            )
            raise JournalError(msg) from None

    def run_inputs(self, run_id: str) -> str:
        """Return a run's recorded inputs, encoded (a batch reads them when a worker takes it)."""
        rows = self._read("SELECT inputs FROM run_inputs WHERE run_id = ?", (run_id,), plain=True)
        return str(rows[0][0]) if rows else encode_context(WorkflowContext())

    def add_inputs(self, run_id: str, extra: Mapping[str, object]) -> None:
        """Add inputs given when resuming to the run's own, so a later resume has them too."""
        with self.transaction() as db:
            row = db.execute("SELECT inputs FROM run_inputs WHERE run_id = ?", (run_id,)).fetchone()
            merged = {**decode_context(row["inputs"]).inputs, **extra}
            encoded = encode_context(WorkflowContext(inputs=merged))
            db.execute("UPDATE run_inputs SET inputs = ? WHERE run_id = ?", (encoded, run_id))

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """Hold the connection in one write transaction: committed at the end, else rolled back."""
        with self._lock, immediate(self._db) as db:
            yield db

    def vacuum(self) -> None:
        """Give the space of deleted rows back to the file system."""
        with self._lock:
            self._db.execute("VACUUM")

    def _read(self, sql: str, params: Sequence[object] = (), *, plain: bool = False) -> list[Any]:
        """Fetch rows (`plain`: tuples, cheaper when there are thousands), or say why not."""
        try:
            with self._lock:
                return self._db.fetch(sql, params, plain=plain)
        except ERRORS as exc:
            msg = f"cannot read the run journal {self.path}: {exc}"
            raise JournalError(msg) from exc

    def query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """Fetch rows as tuples, for the journal's reports (`adws cost`)."""
        return self._read(sql, params, plain=True)

    @functools.cached_property
    def records_usage(self) -> bool:
        """Tell whether attempts carry usage (schema 5; a journal read, never migrated, may not)."""
        return "cost_usd" in self._attempt_fields

    @functools.cached_property
    def _attempt_fields(self) -> frozenset[str]:
        """Name the `attempts` columns, asked once per journal."""
        return self.columns("attempts")

    def columns(self, table: str) -> frozenset[str]:
        """Name a table's columns (none: no such table; a journal read, never migrated)."""
        try:
            with self._lock:
                return self._db.columns(table)
        except ERRORS as exc:
            msg = f"cannot read the run journal {self.path}: {exc}"
            raise JournalError(msg) from exc

    # -- writing ---------------------------------------------------------------

    def apply(self, statements: Sequence[Statement]) -> None:
        """Run several statements in one transaction: one event, all or nothing.

        On a server, the statements and their transaction go in one round
        trip (see `adws.journal.store.postgres.PostgresConnection.apply`).
        """
        with self._lock:
            self._db.apply(statements)

    def write(self, sql: str, params: Sequence[object]) -> None:
        """Run one statement in its own transaction."""
        with self.transaction() as db:
            db.execute(sql, params)

    def claim(
        self,
        run_id: str,
        *,
        seen: Seen,
        force: bool = False,
        then: Callable[[str], Sequence[Guarded]] | None = None,
        take: bool = True,
    ) -> str | None:
        """Take a run for this process to resume, atomically; say why not otherwise.

        The checks and the update happen in one write transaction, so of
        several `adws resume RUN` started at once exactly one gets the run.
        `seen` is what the caller read of the run before deciding what to do
        with it (`RunRecord.seen`; required: every claim compares): when the
        run's status, resume count or last attempt changed since, the claim
        is refused (compare-and-set), force or not. A run another live
        process on this host is running is refused unless `force`, and so is
        a run (queued or not) of a batch that a live `adws batch` holds: the
        batch runs it.

        `then`, given the time of the claim, returns statements recorded in
        the same transaction (a decision, a new fingerprint baseline), each
        with the refusal to give when it changes no row (None: no need to):
        a refused claim records nothing. The run's recorded child process
        groups are cleared: the caller has dealt with them (see
        `RunRecord.children`). Without `take`, only `then` is recorded, with
        the same checks, and the run stays as it is (a decision on a run of
        another host, which continues it).
        """
        try:
            with self.transaction() as db:
                refused = self._claimable(db, run_id, force=force, seen=seen)
                if refused is not None:
                    return refused
                if take:
                    db.execute(
                        "UPDATE runs SET status = 'running', pid = ?, host = ?, children = NULL,"
                        " holder_started = ? WHERE run_id = ?",
                        (os.getpid(), socket.gethostname(), started_here(), run_id),
                    )
                if then is not None:
                    _record(db, then(io_ops.utc_now()))
        except _RefusedError as exc:  # the transaction rolled back: nothing was recorded
            return str(exc)
        return None

    def changed(self, run_id: str, seen: Seen) -> str | None:
        """Say how a run changed since a command read it as `seen` (None: it did not)."""
        try:
            with self._lock:
                return changed_since(self._db, run_id, seen)
        except ERRORS as exc:
            msg = f"cannot read the run journal {self.path}: {exc}"
            raise JournalError(msg) from exc

    @staticmethod
    def _claimable(db: Connection, run_id: str, *, force: bool, seen: Seen) -> str | None:
        """Say why a run may not be claimed now, inside the claim's transaction (None: it may)."""
        changed = changed_since(db, run_id, seen)
        if changed is not None:
            return changed
        sql = f"SELECT * FROM runs WHERE run_id = ?{db.locks_rows}"  # noqa: S608 - a fixed clause
        row = db.execute(sql, (run_id,)).fetchone()
        record = run_from_row(row)
        holder = record.pid
        mine = holder == os.getpid() and record.host == socket.gethostname()
        batch = holder_of(db, column_of(row, "batch_id"))
        if batch is not None and not force:
            return (
                f"run {run_id} belongs to batch {row['batch_id']}, which process {batch[0]} "
                f"on {batch[1]} is running; wait for it to end (or stop it and run "
                f"`adws batch --resume {row['batch_id']}`)"
            )
        if record.status == "running" and not record.stale and not mine and not force:
            return (
                f"run {run_id} is being run by process {holder} on {record.host}; "
                "pass --force if it is not"
            )
        return None

    def record_children(self, run_id: str, groups: Sequence[int]) -> None:
        """Remember the process groups a run's current step has started (empty: none)."""
        children = json.dumps(list(groups)) if groups else None
        self.write("UPDATE runs SET children = ? WHERE run_id = ?", (children, run_id))

    def has_room(self) -> None:
        """Raise `JournalError` when a journal file's file system has no room for a step's record.

        SQLite on a full disk still takes some writes (a page it rewrites in
        place) and fails others (a new row), so the journal's own writes
        cannot tell before a step whether its end will be recorded: the free
        space can (`ROOM_BYTES`; root may use the blocks kept for it). A
        server's journal always has room here (its writes say otherwise).
        """
        if isinstance(self.path, JournalUrl):
            return
        found = os.statvfs(self.path.parent)
        blocks = found.f_bfree if os.geteuid() == 0 else found.f_bavail
        free = blocks * found.f_frsize
        if free < ROOM_BYTES:
            msg = f"database or disk is full: {free:,} bytes free for {self.path}"
            raise JournalError(msg)

    def mark(self, run_id: str, status: str) -> None:
        """Set a run's status (a second Ctrl-C marks the run interrupted on its way out)."""
        self.write(
            "UPDATE runs SET status = ?, finished = COALESCE(finished, ?) WHERE run_id = ?",
            (status, io_ops.utc_now(), run_id),
        )

    # -- reading ---------------------------------------------------------------

    def runs(
        self,
        *,
        workflow: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        batch: str | None = None,
    ) -> list[RunRecord]:
        """List runs, newest first, optionally filtered (by batch too, in line order)."""
        sql = f"SELECT runs.*{self._spent} FROM runs"  # noqa: S608 - fixed column names
        sql += " WHERE (? IS NULL OR workflow = ?) AND (? IS NULL OR status = ?)"
        params: list[object] = [workflow, workflow, status, status]
        if batch is not None:
            sql += " AND batch_id = ? ORDER BY line"
            params.append(batch)
        else:
            sql += " ORDER BY started DESC, rowid DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = self._read(sql, params)
        return [run_from_row(row) for row in rows]

    def find(self, run_id: str) -> RunRecord | str:
        """Return the run with this id (or unique id prefix), or why there is none.

        The record carries the id of the run's last attempt row, read in the
        same query as its status: what a claim compares (`RunRecord.seen`).
        """
        escaped = run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        last = ", (SELECT MAX(id) FROM attempts AS l WHERE l.run_id = runs.run_id) AS last_attempt"
        select = self._runs_select.replace(" FROM runs", last + " FROM runs", 1)
        sql = f"{select} WHERE run_id LIKE ? ESCAPE '\\' LIMIT 2"
        rows = self._read(sql, (escaped + "%",))
        if not rows:
            return f"no run {run_id!r} in {self.path}"
        if len(rows) > 1:
            return f"run id {run_id!r} is ambiguous in {self.path}; give more characters"
        return run_from_row(rows[0])

    def has_table(self, name: str) -> bool:
        """Tell whether the journal has a table (one read, never migrated, may lack newer ones).

        Asked once per table: tables are only ever added.
        """
        found = self._tables.get(name)
        if found is None:
            found = self._tables[name] = bool(self.columns(name))
        return found

    @functools.cached_property
    def _runs_select(self) -> str:
        """Select runs with their inputs (apart since schema 3); asked once per journal."""
        if not self.has_table("run_inputs"):  # a journal read, never migrated
            return "SELECT * FROM runs"
        return (
            f"SELECT runs.*, run_inputs.inputs AS stored_inputs{self._spent} FROM runs"  # noqa: S608 - fixed column names
            " LEFT JOIN run_inputs USING (run_id)"
        )

    @functools.cached_property
    def _spent(self) -> str:
        """Select each run's spend (its top-level attempts; branches are inside them).

        A correlated subquery reads only the listed runs' rows, through the
        `attempts_by_run` index; a journal never migrated to schema 5 has none.
        """
        if not self.records_usage:
            return ""
        mine = "FROM attempts AS a WHERE a.run_id = runs.run_id AND a.step NOT LIKE '%[%'"
        columns = (
            ("cost_usd", "spent_usd"),
            ("input_tokens", "spent_in"),
            ("output_tokens", "spent_out"),
            ("turns", "spent_turns"),
        )
        sums = ((self.safe_sum(f"a.{name}"), alias) for name, alias in columns)
        return "".join(f", (SELECT {total} {mine}) AS {alias}" for total, alias in sums)

    def safe_sum(self, column: str) -> str:
        """Say the sum of a column as a float, NULL when no row has it, that never overflows."""
        return f"CASE WHEN COUNT({column}) > 0 THEN {self._db.total(column)} END"

    def attempts(self, run_id: str, *, after: int = 0) -> list[AttemptRecord]:
        """List a run's recorded attempts and skips, in the order they happened.

        `after` leaves out the rows up to that id (those a snapshot covers).
        """
        columns = self._attempt_columns
        sql = f"SELECT {columns} FROM attempts WHERE run_id = ? AND id > ? ORDER BY id"  # noqa: S608 - fixed column names
        return [attempt_from_row(row) for row in self._read(sql, (run_id, after), plain=True)]

    @functools.cached_property
    def _attempt_columns(self) -> str:
        """Name the columns to read, asked once per journal: one never migrated may lack some."""
        newer = ", ".join(
            name if name in self._attempt_fields else f"NULL AS {name}"
            for name in (
                "outputs",
                "fingerprint",
                "cost_usd",
                "input_tokens",
                "output_tokens",
                "turns",
                "model",
                "session_ids",
                "started",
            )
        )
        return f"step, step_index, attempt, status, recorded, seconds, error, context, {newer}"
