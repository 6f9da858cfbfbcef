"""A write of the journal on a server is one round trip: one query, one transaction, all or nothing.

Round trips are counted on the wire, from libpq's own trace of the
connection: every message the client sends, every one the server answers.
"""

from __future__ import annotations

import contextlib
import string
from typing import TYPE_CHECKING

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from returns.io import IOSuccess

from adws import Step, Workflow, WorkflowContext, run_workflow
from adws.journal import Journal, JournalObserver
from adws.journal.store.backend import BackendError

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from returns.io import IOResult

    from adws.engine.errors import PipelineError
    from adws.journal.store.schema import Statement
    from tests.postgres import Server

STEPS = 10
TEXT = "INSERT INTO texts (hash, data) VALUES (?, ?)"


@contextlib.contextmanager
def traced(journal: Journal, folder: Path) -> Iterator[list[tuple[str, str]]]:
    """Trace the journal's connection; at the end, list its messages: (`F` or `B`, their type)."""
    messages: list[tuple[str, str]] = []
    pgconn = journal._db._db.pgconn  # type: ignore[attr-defined] # the server's connection
    with (folder / "trace").open("w") as log:
        pgconn.trace(log.fileno())
        pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            yield messages
        finally:
            pgconn.untrace()
    for line in (folder / "trace").read_text().splitlines():
        side, _, kind = line.split("\t")[:3]
        messages.append((side, kind.split(" ")[0]))


def sent(messages: list[tuple[str, str]]) -> list[str]:
    """Name what the client sent, in order."""
    return [kind for side, kind in messages if side == "F"]


def _count(i: int) -> Step:
    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOSuccess(ctx.merge_outputs({f"k{i}": i}))

    return Step(f"s{i}", run)


def test_each_write_of_a_run_is_one_round_trip_two_per_step(
    postgres_url: str, tmp_path: Path
) -> None:
    journal = Journal(postgres_url)
    workflow = Workflow("ten", tuple(_count(i) for i in range(1, STEPS + 1)))
    with traced(journal, tmp_path) as messages:
        run_workflow(workflow, WorkflowContext(), observers=[JournalObserver(journal, "fp")])
    # The run's start, each step's start (before it runs) and end, the run's end.
    assert sent(messages) == ["Query"] * (2 * STEPS + 2)
    assert [kind for side, kind in messages if kind == "ReadyForQuery"] == ["ReadyForQuery"] * (
        2 * STEPS + 2
    )
    rows = journal.query("SELECT step, status FROM attempts ORDER BY rowid")
    assert rows == [(f"s{i}", "succeeded") for i in range(1, STEPS + 1)]
    assert [run.status for run in journal.runs()] == ["succeeded"]


def test_a_write_of_several_statements_is_one_query(postgres_url: str, tmp_path: Path) -> None:
    journal = Journal(postgres_url)
    statements: list[Statement] = [(TEXT, (f"h{n}", b"d")) for n in range(5)]
    with traced(journal, tmp_path) as messages:
        journal.apply(statements)
    assert sent(messages) == ["Query"]
    assert journal.query("SELECT hash FROM texts ORDER BY hash") == [(f"h{n}",) for n in range(5)]


def test_a_write_of_no_statements_sends_nothing(postgres_url: str, tmp_path: Path) -> None:
    journal = Journal(postgres_url)
    with traced(journal, tmp_path) as messages:
        journal.apply([])
    assert messages == []


def test_a_statement_that_fails_rolls_back_the_whole_write_and_the_next_one_takes(
    postgres_url: str,
) -> None:
    journal = Journal(postgres_url)
    with pytest.raises(BackendError, match=r'^relation "no_such_table" does not exist'):
        journal.apply([(TEXT, ("h", b"d")), ("INSERT INTO no_such_table VALUES (?)", (1,))])
    assert journal.query("SELECT hash FROM texts") == []
    journal.apply([(TEXT, ("i", b"e"))])
    assert journal.query("SELECT hash, data FROM texts") == [("i", b"e")]


def test_a_write_after_the_server_closed_the_idle_connection_takes_on_a_new_one(
    postgres_url: str, postgres_server: Server
) -> None:
    journal = Journal(postgres_url)
    before = journal._db._db  # type: ignore[attr-defined] # the server's connection
    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
        # `wait`: the session is gone (its client was told so) when the call returns.
        admin.execute(
            "SELECT pg_terminate_backend(pid, 30000) FROM pg_stat_activity WHERE datname = %s",
            (postgres_url.rsplit("/", 1)[1],),
        )
    journal.apply([(TEXT, ("h", b"d")), (TEXT, ("i", b"e"))])
    assert journal._db._db is not before  # type: ignore[attr-defined] # opened again
    assert journal.query("SELECT hash FROM texts ORDER BY hash") == [("h",), ("i",)]


def test_a_write_whose_connection_breaks_in_flight_fails_and_the_next_takes_on_a_new_one(
    postgres_url: str,
) -> None:
    journal = Journal(postgres_url)
    with pytest.raises(BackendError, match=r"^terminating connection due to administrator command"):
        journal.apply([(TEXT, ("h", b"d")), ("SELECT pg_terminate_backend(pg_backend_pid())", ())])
    assert journal.query("SELECT hash FROM texts") == []
    journal.apply([(TEXT, ("i", b"e"))])
    assert journal.query("SELECT hash FROM texts") == [("i",)]


TEXTS = st.lists(
    st.text(st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]), max_size=8)
    | st.sampled_from([*"?%;'\"\\$", *string.whitespace, "$$", "--", "/*", "%s", "E'", "');"]),
    max_size=8,
).map("".join)
"""Texts a statement's quoting must survive: placeholders, quotes, comments, `;` (no NUL)."""


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=st.lists(st.tuples(TEXTS, st.binary(max_size=40)), min_size=1, max_size=4))
def test_any_text_or_bytes_written_together_reads_back_exactly(
    postgres_url: str, values: list[tuple[str, bytes]]
) -> None:
    journal = Journal(postgres_url)
    try:
        journal.apply([("DELETE FROM texts", ())])
        journal.apply([(TEXT, (f"{n}:{text}", data)) for n, (text, data) in enumerate(values)])
        rows = journal.query("SELECT hash, data FROM texts")
        assert sorted(rows) == sorted(
            (f"{n}:{text}", data) for n, (text, data) in enumerate(values)
        )
    finally:
        journal.close()
