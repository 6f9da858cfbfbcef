"""Journal v2: per-step storage, threads, read-only access, pruning, a v1 journal resumed."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from socket import gethostname

import pytest

from adws import Step, Workflow, WorkflowContext, run_workflow
from adws.cli import main
from adws.journal import MIGRATIONS, Journal, JournalError, JournalObserver
from adws.journal.store.sqlite import WORDS
from tests.cli.test_cli_runs import RESUMABLE
from tests.conftest import REPO, Recorder


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "resumable.py").write_text(RESUMABLE, encoding="utf-8")
    return in_tmp


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object]]:
    code = main([*argv, "--json", "-q"])
    return code, json.loads(capsys.readouterr().out)


def test_a_step_row_holds_only_the_outputs_that_step_promoted(tmp_path: Path) -> None:
    """Storage grows with what the run produced, not with steps x context."""
    journal = Journal(tmp_path / "runs.db")
    big = "x" * 100_000
    rec = Recorder()
    steps = tuple(Step(f"s{i}", rec.ok(f"s{i}", **{f"k{i}": i})) for i in range(50))
    run_workflow(
        Workflow("w", steps),
        WorkflowContext(inputs={"big": big}),
        observers=[JournalObserver(journal, "f")],
        run_id="r",
    )
    rows = sqlite3.connect(tmp_path / "runs.db").execute(
        "SELECT outputs, context FROM attempts WHERE run_id = 'r' ORDER BY id"
    )
    stored = [(outputs, context) for outputs, context in rows]
    assert stored == [(f'{{"k{i}":{i}}}', None) for i in range(50)]


def test_eight_threads_sharing_one_journal_lose_nothing(journal_at: str) -> None:
    journal = Journal(journal_at)
    rec = Recorder()
    workflow = Workflow(
        "w", tuple(Step(f"s{i}", rec.ok(f"s{i}", **{f"k{i}": i})) for i in range(5))
    )
    failures: list[BaseException] = []

    def one_run(n: int) -> None:
        try:
            run_workflow(workflow, observers=[JournalObserver(journal, "f")], run_id=f"run{n}")
        except BaseException as exc:  # noqa: BLE001 - the test reports any
            failures.append(exc)

    threads = [threading.Thread(target=one_run, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    assert sorted(run.status for run in journal.runs()) == ["succeeded"] * 8
    assert all(len(journal.attempts(f"run{n}")) == 5 for n in range(8))


def v1_journal(
    path: Path, inputs: dict[str, object], contexts: list[tuple[str, dict[str, object]]]
) -> None:
    """Write a journal as adws wrote it before per-step storage (schema 1)."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for statement in MIGRATIONS[0]:
        db.execute(statement.format_map(WORDS))
    db.execute("INSERT INTO schema_version (version) VALUES (1)")
    db.execute(
        "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started, pid, host)"
        " VALUES ('old1', 'pipeline', 'f', 'failed', ?, ?, '2026-01-01T00:00:00+00:00', 1, ?)",
        # This host's: a run of another host is resumed there (or with --here).
        (json.dumps(["fetch", "build", "ship"]), json.dumps({"inputs": inputs}), gethostname()),
    )
    db.execute(
        "INSERT INTO attempts (run_id, step, step_index, attempt, status, recorded, seconds)"
        " VALUES ('old1', 'gone', 9, 0, 'skipped:condition', 'then', 0.0)"
    )
    for index, (step, context) in enumerate(contexts):
        db.execute(
            "INSERT INTO attempts (run_id, step, step_index, attempt, status, recorded, seconds,"
            " context) VALUES ('old1', ?, ?, 1, 'succeeded', 'then', 0.1, ?)",
            (step, index, json.dumps({"inputs": context, "outputs": {}, "feedback": []})),
        )
    db.execute(
        "INSERT INTO attempts (run_id, step, step_index, attempt, status, recorded, seconds,"
        " error) VALUES ('old1', 'build', 1, 1, 'failed', 'then', 0.1, ?)",
        (
            json.dumps(
                {"step_name": "build", "error_type": "ShellFailed", "message": "m", "context": {}}
            ),
        ),
    )
    db.commit()
    db.close()


def test_a_v1_journal_is_migrated_and_its_run_resumed(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / ".adws").mkdir()
    v1_journal(
        project / ".adws" / "runs.db",
        {"seed": "s"},
        [("fetch", {"seed": "s", "data": "s-fetched"})],
    )
    (project / "fixed").touch()
    assert main(["resume", "old1", "--plan"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "  1. fetch: kept",
        "  2. build: to run",
        "  3. ship: to run",
        "a resume starts at build",
        "kept 1 step, $0.00 not spent again",
        "to finish: no estimate: no history",
        "options: none",
    ]
    code, resumed = run_json(["resume", "old1"], capsys)
    assert (code, resumed["inputs"]["shipped"]) == (0, "s-fetched-built-shipped")  # type: ignore[index]
    assert (project / "calls.log").read_text().split() == ["build", "ship"]


def test_inputs_given_on_resume_are_kept_for_a_later_resume(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, stuck = run_json(["run", "blocker", "-i", "seed=s"], capsys)
    journal = Journal(project / ".adws" / "runs.db")
    journal.add_inputs(str(stuck["run_id"]), {"answer": "42"})
    run = journal.find(str(stuck["run_id"]))
    assert not isinstance(run, str)
    assert dict(run.inputs().inputs) == {"seed": "s", "answer": "42"}


def test_prune_deletes_old_finished_runs_and_keeps_running_ones(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "fixed").touch()
    ids = [
        str(run_json(["run", "pipeline", "-i", f"seed={n}"], capsys)[1]["run_id"]) for n in range(4)
    ]
    journal = Journal(project / ".adws" / "runs.db")
    journal.write(
        "UPDATE runs SET started = '2000-01-01T00:00:00+00:00' WHERE run_id = ?", (ids[0],)
    )
    journal.write(
        "UPDATE runs SET status = 'running', started = '2000-01-01' WHERE run_id = ?", (ids[1],)
    )
    assert main(["runs", "--prune", "--older-than", "30"]) == 0
    assert capsys.readouterr().err == "deleted 1 run from .adws/runs.db\n"
    assert sorted(run.run_id for run in journal.runs()) == sorted(ids[1:])
    assert journal.attempts(ids[0]) == []
    assert main(["runs", "--prune", "--keep", "1"]) == 0
    assert capsys.readouterr().err == "deleted 1 run from .adws/runs.db\n"
    assert sorted(run.run_id for run in journal.runs()) == sorted([ids[1], ids[3]])


def test_prune_without_a_limit_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_json(["run", "pipeline", "-i", "seed=s"], capsys)
    assert main(["runs", "--prune"]) == 2
    assert capsys.readouterr().err == "adws: error: --prune needs --older-than DAYS or --keep N\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--keep", "-1"], "argument --keep: expected a whole number of at least 0, got '-1'"),
        (
            ["--keep", str(2**63)],
            f"argument --keep: expected a whole number of at least 0, got '{2**63}'",
        ),
        (
            ["--limit", "1" * 30],
            f"argument --limit: expected a whole number of at least 0, got '{'1' * 30}'",
        ),
        (["--limit", "²"], "argument --limit: expected a whole number of at least 0, got '²'"),
        *(
            (
                ["--older-than", days],
                f"argument --older-than: expected a number of days from 0 to 700,000, got '{days}'",
            )
            for days in ("-2", "nan", "inf", "1e308", "soon")
        ),
    ],
)
def test_impossible_numbers_for_prune_and_limit_are_usage_errors_not_tracebacks(
    project: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["runs", "--prune", *argv]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"adws runs: error: {message}"


def test_the_oldest_cutoff_prunes_nothing_and_does_not_overflow(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_json(["run", "pipeline", "-i", "seed=s"], capsys)
    assert main(["runs", "--prune", "--older-than", "700000"]) == 0
    assert capsys.readouterr().err == "deleted 0 runs from .adws/runs.db\n"


def test_status_mermaid_colours_the_diagram_by_what_happened(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, failed = run_json(["run", "slow", "-i", "seed=s"], capsys)
    assert main(["status", str(failed["run_id"]), "--mermaid"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "flowchart TD"
    assert lines[-4:] == [
        "    class fetch succeeded",
        "    class build failed",
        "    class ship skipped",
        "    class cleanup succeeded",
    ]
    assert "    classDef failed fill:#fbd5d5,stroke:#c62828" in lines
    journal = Journal(project / ".adws" / "runs.db")
    journal.write("DELETE FROM attempts WHERE step = 'ship'", ())
    assert main(["status", str(failed["run_id"]), "--mermaid"]) == 0
    assert "    class ship not_run" in capsys.readouterr().out.splitlines()


def test_a_journal_the_user_cannot_write_can_still_be_read(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`runs`, `status` and `resume --plan` as another user, on a file and folder they cannot write."""
    _, failed = run_json(["run", "pipeline", "-i", "seed=s"], capsys)
    folder = project / ".adws"
    Journal(folder / "runs.db").close()
    folder.chmod(0o555)
    (folder / "runs.db").chmod(0o444)
    project.chmod(0o755)
    before = sorted(path.name for path in folder.iterdir())
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("ADWS_JOURNAL", None)
    # Root writes anything; without its capabilities it obeys file modes like any user.
    drop = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"] if os.geteuid() == 0 else []
    if drop and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv to drop root's capabilities")
    for argv in (
        ["runs"],
        ["status", str(failed["run_id"])],
        ["resume", str(failed["run_id"]), "--plan"],
    ):
        done = subprocess.run(
            [*drop, sys.executable, "-m", "adws", *argv],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, (argv, done.stderr)
        assert str(failed["run_id"]) in done.stdout
    assert sorted(path.name for path in folder.iterdir()) == before
    folder.chmod(0o755)


def test_a_read_only_journal_from_a_newer_adws_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    Journal(path).close()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO schema_version (version) VALUES (99)")
    db.commit()
    db.close()
    known = len(MIGRATIONS)
    with pytest.raises(
        JournalError, match=rf"written by a newer adws \(schema 99, this one knows {known}\)"
    ):
        Journal(path, readonly=True)


def test_a_step_skipped_by_its_condition_adds_nothing_on_resume(journal_at: str) -> None:
    from adws.journal import resume_point  # noqa: PLC0415 - the one test of the function alone

    journal = Journal(journal_at)
    rec = Recorder()
    workflow = Workflow(
        "w",
        (
            Step("a", rec.ok("a", x=1)),
            Step("skip", rec.ok("skip"), when=lambda _ctx: False),
            Step("b", rec.fail("b")),
        ),
    )
    run_workflow(
        workflow,
        WorkflowContext(inputs={"seed": 0}),
        observers=[JournalObserver(journal, "f")],
        run_id="r",
    )
    found = journal.find("r")
    assert not isinstance(found, str)
    start = found.inputs()
    assert resume_point(("a", "skip", "b"), journal.attempts("r"), start) == (
        "b",
        WorkflowContext(inputs={"seed": 0, "x": 1}),
    )


def test_a_retried_attempt_does_not_colour_the_diagram() -> None:
    from adws.journal import AttemptRecord  # noqa: PLC0415 - records built by hand
    from adws.render import step_outcomes  # noqa: PLC0415 - as above

    records = [
        AttemptRecord("a", 0, 1, "retried", "t", 0.0, None, None),
        AttemptRecord("a", 0, 2, "succeeded", "t", 0.0, None, None),
        AttemptRecord("b", 1, 0, "skipped:halted", "t", 0.0, None, None),
    ]
    assert step_outcomes(records) == {"a": "succeeded", "b": "skipped"}


def test_a_journal_whose_attempts_cannot_be_read_says_so(journal_at: str) -> None:
    journal = Journal(journal_at)
    journal.write("DROP TABLE attempts", ())
    with pytest.raises(
        JournalError, match=r"cannot read the run journal .*: (no such table: |relation \")attempts"
    ):
        journal.attempts("r")


def test_a_copied_journal_with_its_wal_but_no_shm_shows_every_run(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CI artifact of `.adws/`: the runs still in the WAL are read, in a folder no one writes."""
    journal = Journal(project / ".adws" / "runs.db")
    journal.write("PRAGMA wal_autocheckpoint = 0", ())
    run_json(["run", "pipeline", "-i", "seed=s"], capsys)
    artifact = project / "artifact"
    artifact.mkdir()
    for name in ("runs.db", "runs.db-wal"):
        shutil.copyfile(project / ".adws" / name, artifact / name)
    journal.close()
    assert (artifact / "runs.db-wal").stat().st_size > 0
    artifact.chmod(0o555)
    drop = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"] if os.geteuid() == 0 else []
    if drop and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv to drop root's capabilities")
    env = {**os.environ, "PYTHONPATH": str(REPO), "ADWS_JOURNAL": str(artifact / "runs.db")}
    done = subprocess.run(
        [*drop, sys.executable, "-m", "adws", "runs", "--json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    artifact.chmod(0o755)
    assert (done.returncode, [run["workflow"] for run in json.loads(done.stdout)]) == (
        0,
        ["pipeline"],
    )
    assert sorted(path.name for path in artifact.iterdir()) == ["runs.db", "runs.db-wal"]
