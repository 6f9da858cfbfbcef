"""`adws eval` and `adws runs --prune` delete the branches of the runs they end or forget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adws import Workflow, worktree
from adws.cli import main
from adws.journal import Journal
from adws.runs import Refused, RunRequest, Runs
from adws.runs.worktrees import repositories_of
from adws.workspaces.branches import delete_branches_of, delete_run_branches
from tests.conftest import start_adws
from tests.workspaces.conftest import git, make_repo, writes

FLOW = """
from pathlib import Path

from returns.io import IOSuccess

from adws import Step, Workflow, worktree


def change(ctx):
    (Path(ctx.inputs["worktree"]) / (ctx.inputs["name"] + ".txt")).write_text("x\\n")
    return IOSuccess(ctx)


workflow = Workflow(
    "changes",
    (worktree(Step("impl", change, reads=("worktree", "name"), writes=()), keep="never"),),
    inputs=("target_dir", "name"),
)
"""


def _branches(repo: Path) -> list[str]:
    return git(repo, "branch", "--list", "adws/*", "--format=%(refname:short)").split()


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "changes.py").write_text(FLOW)
    repo = make_repo(in_tmp / "repo")
    lines = [{"target_dir": str(repo), "name": name} for name in ("a", "b")]
    (in_tmp / "tasks.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return in_tmp


def test_eval_deletes_its_runs_branches_when_it_ends(project: Path) -> None:
    assert main(["eval", "changes", "tasks.jsonl", "-n", "1", "-q"]) == 0
    assert _branches(project / "repo") == []


def test_eval_keeps_them_with_keep_branches(project: Path) -> None:
    assert main(["eval", "changes", "tasks.jsonl", "-n", "1", "-q", "--keep-branches"]) == 0
    assert len(_branches(project / "repo")) == 2


def test_runs_prune_deletes_the_pruned_runs_branches_only(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = Journal(tmp_path / "runs.db")
    runs = Runs(journal, whole_process=False, worktrees=str(tmp_path / "wt"))
    made = []
    for name in ("old", "new"):
        flow = Workflow(
            "w", (worktree(writes("impl", {f"{name}.txt": "x\n"})),), inputs=("target_dir",)
        )
        outcome = runs.run(RunRequest(flow, {"target_dir": str(repo)}))
        assert not isinstance(outcome, Refused)
        made.append(outcome.run_id)
    git(repo, "branch", "feature")
    assert main(["runs", "--journal", str(journal.path), "--prune", "--keep", "1"]) == 0
    err = capsys.readouterr().err
    old = [run for run in made if run != journal.runs()[0].run_id]
    assert _branches(repo) == [f"adws/{journal.runs()[0].run_id}/impl"]
    assert err.splitlines()[-1] == f"deleted their 1 branch: adws/{old[0]}/impl"
    assert "feature" in git(repo, "branch", "--list", "feature")


def test_branch_deletion_passes_over_what_it_cannot_read(repo: Path, tmp_path: Path) -> None:
    git(repo, "branch", "adws/r1/a")
    git(repo, "branch", "adws/r1/b")
    assert delete_run_branches(repo, "") == ()
    assert delete_run_branches(repo, "r1/a") == ()
    assert delete_run_branches(tmp_path / "gone", "r1") == ()
    assert delete_branches_of({"r1": [str(repo), str(repo), ""]}) == ("adws/r1/a", "adws/r1/b")
    journal = Journal(tmp_path / "runs.db")
    assert repositories_of(journal, ["nope"]) == {"nope": []}


KEPT = """
from pathlib import Path

from returns.io import IOSuccess

from adws import Step, Workflow, worktree


def change(ctx):
    (Path(ctx.inputs["worktree"]) / "a.txt").write_text("a\\n")
    return IOSuccess(ctx)


workflow = Workflow(
    "kept",
    (worktree(Step("impl", change, reads=("worktree",), writes=()), keep="always"),),
    inputs=("target_dir",),
)
"""


def test_a_worker_runs_its_runs_worktrees_in_the_folder_it_was_given(tmp_path: Path) -> None:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "kept.py").write_text(KEPT)
    make_repo(tmp_path / "repo")
    submitted = start_adws(tmp_path, "submit", "kept", "-i", "target_dir=repo")
    out, err = submitted.communicate(timeout=120)
    assert submitted.returncode == 0, err
    run_id = out.strip()
    worker = start_adws(
        tmp_path, "worker", "--once", "--poll", "0.2", "--worktrees", "trees", "--gc"
    )
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    # once in its first round, not again in the round after the run ended
    assert err.count("adws worker: worktrees gc: removed 0 worktrees (0 B)") == 1
    assert (tmp_path / "trees" / run_id / "impl" / "a.txt").read_text() == "a\n"
