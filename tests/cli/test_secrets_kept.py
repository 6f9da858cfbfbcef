"""Secrets stay home: no step's process sees the journal's password or adws's tokens.

As the red team found it: `adws worker` put the team journal's URL (its
password) in `ADWS_JOURNAL` for each held run, and every agent and shell
step inherited it. Here a real worker (and a plain `adws run`) runs a
workflow whose agent and shell steps dump their whole environment, on a
real PostgreSQL server and on SQLite; the password and the tokens are then
searched for in every step's environment, every output of every process
and every byte of the journal. A step that names a variable in `env_pass`
sees it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from adws.journal import Journal
from adws.journal.store.backend import is_url
from tests.conftest import REPO

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow

PG_SECRET = "pg-secret-9c1e"  # noqa: S105 - a fake, searched for
PASSED = "passed-token-4b2d"

FLOWS = """
from adws import CommandAgent, OutputContract, Workflow, agent_step, shell_step

DUMP = "env > envs/{}.txt; echo done"

leaky = Workflow(
    "leaky",
    (
        shell_step("shell", DUMP.format("shell")),
        shell_step("argv", ["sh", "-c", DUMP.format("argv")]),
        agent_step(
            "agent",
            prompt="anything",
            agent=CommandAgent(["sh", "-c", "env > envs/agent.txt; env; echo STATUS: done"]),
        ),
        agent_step(
            "asked",
            prompt="anything",
            contract=OutputContract(expects=("TOKEN",)),
            agent=CommandAgent(
                ["sh", "-c", 'printf "STATUS: done\\nTOKEN: %s\\n" "$GH_TOKEN"'],
                env_pass=["GH_TOKEN"],
            ),
        ),
        shell_step("named", 'printf %s "$GITHUB_TOKEN"', env_pass=("GITHUB_TOKEN",)),
    ),
)
"""


def _environment(journal: str) -> dict[str, str]:
    env = {
        **os.environ,
        "ADWS_JOURNAL": journal,
        "PGPASSWORD": PG_SECRET,
        "PGHOST": "127.0.0.1",
        "GH_TOKEN": PASSED,
        "GITHUB_TOKEN": PASSED,
        "PYTHONPATH": str(REPO),
    }
    env.pop("ADWS_WORKFLOWS", None)
    return env


def _adws(project: Path, journal: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "adws", *argv],
        cwd=project,
        env=_environment(journal),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _journal_bytes(journal: str) -> bytes:
    """Every byte the journal holds: the SQLite files, or every row of every table as text."""
    if not is_url(journal):
        from pathlib import Path  # noqa: PLC0415 - only the SQLite side reads files

        found = [Path(journal + tail) for tail in ("", "-wal", "-shm")]
        with sqlite3.connect(journal) as db:
            tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master")]
        return (
            b"".join(path.read_bytes() for path in found if path.exists()) + repr(tables).encode()
        )
    import psycopg  # noqa: PLC0415 - only the PostgreSQL side needs it

    with psycopg.connect(journal) as db:
        tables = [
            row[0]
            for row in db.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
        ]
        rows = [db.execute(f"SELECT t::text FROM {name} t").fetchall() for name in tables]  # noqa: S608 - names from the catalogue
    assert "runs" in tables
    return repr(rows).encode()


def _secrets(journal: str) -> list[str]:
    password = journal.rpartition("@")[0].rpartition(":")[2] if is_url(journal) else None
    return [PG_SECRET, *([] if password is None else [password])]


@pytest.mark.parametrize("way", ["worker", "run"])
def test_no_step_sees_the_journal_url_pg_variables_or_tokens_unless_it_names_them(
    tmp_path: Path, journal_at: str, way: str
) -> None:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS)
    (tmp_path / "envs").mkdir()
    if way == "worker":
        submitted = _adws(tmp_path, journal_at, "submit", "leaky", "--json")
        assert submitted.returncode == 0, submitted.stderr
        run_id = json.loads(submitted.stdout)["run_id"]
        ran = _adws(tmp_path, journal_at, "worker", "--once", "--poll", "0.2")
        assert (ran.returncode, ran.stdout) == (0, f"{run_id} leaky: succeeded (exit 0)\n")
    else:
        ran = _adws(tmp_path, journal_at, "run", "leaky", "--json")
        assert ran.returncode == 0, ran.stderr
        run_id = json.loads(ran.stdout)["run_id"]
    shown = _adws(tmp_path, journal_at, "status", run_id, "--json")
    report = _adws(tmp_path, journal_at, "report", run_id)
    assert (shown.returncode, report.returncode) == (0, 0)
    envs = {path.stem: path.read_text() for path in (tmp_path / "envs").iterdir()}
    assert sorted(envs) == ["agent", "argv", "shell"]
    for env in envs.values():
        names = {line.partition("=")[0] for line in env.splitlines()}
        assert "PATH" in names
        assert not {"ADWS_JOURNAL", "PGPASSWORD", "PGHOST", "GH_TOKEN", "GITHUB_TOKEN"} & names
    attempts = {attempt.step: attempt.outputs() for attempt in Journal(journal_at).attempts(run_id)}
    assert (attempts["asked"]["token"], attempts["named"]["named_stdout"]) == (PASSED, PASSED)  # type: ignore[index] # both succeeded
    said = "".join(
        [*envs.values(), ran.stdout, ran.stderr, shown.stdout, shown.stderr, report.stdout]
    )
    journaled = _journal_bytes(journal_at)
    for secret in _secrets(journal_at):
        assert secret not in said
        assert secret.encode() not in journaled


MALFORMED = "postgresql://u:s3cr3t-pw@[::1:54329/x"
SAID = (
    "adws: error: cannot use the run journal postgresql://u:***@[::1:54329/x: end of string "
    'reached when looking for matching "]" in IPv6 host address in URI: '
    '"postgresql://u:***@[::1:54329/x"; check the server and the URL, or point --journal '
    "elsewhere\n"
)


@pytest.mark.parametrize(
    "argv",
    [("status", "r1"), ("runs",), ("workers",), ("run", "leaky"), ("report", "r1"), ("cost",)],
)
def test_a_malformed_journal_url_is_said_redacted_never_in_a_traceback(
    tmp_path: Path, argv: tuple[str, ...]
) -> None:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS)
    given = _adws(tmp_path, "unused.db", *argv, "--journal", MALFORMED)
    from_env = _adws(tmp_path, MALFORMED, *argv)
    assert (given.returncode, given.stdout, given.stderr) == (2, "", SAID)
    assert (from_env.returncode, from_env.stdout, from_env.stderr) == (2, "", SAID)
