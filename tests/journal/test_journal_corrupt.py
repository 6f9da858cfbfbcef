"""A corrupt or forged journal row: what can be read is shown, the bad row named, never a traceback."""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

import pytest

from adws.cli import main
from tests.cli.test_cli_runs import RESUMABLE
from tests.conftest import start_adws

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "resumable.py").write_text(RESUMABLE)
    return in_tmp


def two_runs(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """Record a good run and a failed one; return their ids."""
    ids = []
    for _ in range(2):
        main(["run", "pipeline", "-i", "seed=s", "--json", "-q"])
        ids.append(str(json.loads(capsys.readouterr().out)["run_id"]))
    return ids[0], ids[1]


def spoil(project: Path, sql: str, *params: object) -> None:
    db = sqlite3.connect(project / ".adws" / "runs.db")
    with db:
        db.execute(sql, params)
    db.close()


SPOILED_RUNS = [
    ("UPDATE runs SET steps = 'not json' WHERE run_id = ?", "steps is not a JSON list of str"),
    ("UPDATE runs SET steps = '[1, 2]' WHERE run_id = ?", "steps is not a JSON list of str"),
    ("UPDATE runs SET error = '{\"x\": 1}' WHERE run_id = ?", "error is not readable (KeyError"),
    ("UPDATE runs SET error = '[1' WHERE run_id = ?", "error is not readable (JSONDecodeError"),
    ("UPDATE runs SET children = '{' WHERE run_id = ?", "children is not a JSON list of int"),
    (
        "UPDATE runs SET children = '[4611686018427387904]' WHERE run_id = ?",
        "children holds a number no process group has",
    ),
    ("UPDATE runs SET pid = 4611686018427387904 WHERE run_id = ?", f"pid {2**62} is no process id"),
]


@pytest.mark.parametrize(("sql", "problem"), SPOILED_RUNS)
def test_one_bad_run_row_is_named_and_the_others_still_listed(
    project: Path, capsys: pytest.CaptureFixture[str], sql: str, problem: str
) -> None:
    good, bad = two_runs(capsys)
    spoil(project, sql, bad)
    assert main(["runs"]) == 1
    captured = capsys.readouterr()
    assert good in captured.out
    assert bad in captured.out
    assert captured.err.splitlines()[0] == (
        "adws: the journal .adws/runs.db holds rows it cannot read:"
    )
    assert captured.err.splitlines()[1].startswith(f"  run {bad}: {problem}")
    assert main(["runs", "--json"]) == 1
    listed = json.loads(capsys.readouterr().out)
    assert [run["problems"] != [] for run in listed] == [True, False]
    assert main(["status", bad]) == 1
    assert f"run {bad} · pipeline" in capsys.readouterr().out
    assert main(["resume", bad, "--plan"]) == 1
    capsys.readouterr()
    assert main(["resume", bad]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"adws: error: run {bad} cannot be resumed from rows the journal cannot read"
    )


def test_a_bad_attempt_row_is_named_by_status(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, run_id = two_runs(capsys)
    spoil(project, "UPDATE attempts SET error = 'oops' WHERE run_id = ? AND step = 'build'", run_id)
    assert main(["status", run_id]) == 1
    captured = capsys.readouterr()
    assert "build: failed" in captured.out
    assert captured.err.splitlines()[1].startswith(
        f"  attempts row of run {run_id}, step build, attempt 1: error is not readable"
        " (JSONDecodeError"
    )


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        (
            "UPDATE run_inputs SET inputs = '[' || inputs WHERE run_id = ?",
            "the inputs in the journal are not JSON",
        ),
        (
            "UPDATE run_inputs SET inputs = '[1]' WHERE run_id = ?",
            "the inputs in the journal are not a JSON object",
        ),
        (
            "UPDATE attempts SET outputs = '{}, {\"data\": 1}' WHERE run_id = ? AND step = 'fetch'",
            "a step's outputs in the journal are not JSON",
        ),
    ],
)
def test_a_run_whose_stored_values_are_unreadable_is_not_resumed(
    project: Path, capsys: pytest.CaptureFixture[str], sql: str, problem: str
) -> None:
    _, run_id = two_runs(capsys)
    spoil(project, sql, run_id)
    assert main(["resume", run_id]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"adws: error: run {run_id} cannot be resumed: {problem}")
    assert err.endswith("(.adws/runs.db)\n")


def test_adws_runs_in_its_own_process_names_the_bad_row(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, bad = two_runs(capsys)
    spoil(project, "UPDATE runs SET steps = 'x' WHERE run_id = ?", bad)
    process = start_adws(project, "runs", env={"ADWS_JOURNAL": str(project / ".adws" / "runs.db")})
    out, err = process.communicate(timeout=60)
    assert (process.returncode, out.count("pipeline"), "Traceback" in err) == (1, 2, False)
    assert f"run {bad}: steps is not a JSON list of str: 'x'" in err
