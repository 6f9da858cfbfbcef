"""`adws run W --replay RUN`, across runs: a worktree step's prompt names its run, yet replays."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Final

from tests.conftest import adws_json, shared_worktree
from tests.workspaces.conftest import git, make_repo

FLOWS: Final = r"""
from pathlib import Path

from adws import OutputContract, Workflow, agent_step, worktree
from adws.testing import FunctionAgent


def answer(request):
    # Each real call leaves a line: a replay must leave none.
    with (Path(__file__).parent.parent / "calls.txt").open("a") as calls:
        calls.write(request.step_name + "\n")
    return "STATUS: done\nNOTE: looked\n"


fix = Workflow(
    "fix",
    (
        worktree(
            agent_step(
                "look",
                prompt="Look at the code in {worktree}.",
                agent=FunctionAgent(answer),
                contract=OutputContract(("NOTE",)),
            ),
            name="fix",
        ),
    ),
    inputs=("target_dir",),
)
"""


def adws(project: Path, *argv: str, seed: int) -> tuple[int, dict[str, object], str]:
    """Run `adws ... --json` in its own process, journaling to project/runs.db."""
    return adws_json(project, *argv, "--workflows", "workflows", "--json", "-q", seed=seed)


def outputs(report: dict[str, object]) -> dict[str, object]:
    """Return what the run's steps wrote but its branch (named after the run) and its inputs."""
    inputs = report["inputs"]
    assert isinstance(inputs, dict)
    written: dict[str, object] = dict(inputs)
    assert written.pop("fix_branch") == f"adws/{report['run_id']}/fix"
    del written["target_dir"]
    return written


def recorded_project(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    project = tmp_path / "one"
    (project / "workflows").mkdir(parents=True)
    (project / "workflows" / "fix.py").write_text(FLOWS)
    make_repo(project / "repo")
    code, report, err = adws(project, "run", "fix", "-i", f"target_dir={project / 'repo'}", seed=1)
    assert (code, err) == (0, "")
    return project, report


def test_a_worktree_step_replays_in_another_run_with_no_agent(tmp_path: Path) -> None:
    project, recorded = recorded_project(tmp_path)
    run_id = str(recorded["run_id"])
    target = f"target_dir={project / 'repo'}"
    code, replayed, err = adws(project, "run", "fix", "-i", target, "--replay", run_id, seed=2)
    assert (code, err) == (0, "")
    assert replayed["run_id"] != run_id
    replayed_outputs = outputs(replayed)
    assert replayed_outputs.pop("look_agent") == {"replayed": f"run {run_id}"}
    assert replayed_outputs == outputs(recorded)
    assert replayed["usage"] is None
    assert (project / "calls.txt").read_text() == "look\n"  # the recording's call only


def test_a_copied_journal_replays_a_worktree_step_in_its_new_folder(tmp_path: Path) -> None:
    """The journal and the worktrees move with the project: their folders are not the key."""
    project, recorded = recorded_project(tmp_path)
    moved = shutil.copytree(project, tmp_path / "two")
    (moved / "calls.txt").unlink()
    target = f"target_dir={moved / 'repo'}"
    argv = ("run", "fix", "-i", target, "--replay", str(recorded["run_id"]))
    code, replayed, err = adws(moved, *argv, seed=3)
    assert (code, err) == (0, "")
    replayed_outputs = outputs(replayed)
    assert replayed_outputs.pop("look_agent") == {"replayed": f"run {recorded['run_id']}"}
    assert replayed_outputs == outputs(recorded)
    assert not (moved / "calls.txt").exists()


def test_a_changed_worktree_prompt_misses_with_a_diff_in_stable_names(tmp_path: Path) -> None:
    project, recorded = recorded_project(tmp_path)
    flows = project / "workflows" / "fix.py"
    flows.write_text(FLOWS.replace("Look at the code", "Read the code"))
    target = f"target_dir={project / 'repo'}"
    argv = ("run", "fix", "-i", target, "--replay", str(recorded["run_id"]))
    code, _, err = adws(project, *argv, seed=4)
    assert code == 1
    assert "-Look at the code in <worktrees>/<run>/fix." in err
    assert "+Read the code in <worktrees>/<run>/fix." in err


EDITS: Final = r"""
import os
from pathlib import Path

from adws import OutputContract, Workflow, agent_step, worktree
from adws.testing import FunctionAgent


def answer(request):
    with (Path(__file__).parent.parent / "calls.txt").open("a") as calls:
        calls.write(request.step_name + "\n")
    here = Path(request.cwd)
    (here / "docs").mkdir()
    (here / "docs" / "notes.txt").write_bytes(b"caf\xe9, written in Latin-1\n")
    (here / "image.bin").write_bytes(bytes(range(256)))
    (here / "run.sh").write_text("#!/bin/sh\necho run\n")
    os.chmod(here / "run.sh", 0o755)
    (here / "README").unlink()
    return "STATUS: done\nNOTE: edited\n"


edit = Workflow(
    "edit",
    (
        worktree(
            agent_step(
                "write",
                prompt="Change the files in {worktree}.",
                agent=FunctionAgent(answer),
                contract=OutputContract(("NOTE",)),
            ),
            name="fix",
        ),
    ),
    inputs=("target_dir",),
)
"""


def edited_project(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    project = tmp_path / "one"
    (project / "workflows").mkdir(parents=True)
    (project / "workflows" / "edit.py").write_text(EDITS)
    make_repo(project / "repo")
    target = f"target_dir={project / 'repo'}"
    code, report, err = adws(project, "run", "edit", "-i", target, seed=5)
    assert (code, err) == (0, "")
    return project, report


def tree_of(repo: Path, commit: object) -> str:
    return git(repo, "rev-parse", f"{commit}^{{tree}}")


def test_a_worktree_runs_files_are_replayed_byte_for_byte_in_another_process(
    tmp_path: Path,
) -> None:
    """New folders, Latin-1 and binary bytes, a mode and a deletion: the very same tree."""
    project, recorded = edited_project(tmp_path)
    target = f"target_dir={project / 'repo'}"
    argv = ("run", "edit", "-i", target, "--replay", str(recorded["run_id"]))
    code, replayed, err = adws(project, *argv, seed=6)
    assert (code, err) == (0, "")
    assert (project / "calls.txt").read_text() == "write\n"  # the recording's call only
    inputs, again = recorded["inputs"], replayed["inputs"]
    assert isinstance(inputs, dict)
    assert isinstance(again, dict)
    repo = project / "repo"
    assert tree_of(repo, again["fix_commit"]) == tree_of(repo, inputs["fix_commit"])
    assert again["fix_diffstat"] == inputs["fix_diffstat"]
    shown = subprocess.run(
        ["git", "-C", str(repo), "show", f"{again['fix_commit']}:docs/notes.txt"],
        capture_output=True,
        check=True,
    )
    assert shown.stdout == b"caf\xe9, written in Latin-1\n"
    listing = git(repo, "ls-tree", str(again["fix_commit"]), "run.sh")
    assert listing.startswith("100755 blob ")


def test_a_replay_from_a_base_that_moved_fails_naming_the_file_git_refused(
    tmp_path: Path,
) -> None:
    project, recorded = edited_project(tmp_path)
    repo = project / "repo"
    (repo / "README").write_text("hello\nand more\n")
    git(repo, "commit", "-q", "-am", "the base moved")
    argv = ("run", "edit", "-i", f"target_dir={repo}", "--replay", str(recorded["run_id"]))
    code, replayed, err = adws(project, *argv, seed=7)
    assert code == 1
    assert replayed["status"] == "failed"
    run_id = replayed["run_id"]
    folder = shared_worktree(repo, str(run_id), "fix")
    assert (
        f" at write: AgentFailed: RecordingAgent('run {recorded['run_id']}',"
        " mode='replay'): the change the recorded answer of step 'write' made does not apply"
        f" here (has the worktree's base moved since the recorded run?) (run {run_id})\n"
    ) in err
    assert f"  `git -C {folder} --git-dir=" in err
    assert "  error: README: patch does not apply\n" in err
    assert (project / "calls.txt").read_text() == "write\n"
