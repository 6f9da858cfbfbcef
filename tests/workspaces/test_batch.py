"""adws batch with worktrees and approvals: real worker processes, one repository, one journal."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from adws.cli import main
from adws.journal import Journal
from tests.workspaces.conftest import git, make_repo

pytestmark = pytest.mark.slow

FLOWS = """
from pathlib import Path

from returns.io import IOSuccess

from adws import Step, Workflow, approval_step, worktree


def change(ctx):
    (Path(ctx.inputs["worktree"]) / f"{ctx.inputs['n']}.txt").write_text("changed\\n")
    return IOSuccess(ctx.merge_outputs({"summary": f"change {ctx.inputs['n']}"}))


def cleanup(ctx):
    with open(f"cleaned-{ctx.inputs['n']}", "w") as log:
        log.write("ok" if ctx.failure is None else ctx.failure.error_type)
    return IOSuccess(ctx)


asks = Workflow(
    "asks",
    (
        worktree(Step("impl", change, reads=("worktree", "n"), writes=("summary",))),
        approval_step("approve", message="merge {impl_branch} for {n}?"),
        Step("cleanup", cleanup, always_run=True, reads=("n",), writes=()),
    ),
    inputs=("target_dir", "n"),
)
"""


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "flows.py").write_text(FLOWS)
    make_repo(in_tmp / "repo")
    rows = [{"target_dir": "repo", "n": n} for n in ("a", "b")]
    (in_tmp / "inputs.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return in_tmp


def test_a_batch_counts_waiting_runs_as_blocked_and_notifies_each_once(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = "import sys; open('notified.log', 'a').write(' '.join(sys.argv[1:]) + chr(10))"
    notify = shlex.join([sys.executable, "-c", script])
    code = main(["batch", "asks", "inputs.jsonl", "--notify", notify, "--json", "-q"])
    report = json.loads(capsys.readouterr().out)
    assert (code, report["status"], report["counts"]) == (3, "blocked", {"waiting": 2})
    runs = {run["line"]: run["run_id"] for run in report["runs"]}
    notified = sorted((project / "notified.log").read_text().splitlines())
    assert notified == sorted(
        f"{runs[line]} merge adws/{runs[line]}/impl for {n}?" for line, n in ((1, "a"), (2, "b"))
    )
    assert not list(project.glob("cleaned-*"))  # the runs have not ended
    for line in (1, 2):  # each worktree beside the journal, committed on its run's branch
        changed = git(
            project / "repo", "show", "--name-only", "--format=", f"adws/{runs[line]}/impl"
        )
        assert changed == ("a.txt" if line == 1 else "b.txt")
    assert main(["approve", runs[1], "-q"]) == 0
    assert main(["reject", runs[2], "--reason", "not this one", "-q"]) == 1
    cleaned = {n: (project / f"cleaned-{n}").read_text() for n in ("a", "b")}
    assert cleaned == {"a": "ok", "b": "Rejected"}
    statuses = {
        record.run_id: record.status for record in Journal(project / ".adws" / "runs.db").runs()
    }
    assert statuses == {runs[1]: "succeeded", runs[2]: "failed"}


def test_a_notifier_that_fails_is_a_warning_of_the_batch(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["batch", "asks", "inputs.jsonl", "--notify", "false", "-q"]) == 3
    err = capsys.readouterr().err
    assert err.count("adws: warning: run ") == 2
    assert "--notify 'false' failed (exited with 1)" in err


def test_a_batch_without_a_notifier_just_waits(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["batch", "asks", "inputs.jsonl", "-q"]) == 3
    assert "warning" not in capsys.readouterr().err
    assert not (project / "notified.log").exists()
