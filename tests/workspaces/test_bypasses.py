"""The five ways past a `git status`-based `protect` a fault-injection pass found: each `Tampered`.

Each agent below leaves the bug unfixed, weakens the bug's own test so it
passes, and hides the edit from git (`git status` in its worktree is
clean afterwards). Checked through git's view, each run was green; read
from the files, each ends `Tampered`, and the checks never ran.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from returns.io import IOResult, IOSuccess

from adws import (
    PipelineError,
    Step,
    Workflow,
    WorkflowContext,
    run_workflow,
    shell_step,
    with_verification,
    worktree,
)
from tests.conftest import failure
from tests.engine.bugs import DOUBLE, TARGET, git, run_in_worktree, seeded

WEAK = DOUBLE.replace("== 2", "!= 2")
"""The bug's test, weakened in the same number of bytes: it passes on the buggy code."""
LYING_CONFTEST = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
)
"""A conftest that turns every result into a pass."""
TEST = "tests/test_double.py"


def assume_unchanged(folder: Path) -> None:
    git(folder, "update-index", "--assume-unchanged", TEST)
    (folder / TEST).write_text(WEAK)


def skip_worktree(folder: Path) -> None:
    git(folder, "update-index", "--skip-worktree", TEST)
    (folder / TEST).write_text(WEAK)


def hidden_conftest(folder: Path) -> None:
    common = Path(git(folder, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    (common / "info").mkdir(exist_ok=True)
    with (common / "info" / "exclude").open("a") as exclude:
        exclude.write("tests/conftest.py\n")
    (folder / "tests" / "conftest.py").write_text(LYING_CONFTEST)


def clean_filter(folder: Path) -> None:
    original = folder.parent / "original.py"
    original.write_text((folder / TEST).read_text())
    git(folder, "config", "filter.same.clean", f"cat >/dev/null; cat {original}")
    common = Path(git(folder, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    (common / "info").mkdir(exist_ok=True)
    (common / "info" / "attributes").write_text(f"{TEST} filter=same\n")
    (folder / TEST).write_text(WEAK)


def replaced_commit(folder: Path) -> None:
    base = git(folder, "rev-parse", "HEAD")
    (folder / TEST).write_text(WEAK)
    git(folder, "commit", "-q", "-am", "weaken")
    weakened = git(folder, "rev-parse", "HEAD")
    git(folder, "reset", "-q", "--hard", base)
    git(folder, "replace", base, weakened)
    git(folder, "reset", "-q", "--hard", base)


BYPASSES: dict[str, Callable[[Path], None]] = {
    "assume-unchanged": assume_unchanged,
    "skip-worktree": skip_worktree,
    "conftest hidden by info/exclude": hidden_conftest,
    "clean filter, same-size edit": clean_filter,
    "commit, reset, git replace": replaced_commit,
}


def cheat(bypass: Callable[[Path], None], ran: list[str]) -> Step:
    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        folder = Path(str(ctx.inputs["worktree"]))
        bypass(folder)
        ran.append(git(folder, "status", "--porcelain", "--untracked-files=all"))
        return IOSuccess(ctx.merge_outputs({"summary": "fixed"}))

    return Step("fix", run, reads=("worktree",), writes=("summary",))


@pytest.mark.parametrize("name", list(BYPASSES))
def test_each_way_past_git_status_ends_tampered(tmp_path: Path, name: str) -> None:
    repo = seeded(tmp_path / "repo")
    ran: list[str] = []
    checked = tmp_path / "checked"
    checks = shell_step(
        "checks",
        [
            sys.executable,
            "-c",
            (
                f"import subprocess, sys; open({str(checked)!r}, 'a').write('ran\\n');"
                " sys.exit(subprocess.call([sys.executable, '-m', 'pytest', '-q', '-rA',"
                " '-p', 'no:cacheprovider', 'tests']))"
            ),
        ],
        failures="pytest",
    )
    step = with_verification(
        cheat(BYPASSES[name], ran),
        checks,
        must_pass=[TARGET],
        protect=("tests/**",),
        max_attempts=1,
    )
    error = failure(run_in_worktree(step, repo, tmp_path))
    assert ran == [""]  # git saw nothing changed
    assert (error.error_type, error.step_name) == ("Tampered", "fix_verified")
    changed = "tests/conftest.py" if name.startswith("conftest") else TEST
    assert error.context["files"] == (changed,)
    assert checked.read_text() == "ran\n"  # the baseline ran the checks; the round never did


@pytest.mark.parametrize("name", list(BYPASSES))
def test_a_worktrees_own_protect_compares_the_files_with_the_base_commit(
    tmp_path: Path, name: str
) -> None:
    repo = seeded(tmp_path / "repo")
    ran: list[str] = []
    result = run_workflow(
        Workflow("w", (worktree(cheat(BYPASSES[name], ran), name="work", protect=("tests/**",)),)),
        WorkflowContext(inputs={"target_dir": str(repo)}),
        run_id="r1",
        worktrees=str(tmp_path / "wt"),
    )
    error = failure(result)
    assert ran == [""]
    assert (error.error_type, error.step_name) == ("Tampered", "work")
    changed = "tests/conftest.py" if name.startswith("conftest") else TEST
    assert error.context["files"] == (changed,)
