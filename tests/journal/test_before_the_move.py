"""A journal written before the journal moved into folders (and lost its SQL translation) resumes.

The adws of the commit before the move (`BEFORE`, taken from this
repository's own history with `git archive`) runs a workflow that fails,
on a SQLite file and on a PostgreSQL server; today's adws, in another
process, opens that journal, lists the run and resumes it to success,
keeping the step that finished. Skipped where the history is not there
(a shallow clone).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from typing import TYPE_CHECKING

import pytest

from tests.conftest import REPO

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow

BEFORE = "b2c643ae2b07bd628041019ab54248f82221f298"
"""The last commit before `adws.journal` was split into records, store and identity."""

FLOWS = """
import os

from returns.io import IOFailure, IOSuccess

from adws import PipelineError, Step, Workflow


def first(ctx):
    with open("first.log", "a") as log:
        log.write("ran\\n")
    return IOSuccess(ctx.merge_outputs({"made": ctx.inputs["n"] + "!"}))


def second(ctx):
    if not os.path.exists("fixed"):
        return IOFailure(PipelineError("second", "Failed", "not fixed yet"))
    return IOSuccess(ctx.merge_outputs({"done": ctx.inputs["made"]}))


moved = Workflow(
    "moved",
    (
        Step("first", first, reads=("n",), writes=("made",)),
        Step("second", second, reads=("made",), writes=("done",)),
    ),
    inputs=("n",),
)
"""


@pytest.fixture(scope="module")
def before(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The adws of `BEFORE`, unpacked where a `PYTHONPATH` finds it first."""
    known = subprocess.run(
        ["git", "-C", str(REPO), "cat-file", "-e", f"{BEFORE}^{{commit}}"], check=False
    )
    if known.returncode != 0:
        pytest.skip(f"commit {BEFORE} is not in this clone's history")
    folder = tmp_path_factory.mktemp("adws-before")
    archive = folder / "adws.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(REPO), "archive", BEFORE, "adws"], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    return folder


def adws(project: Path, journal: str, *argv: str, code: Path = REPO) -> tuple[int, str, str]:
    """Run the adws of `code` in `project`, its journal in the environment."""
    env = {**os.environ, "ADWS_JOURNAL": journal, "PYTHONPATH": str(code)}
    env.pop("ADWS_WORKFLOWS", None)
    done = subprocess.run(
        [sys.executable, "-m", "adws", *argv],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def test_a_run_recorded_before_the_move_resumes_after_it(
    before: Path, tmp_path: Path, journal_at: str
) -> None:
    project = tmp_path / "project"
    (project / "workflows").mkdir(parents=True)
    (project / "workflows" / "flows.py").write_text(FLOWS)

    code, _, err = adws(project, journal_at, "run", "moved", "-i", "n=1", "-q", code=before)
    assert code == 1, err
    code, listed, err = adws(project, journal_at, "runs", "--json")
    assert code == 0, err
    [run] = json.loads(listed)
    assert (run["workflow"], run["status"], run["failed_step"]) == ("moved", "failed", "second")

    (project / "fixed").touch()
    code, out, err = adws(project, journal_at, "resume", run["run_id"], "--json", "-q")
    assert code == 0, err
    resumed = json.loads(out)
    assert (resumed["status"], resumed["inputs"]["done"]) == ("succeeded", "1!")
    assert [step["status"] for step in resumed["steps"]] == ["carried_over", "succeeded"]
    assert (project / "first.log").read_text() == "ran\n"  # the finished step did not run again
