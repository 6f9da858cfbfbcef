"""The journal on a real PostgreSQL server: every command works on it, and no output shows its password."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import psycopg
import pytest
from returns.io import IOSuccess

from adws import Step, Workflow
from adws.journal import Journal, JournalError, prune
from adws.journal.store.backend import BackendError, JournalUrl, redact, where
from adws.testing import run
from tests.conftest import start_adws

if TYPE_CHECKING:
    from pathlib import Path

    from tests.postgres import Server

FLOWS = """
from returns.io import IOSuccess

from adws import Step, Workflow, approval_step


def greet(ctx):
    return IOSuccess(ctx.merge_outputs({"greeting": "hello " + ctx.inputs["name"]}))


hello = Workflow("hello", (Step("greet", greet, reads=("name",), writes=("greeting",)),))
gated = Workflow("gated", (approval_step("ship", message="ship it?"), Step("greet", greet)))
"""


def adws(project: Path, journal: str, *argv: str) -> tuple[int, str, str]:
    process = start_adws(project, *argv, env={"ADWS_JOURNAL": journal})
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS)
    return tmp_path


def test_every_command_works_on_a_server_and_none_shows_its_password(
    project: Path, postgres_url: str, postgres_server: Server
) -> None:
    code, out, err = adws(project, postgres_url, "run", "hello", "-i", "name=ann", "--json")
    assert (code, json.loads(out)["status"]) == (0, "succeeded"), err
    run_id = json.loads(out)["run_id"]
    code, out, err = adws(project, postgres_url, "run", "gated", "-i", "name=bo")
    assert code == 3, err
    seen = [out, err]
    for argv in (
        ("runs",),
        ("status", run_id),
        ("status", run_id, "--json"),
        ("report", run_id, "-o", "-"),
        ("cost",),
        ("approvals",),
        ("resume", run_id, "--plan"),
    ):
        code, out, err = adws(project, postgres_url, *argv)
        assert code == 0, (argv, err)
        seen += [out, err]
    code, out, err = adws(project, postgres_url, "report", run_id)
    assert (code, (project / ".adws" / "reports" / f"{run_id}.html").exists()) == (0, True), err
    seen += [out, err]
    shown = "\n".join(seen)
    assert "hello ann" in shown
    assert "ship it?" in shown
    assert postgres_server.password not in shown
    assert [
        row[0] for row in Journal(postgres_url).query("SELECT status FROM runs ORDER BY rowid")
    ] == [
        "succeeded",
        "waiting",
    ]


def test_a_wrong_password_is_refused_and_never_shown(
    project: Path, postgres_server: Server
) -> None:
    url = postgres_server.url(password="not-the-pass%40word")  # noqa: S106 - a wrong one
    code, out, err = adws(project, url, "runs")
    assert code == 2
    assert "password authentication failed" in err
    assert "not-the-pass" not in out + err
    assert f"postgresql://postgres:***@127.0.0.1:{postgres_server.port}/postgres" in err
    with pytest.raises(JournalError) as raised:
        Journal(url)
    assert "not-the-pass" not in str(raised.value) + repr(raised.value.__cause__)


def test_a_journal_url_never_shows_its_password() -> None:
    url = JournalUrl("postgresql://team:pa55@db/adws?password=pa55&sslmode=require")
    shown = "postgresql://team:***@db/adws?password=***&sslmode=require"
    assert (str(url), f"{url}", repr(url)) == (shown, shown, f"JournalUrl({shown!r})")
    assert where("postgres://db/adws") == JournalUrl("postgres://db/adws")
    assert redact("postgresql://team@db/adws") == "postgresql://team@db/adws"


def _drop_connections(server: Server, url: str) -> None:
    with psycopg.connect(server.url(), autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
            (url.rsplit("/", 1)[1],),
        )


def test_a_dropped_connection_is_opened_again_for_the_next_read(
    postgres_url: str, postgres_server: Server
) -> None:
    journal = Journal(postgres_url)
    _drop_connections(postgres_server, postgres_url)
    assert journal.runs() == []
    _drop_connections(postgres_server, postgres_url)
    journal.write("INSERT INTO texts (hash, data) VALUES (?, ?)", ("h", b"d"))
    assert journal.query("SELECT hash, data FROM texts") == [("h", b"d")]


def test_a_transaction_the_connection_dropped_in_fails_and_records_nothing(
    postgres_url: str, postgres_server: Server
) -> None:
    journal = Journal(postgres_url)
    with (  # noqa: PT012 - the connection drops inside the transaction
        pytest.raises(BackendError, match=r"^terminating connection"),
        journal.transaction() as db,
    ):
        db.execute("INSERT INTO texts (hash, data) VALUES (?, ?)", ("h", b"d"))
        _drop_connections(postgres_server, postgres_url)
        db.execute("INSERT INTO texts (hash, data) VALUES (?, ?)", ("i", b"e"))
    assert journal.query("SELECT hash FROM texts") == []


def test_a_journal_opened_for_reading_on_a_server_writes_nothing(postgres_url: str) -> None:
    Journal(postgres_url).close()
    journal = Journal(postgres_url, readonly=True)
    with pytest.raises(Exception, match="read-only transaction"):
        journal.write("INSERT INTO texts (hash, data) VALUES (?, ?)", ("h", b"d"))
    assert journal.has_table("runs")
    assert not journal.has_table("nothing")


def test_an_empty_database_cannot_be_read_and_says_so(postgres_url: str) -> None:
    with pytest.raises(
        JournalError,
        match=r"^the run journal postgresql://postgres:\*\*\*@.* holds no runs yet ",
    ):
        Journal(postgres_url, readonly=True)


def test_a_server_journal_from_a_newer_adws_is_refused(postgres_url: str) -> None:
    journal = Journal(postgres_url)
    journal.write("INSERT INTO schema_version (version) VALUES (?)", (999,))
    with pytest.raises(JournalError, match="newer adws"):
        Journal(postgres_url)
    with pytest.raises(JournalError, match="newer adws"):
        Journal(postgres_url, readonly=True)


def test_a_journal_on_a_server_needs_the_postgres_extra(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Undone at the block's end, before the fixture drops the database with psycopg
    # (an autouse fixture's monkeypatch is torn down after postgres_url).
    with monkeypatch.context() as patched:
        patched.setitem(sys.modules, "psycopg", None)  # as if it were not installed
        with pytest.raises(JournalError, match=r"needs psycopg; install adws\[postgres\]$"):
            Journal(postgres_url)


def test_pruning_on_a_server_deletes_the_runs_and_rows_unpack(postgres_url: str) -> None:
    journal = Journal(postgres_url)
    report = run(Workflow("w", (Step("s", IOSuccess),)), journal=journal)
    assert prune(journal, keep=0) == 1
    assert journal.runs() == []
    [(run_id, status)] = [tuple(row) for row in journal._db.execute("SELECT 'r', 'ok'").fetchall()]
    assert (run_id, status, report.status) == ("r", "ok", "succeeded")


@pytest.mark.parametrize(
    "argv", [("runs",), ("runs", "--json"), ("status", "r1"), ("cost",), ("report", "r1")]
)
def test_a_read_command_on_a_fresh_database_says_it_holds_no_runs_yet(
    project: Path, postgres_url: str, argv: tuple[str, ...]
) -> None:
    code, out, err = adws(project, postgres_url, *argv)
    assert (code, out, err) == (
        2,
        "",
        (
            f"adws: error: the run journal {redact(postgres_url)} holds no runs yet (no adws "
            "command has written to this database); `adws run` or `adws submit` records runs "
            "there\n"
        ),
    )
    with psycopg.connect(postgres_url) as db:
        assert db.execute("SELECT to_regclass('schema_version')").fetchone() == (None,)
