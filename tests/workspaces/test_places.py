"""Where worktrees live: outside any project by default, never inside a checkout, found again."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from returns.io import IOResult, IOSuccess

from adws import PipelineError, Step, Workflow, WorkflowContext, run_workflow, worktree
from adws.engine.errors import json_safe
from adws.workspaces._git import on_branch
from adws.workspaces._home import repository_key
from tests.conftest import failure, success
from tests.workspaces.conftest import git, make_repo, writes


def _pytest_in_worktree(name: str) -> Step:
    """A step that runs the target's tests in its worktree, as a fix's verification would."""

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"],
            cwd=str(ctx.inputs["worktree"]),
            capture_output=True,
            text=True,
            check=False,
        )
        return IOSuccess(ctx.merge_outputs({"said": done.stdout, "code": done.returncode}))

    return Step(name, run, reads=("worktree",), writes=("said", "code"))


def test_the_orchestrating_projects_conftest_is_never_loaded_by_the_targets_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_repo(tmp_path / "project")
    (project / "conftest.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_name('LOADED').write_text('yes')\n"
    )
    target = make_repo(project / "target")
    (target / "test_one.py").write_text("def test_one():\n    assert True\n")
    git(target, "add", "test_one.py")
    git(target, "commit", "-q", "-m", "a test")
    monkeypatch.chdir(project)
    monkeypatch.delenv("ADWS_WORKTREES")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    step = worktree(_pytest_in_worktree("verify"), keep="always")
    final = success(
        run_workflow(
            Workflow("w", (step,)), WorkflowContext(inputs={"target_dir": str(target)}), run_id="r1"
        )
    )
    common = Path(git(target, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    home = tmp_path / "cache" / "adws" / "worktrees" / repository_key(target, common) / "r1"
    assert final.inputs["code"] == 0
    assert "1 passed" in str(final.inputs["said"])
    assert not (project / "LOADED").exists()
    assert (home / "verify" / "test_one.py").is_file()


def test_a_worktrees_folder_inside_a_checkout_is_refused_with_the_reason(
    repo: Path, tmp_path: Path
) -> None:
    inside = repo / "sub" / "wt"
    error = failure(
        run_workflow(
            Workflow("w", (worktree(writes("impl", {})),)),
            WorkflowContext(inputs={"target_dir": str(repo)}),
            run_id="r1",
            worktrees=str(inside),
        )
    )
    assert error.error_type == "WorkspaceFailed"
    assert error.message == (
        f"the worktrees folder {inside.resolve()} is inside the checkout {repo.resolve()}: tools"
        " run in a worktree there (pytest, ruff, mypy) would read that checkout's configuration;"
        " choose a folder outside any checkout (--worktrees, $ADWS_WORKTREES; the default is"
        " $XDG_CACHE_HOME/adws/worktrees)"
    )
    assert not inside.exists()
    assert git(repo, "branch", "--list", "adws/*") == ""


def test_the_shared_folder_holds_a_folder_per_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADWS_WORKTREES", str(tmp_path / "shared"))
    one, two = make_repo(tmp_path / "a" / "app"), make_repo(tmp_path / "b" / "app")
    for repo in (one, two):
        success(
            run_workflow(
                Workflow("w", (worktree(writes("impl", {"x": "1\n"}), keep="always"),)),
                WorkflowContext(inputs={"target_dir": str(repo)}),
                run_id="r1",
            )
        )
    folders = sorted(path.name for path in (tmp_path / "shared").iterdir())
    assert folders == sorted([repository_key(one, one / ".git"), repository_key(two, two / ".git")])
    assert all(name.startswith("app-") for name in folders)


def test_a_run_recorded_with_its_worktree_in_the_project_goes_on_there(
    repo: Path, tmp_path: Path
) -> None:
    old = tmp_path / "project" / ".adws" / "worktrees" / "r1" / "impl"
    git(repo, "worktree", "add", "-q", "-b", "adws/r1/impl", str(old), "main")
    (old / "half.txt").write_text("begun before the move\n")

    def finish(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        folder = Path(str(ctx.inputs["worktree"]))
        (folder / "rest.txt").write_text("finished\n")
        return IOSuccess(ctx.merge_outputs({"where": str(folder)}))

    final = success(
        run_workflow(
            Workflow(
                "w", (worktree(Step("impl", finish, reads=("worktree",), writes=("where",))),)
            ),
            WorkflowContext(inputs={"target_dir": str(repo)}),
            run_id="r1",
            worktrees=str(tmp_path / "wt"),
        )
    )
    assert final.inputs["where"] == str(old.resolve())
    assert git(repo, "show", "--name-only", "--format=", "adws/r1/impl").split() == [
        "half.txt",
        "rest.txt",
    ]
    assert not (tmp_path / "wt" / "r1").exists()


def test_git_keeps_no_worktree_on_a_branch_of_a_repository_without_worktrees(repo: Path) -> None:
    assert on_branch(repo / ".git", "adws/r1/impl") is None


def test_the_worktree_on_a_branch_is_read_from_gits_records_passing_strays(
    repo: Path, tmp_path: Path
) -> None:
    (repo / ".git" / "worktrees" / "stray").mkdir(parents=True)  # no record in it: passed over
    git(repo, "worktree", "add", "-q", "-b", "adws/r1/other", str(tmp_path / "other"), "main")
    assert on_branch(repo / ".git", "adws/r1/impl") is None
    git(repo, "worktree", "add", "-q", "-b", "adws/r1/impl", str(tmp_path / "impl"), "main")
    assert on_branch(repo / ".git", "adws/r1/impl") == (
        tmp_path / "impl",
        repo / ".git" / "worktrees" / "impl",
    )


def test_a_worktree_removed_by_hand_from_its_old_place_starts_again_in_the_new_one(
    repo: Path, tmp_path: Path
) -> None:
    old = tmp_path / "project" / ".adws" / "worktrees" / "r1" / "impl"
    git(repo, "worktree", "add", "-q", "-b", "adws/r1/impl", str(old), "main")
    shutil.rmtree(old)
    final = success(
        run_workflow(
            Workflow("w", (worktree(writes("impl", {"a.txt": "a\n"}), keep="always"),)),
            WorkflowContext(inputs={"target_dir": str(repo)}),
            run_id="r1",
            worktrees=str(tmp_path / "wt"),
        )
    )
    assert (tmp_path / "wt" / "r1" / "impl" / "a.txt").read_text() == "a\n"
    assert final.inputs["impl_branch"] == "adws/r1/impl"


def test_the_commit_holds_what_the_agent_hid_through_gits_own_metadata(
    repo: Path, tmp_path: Path
) -> None:
    """An agent marks a file it changed assume-unchanged and excludes a new one: both committed."""
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore logs")

    def hide(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        folder = Path(str(ctx.inputs["worktree"]))
        gitdir = git(folder, "rev-parse", "--path-format=absolute", "--git-common-dir")
        (folder / "README").write_text("changed behind git's back\n")
        git(folder, "update-index", "--assume-unchanged", "README")
        (Path(gitdir) / "info").mkdir(exist_ok=True)
        (Path(gitdir) / "info" / "exclude").write_text("secret.py\n")
        (folder / "secret.py").write_text("import os\n")
        (folder / "build.log").write_text("the repository's own .gitignore still holds\n")
        assert git(folder, "status", "--porcelain") == ""  # git itself sees nothing
        return IOSuccess(ctx)

    final = success(
        run_workflow(
            Workflow("w", (worktree(Step("impl", hide, reads=("worktree",), writes=())),)),
            WorkflowContext(inputs={"target_dir": str(repo)}),
            run_id="r1",
            worktrees=str(tmp_path / "wt"),
        )
    )
    commit = str(final.inputs["impl_commit"])
    assert git(repo, "show", "--name-only", "--format=", commit).split() == ["README", "secret.py"]
    assert git(repo, "show", f"{commit}:README") == "changed behind git's back"
    assert json_safe(final.inputs["impl_diffstat"]) == {
        "files": [
            {"path": "README", "added": 1, "deleted": 1},
            {"path": "secret.py", "added": 1, "deleted": 0},
        ],
        "added": 2,
        "deleted": 1,
        "text": "2 files changed, 2 insertions(+), 1 deletion(-)",
    }
