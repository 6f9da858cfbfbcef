"""with_verification's baseline, rechecks and protect, with real pytest in real git repositories."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from returns.io import IOFailure, IOResult, IOSuccess

from adws import (
    PipelineError,
    RetryPolicy,
    Step,
    Workflow,
    WorkflowContext,
    run_workflow,
    shell_step,
    with_verification,
)
from adws.engine.combinators import VerificationSpec
from tests.conftest import failure, success
from tests.engine.bugs import run_in_worktree

CALC_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
OLD_TEST = "def test_broken():\n    assert 1 == 0\n"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def project(path: Path, tests: dict[str, str]) -> Path:
    """A git repository with `calc.py` (add is right) and `tests`, committed on `main`."""
    (path / "tests").mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test User")
    git(path, "config", "user.email", "test@example.com")
    (path / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    for name, text in tests.items():
        (path / "tests" / name).write_text(text)
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "initial")
    return path


def checks() -> Step:
    return shell_step(
        "checks",
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir=.", "tests"],
        failures="pytest",
    )


def agent(rounds: list[dict[str, str]], seen: list[tuple[str, ...]]) -> Step:
    """Round i writes `rounds[i]`'s files into the worktree (the agent, as files it leaves)."""

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        seen.append(ctx.feedback)
        folder = Path(str(ctx.inputs["worktree"]))
        for name, text in rounds[min(len(seen), len(rounds)) - 1].items():
            (folder / name).write_text(text)
        return IOSuccess(ctx.merge_outputs({"summary": f"round {len(seen)}"}))

    return Step("implement", run, reads=("worktree",), writes=("summary",))


run = run_in_worktree


WRONG = {"calc.py": "def add(a, b):\n    return a - b\n"}
RIGHT = {"calc.py": "def add(a, b):\n    return a + b\n"}


def test_a_pre_existing_failure_never_reaches_the_agents_feedback(tmp_path: Path) -> None:
    repo = project(tmp_path / "repo", {"test_calc.py": CALC_TEST, "test_old.py": OLD_TEST})
    seen: list[tuple[str, ...]] = []
    step = with_verification(agent([WRONG, RIGHT], seen), checks(), baseline=True)
    final = success(run(step, repo, tmp_path))
    assert seen == [
        (),
        (
            (
                "verification round 1/3 failed: 1 new failure:\n"
                "- FAILED tests/test_calc.py::test_add - assert -1 == 3"
            ),
        ),
    ]
    assert "test_old" not in "".join(seen[1])
    old = ("tests/test_old.py::test_broken",)
    assert final.inputs["implement_verified_baseline"] == old
    assert final.inputs["implement_verified_failures"] == old
    assert final.inputs["implement_verified_flaky"] == ()


def test_without_a_baseline_the_old_failure_fails_every_round(tmp_path: Path) -> None:
    repo = project(tmp_path / "repo", {"test_calc.py": CALC_TEST, "test_old.py": OLD_TEST})
    seen: list[tuple[str, ...]] = []
    step = with_verification(agent([RIGHT], seen), checks(), max_attempts=2)
    error = failure(run(step, repo, tmp_path))
    assert (error.error_type, error.context["failures"], error.context["rounds"]) == (
        "ShellFailed",
        ("tests/test_old.py::test_broken",),
        2,
    )
    assert "test_old" in seen[1][0]


def test_a_round_that_still_adds_a_failure_fails_with_only_the_new_ones_named(
    tmp_path: Path,
) -> None:
    repo = project(tmp_path / "repo", {"test_calc.py": CALC_TEST, "test_old.py": OLD_TEST})
    step = with_verification(agent([WRONG], []), checks(), baseline=True, max_attempts=2)
    error = failure(run(step, repo, tmp_path))
    assert (error.context["new_failures"], error.context["baseline"], error.context["flaky"]) == (
        ("tests/test_calc.py::test_add",),
        ("tests/test_old.py::test_broken",),
        (),
    )


def test_a_flaky_test_passes_on_recheck_is_journaled_and_never_fed_back(tmp_path: Path) -> None:
    count = tmp_path / "count"
    flaky = (
        "from pathlib import Path\n\n\ndef test_sometimes():\n"
        f"    count = Path({str(count)!r})\n"
        "    runs = int(count.read_text()) + 1 if count.exists() else 1\n"
        "    count.write_text(str(runs))\n"
        "    assert runs != 1\n"
    )
    repo = project(tmp_path / "repo", {"test_calc.py": CALC_TEST, "test_flaky.py": flaky})
    seen: list[tuple[str, ...]] = []
    step = with_verification(agent([RIGHT], seen), checks(), recheck=1)
    final = success(run(step, repo, tmp_path))
    assert seen == [()]
    assert count.read_text() == "2"
    assert final.inputs["implement_verified_flaky"] == ("tests/test_flaky.py::test_sometimes",)
    assert final.inputs["implement_verified_failures"] == ()
    assert final.inputs["implement_verified_baseline"] == ()


def test_a_failure_that_fails_its_recheck_too_is_the_agents(tmp_path: Path) -> None:
    repo = project(tmp_path / "repo", {"test_calc.py": CALC_TEST})
    seen: list[tuple[str, ...]] = []
    step = with_verification(agent([WRONG, RIGHT], seen), checks(), recheck=2)
    final = success(run(step, repo, tmp_path))
    assert len(seen) == 2
    assert seen[1] == (
        (
            "verification round 1/3 failed: 1 new failure:\n"
            "- FAILED tests/test_calc.py::test_add - assert -1 == 3"
        ),
    )
    assert final.inputs["implement_verified_flaky"] == ()


def test_an_edit_to_a_test_file_is_tampered_and_the_next_round_is_told_to_restore_it(
    tmp_path: Path,
) -> None:
    repo = project(tmp_path / "repo", {"test_calc.py": CALC_TEST})
    weakened = {**WRONG, "tests/test_calc.py": "def test_add():\n    pass\n"}
    restored = {**RIGHT, "tests/test_calc.py": CALC_TEST}
    seen: list[tuple[str, ...]] = []
    step = with_verification(agent([weakened, restored], seen), checks(), protect=("tests/**",))
    success(run(step, repo, tmp_path))
    assert seen[1] == (
        (
            "verification round 1/3 failed: Tampered: changed protected files tests/test_calc.py:"
            " restore tests/test_calc.py; do not change tests/** (they are how the work is checked)"
        ),
    )


def test_tampering_every_round_fails_tampered_naming_the_files(tmp_path: Path) -> None:
    repo = project(tmp_path / "repo", {"test_calc.py": CALC_TEST})
    weakened = {**WRONG, "tests/new_test.py": "x = 1\n"}
    step = with_verification(agent([weakened], []), checks(), protect=("tests/**",), max_attempts=2)
    error = failure(run(step, repo, tmp_path))
    assert (error.error_type, error.context["files"], error.context["rounds"]) == (
        "Tampered",
        ("tests/new_test.py",),
        2,
    )


def test_a_verify_that_never_retries_ends_a_tampered_round_at_once(tmp_path: Path) -> None:
    repo = project(tmp_path / "repo", {"test_calc.py": CALC_TEST})
    weakened = {"tests/test_calc.py": "x = 1\n"}
    seen: list[tuple[str, ...]] = []
    never = RetryPolicy(retry_on=lambda _error: False)
    verify = Step("checks", checks().run, retry=never)
    step = with_verification(agent([weakened], seen), verify, protect=("tests/**",))
    assert failure(run(step, repo, tmp_path)).error_type == "Tampered"
    assert len(seen) == 1


def test_protect_outside_a_git_checkout_reads_the_folders_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)

    def edits(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        (tmp_path / "tests" / "t.py").write_text("x = 2\n")
        return IOSuccess(ctx)

    done = Step("v", IOSuccess)
    step = with_verification(Step("main", edits), done, protect=("tests/**",), max_attempts=1)
    error = failure(run_workflow(Workflow("w", (step,))))
    assert (error.error_type, error.context["files"]) == ("Tampered", ("tests/t.py",))


def test_a_verify_passing_at_once_reports_empty_failures(tmp_path: Path) -> None:
    repo = project(tmp_path / "repo", {"test_calc.py": CALC_TEST})
    step = with_verification(agent([RIGHT], []), checks(), baseline=True, recheck=1)
    final = success(run(step, repo, tmp_path))
    assert final.inputs["checks_failures"] == ()
    assert final.inputs["implement_verified_baseline"] == ()
    assert final.inputs["implement_verified_failures"] == ()


def test_a_verify_with_no_parser_names_no_failure_so_its_baseline_fails_closed(
    tmp_path: Path,
) -> None:
    repo = project(tmp_path / "repo", {"test_calc.py": CALC_TEST, "test_old.py": OLD_TEST})
    plain = shell_step("checks", [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"])
    step = with_verification(agent([WRONG], []), plain, baseline=True)
    error = failure(run(step, repo, tmp_path))
    assert error.message.startswith("baseline failed with no named failure")
    ignoring = with_verification(
        agent([WRONG], []), plain, baseline=True, baseline_unnamed="ignore"
    )
    final = success(run(ignoring, repo, tmp_path))
    assert final.inputs["implement_verified_failures"] == ("ShellFailed",)


def test_the_spec_keeps_the_options_and_impossible_ones_are_refused() -> None:
    done = Step("main", IOSuccess)
    step = with_verification(done, done, baseline=True, recheck=2, protect=["tests/**"])
    assert step.spec == VerificationSpec(done, done, 3, True, 2, ("tests/**",), (), "fail")
    with pytest.raises(TypeError, match=r"protect must be a tuple of globs"):
        with_verification(done, done, protect="tests/**")
    with pytest.raises(TypeError, match=r"protect must hold non-empty glob strings"):
        with_verification(done, done, protect=("",))
    with pytest.raises(ValueError, match=r"recheck must be an int >= 1"):
        with_verification(done, done, recheck=-1)


def test_a_main_failure_still_ends_the_step_before_any_check() -> None:
    broken = Step("main", lambda _ctx: IOFailure(PipelineError("", "Blocked", "no")))
    step = with_verification(broken, broken, baseline=True, name="v")
    assert failure(run_workflow(Workflow("w", (step,)))).error_type == "Blocked"


def test_a_recheck_is_spared_when_only_old_failures_are_left(tmp_path: Path) -> None:
    count = tmp_path / "count"
    counting = (
        "from pathlib import Path\n\n\ndef test_counted():\n"
        f"    count = Path({str(count)!r})\n"
        "    count.write_text(str(int(count.read_text()) + 1 if count.exists() else 1))\n"
        "    assert 1 == 0\n"
    )
    repo = project(tmp_path / "repo", {"test_calc.py": CALC_TEST, "test_counted.py": counting})
    step = with_verification(agent([RIGHT], []), checks(), baseline=True, recheck=3)
    final = success(run(step, repo, tmp_path))
    assert count.read_text() == "2"  # the baseline and the round: no recheck
    assert final.inputs["implement_verified_failures"] == ("tests/test_counted.py::test_counted",)


def test_protect_sees_deletions_renames_and_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = project(tmp_path / "repo", {"test_calc.py": CALC_TEST, "test_old.py": OLD_TEST})
    (repo / "notes.txt").write_text("draft\n")  # changed before the step: not the agent's

    def edits(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        git(repo, "mv", "tests/test_old.py", "tests/test_moved.py")
        (repo / "tests" / "test_calc.py").unlink()
        (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        git(repo, "add", "calc.py")
        git(repo, "commit", "-q", "-m", "agent commit", "--", "calc.py")
        return IOSuccess(ctx)

    guarded = with_verification(
        Step("main", edits), Step("v", IOSuccess), protect=("tests/**", "calc.py"), max_attempts=1
    )
    monkeypatch.chdir(repo)
    error = failure(run_workflow(Workflow("w", (guarded,))))
    assert error.context["files"] == (
        "calc.py",
        "tests/test_calc.py",
        "tests/test_moved.py",
        "tests/test_old.py",
    )
