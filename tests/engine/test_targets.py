"""`with_verification(..., must_pass=...)`: done means fixed, with real pytest in real git repositories."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from returns.io import IOFailure, IOResult, IOSuccess

from adws import (
    OutputContract,
    PipelineError,
    RetryPolicy,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
    run_workflow,
    sequence,
    shell_step,
    with_verification,
)
from adws.agents import ScriptedAgent
from adws.engine.combinators import VerificationSpec
from adws.shell.failures import CommandOutput
from tests.conftest import failure, success
from tests.engine.bugs import (
    DOUBLE,
    KEPT,
    RIGHT,
    TARGET,
    WRONG,
    git,
    leaves,
    pytest_checks,
    run_in_worktree,
    seeded,
)

run = run_in_worktree


def test_the_right_fix_passes_and_says_what_it_proved(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    seen: list[tuple[str, ...]] = []
    step = with_verification(
        leaves([{"words.py": RIGHT}], seen), pytest_checks(), must_pass=[TARGET]
    )
    final = success(run(step, repo, tmp_path))
    assert seen == [()]
    assert final.inputs["fix_verified_fixed"] == (TARGET,)
    assert final.inputs["fix_verified_kept"] == 1
    assert final.inputs["fix_verified_baseline"] == (TARGET,)
    assert final.inputs["fix_verified_proved"]["text"] == (
        f"targets fixed (1): {TARGET}\nnew failures: none\npre-existing failures left: none\n"
        "flaky: none\nkept passing: 1"
    )
    assert final.inputs["checks_passed"] == (TARGET, KEPT)


def test_a_wrong_fix_never_passes_and_the_target_is_named_first(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    seen: list[tuple[str, ...]] = []
    step = with_verification(
        leaves([{"words.py": WRONG}], seen), pytest_checks(), must_pass=[TARGET]
    )
    error = failure(run(step, repo, tmp_path))
    assert (error.step_name, error.error_type, error.context["rounds"]) == ("checks", "NotFixed", 3)
    assert error.message == (
        f"1 target still not passing:\n- {TARGET}: FAILED {TARGET} - AssertionError: assert 3 == 2"
    )
    assert seen[1] == (f"verification round 1/3 failed: {error.message}",)
    assert error.context["not_passing"] == {
        TARGET: f"failing: FAILED {TARGET} - AssertionError: assert 3 == 2"
    }
    assert error.context["proved"]["fixed"] == ()


def test_the_feedback_names_targets_first_then_new_failures(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    seen: list[tuple[str, ...]] = []
    worse: dict[str, str | None] = {"words.py": "def words(text):\n    return 0\n"}
    step = with_verification(
        leaves([worse], seen), pytest_checks(), must_pass=[TARGET], max_attempts=1
    )
    error = failure(run(step, repo, tmp_path))
    assert error.message == (
        f"1 target still not passing:\n- {TARGET}: FAILED {TARGET} - AssertionError: assert 0 == 2\n"
        f"and 1 new failure:\n- FAILED {KEPT} - AssertionError: assert 0 == 2"
    )
    assert error.context["new_failures"] == (KEPT,)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"tests/test_double.py": None}, "deleted"),
        ({"tests/test_double.py": DOUBLE.replace("test_double_spaces", "test_renamed")}, "renamed"),
        ({"tests/test_double.py": "import no_such_module\n" + DOUBLE}, "no longer imports"),
    ],
)
def test_a_target_that_did_not_run_is_never_a_pass(
    tmp_path: Path, change: dict[str, str | None], why: str
) -> None:
    repo = seeded(tmp_path / "repo")
    step = with_verification(
        leaves([change], []), pytest_checks(), must_pass=[TARGET], max_attempts=1
    )
    error = failure(run(step, repo, tmp_path))
    assert error.error_type == "NotFixed", why
    if why == "no longer imports":  # the module's error is a failure pytest names
        assert error.context["not_passing"] == {
            TARGET: "did not run (deleted, renamed, deselected or not collected?); a target must"
            " run and pass, and the check must list passing tests (pytest -rA, or JUnit)"
        }
        assert error.context["new_failures"] == ("tests/test_double.py",)
    else:
        assert list(error.context["not_passing"]) == [TARGET]
        assert error.context["not_passing"][TARGET].startswith("did not run")


def test_deleting_the_target_under_protect_is_tampered(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    step = with_verification(
        leaves([{"tests/test_double.py": None}], []),
        pytest_checks(),
        must_pass=[TARGET],
        protect=("tests/**",),
        max_attempts=1,
    )
    error = failure(run(step, repo, tmp_path))
    assert (error.error_type, error.context["files"]) == ("Tampered", ("tests/test_double.py",))


def test_a_check_that_lists_no_passes_cannot_pass_a_test_target(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    step = with_verification(
        leaves([{"words.py": RIGHT}], []),
        pytest_checks(lists_passes=False),
        must_pass=[TARGET],
        max_attempts=1,
    )
    error = failure(run(step, repo, tmp_path))
    assert error.error_type == "NotFixed"
    assert "the check must list passing tests (pytest -rA, or JUnit)" in error.message
    assert error.context["proved"]["kept"] is None


def test_targets_that_match_nothing_stop_the_step_before_any_agent_runs(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    seen: list[tuple[str, ...]] = []
    typo = "tests/test_double.py::test_dubble_spaces"
    step = with_verification(
        leaves([{"words.py": RIGHT}], seen), pytest_checks(), must_pass=[typo, "tests/*::test_one"]
    )
    error = failure(run(step, repo, tmp_path))
    assert seen == []
    assert (error.error_type, error.context["unmatched"], error.context["seen"]) == (
        "UnknownTargets",
        (typo,),
        (TARGET, KEPT),
    )
    assert error.message == (
        f"must_pass names {typo}, which the baseline did not run; it saw 2 ids: {TARGET}, {KEPT}"
    )
    assert error.context["permanent"] is True


def test_without_listed_passes_only_failing_tests_can_be_named(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    step = with_verification(
        leaves([{"words.py": RIGHT}], []), pytest_checks(lists_passes=False), must_pass=[KEPT]
    )
    error = failure(run(step, repo, tmp_path))
    assert error.message == (
        f"must_pass names {KEPT}, which the baseline did not run; it saw 1 ids: {TARGET}; the"
        " check lists no passing test, so only failing ones can be named (run pytest with -rA,"
        " or use JUnit)"
    )


def test_a_glob_makes_every_test_it_matches_at_the_baseline_a_target(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    step = with_verification(
        leaves([{"words.py": RIGHT}], []), pytest_checks(), must_pass=["tests/test_*::test_*"]
    )
    final = success(run(step, repo, tmp_path))
    proved = final.inputs["fix_verified_proved"]
    assert (proved["targets"], proved["fixed"], proved["passing"]) == (
        (TARGET, KEPT),
        (TARGET,),
        (KEPT,),
    )


def test_must_pass_baseline_makes_every_old_failure_a_target(tmp_path: Path) -> None:
    old = "def test_old():\n    assert 1 == 0\n"
    repo = seeded(tmp_path / "repo", extra={"tests/test_old.py": old})
    step = with_verification(
        leaves([{"words.py": RIGHT}], []),
        pytest_checks(),
        must_pass="baseline",  # noqa: S106 - a word, no password
        max_attempts=1,
    )
    error = failure(run(step, repo, tmp_path))
    assert error.context["not_passing"] == {
        "tests/test_old.py::test_old": "failing: FAILED tests/test_old.py::test_old - assert 1 == 0"
    }
    assert error.context["proved"]["fixed"] == (TARGET,)


def test_targets_can_come_from_an_input(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    step = with_verification(
        leaves([{"words.py": WRONG}], []),
        pytest_checks(),
        must_pass="{targets}",  # noqa: S106 - a placeholder, no password
        max_attempts=1,
    )
    assert failure(run(step, repo, tmp_path, targets=TARGET)).error_type == "NotFixed"
    nothing = success(run(step, repo, tmp_path, targets=""))
    assert nothing.inputs["fix_verified_proved"]["targets"] == ()
    assert nothing.inputs["fix_verified_proved"]["text"].startswith("no target had to pass")
    missing = failure(run(step, repo, tmp_path))
    assert (missing.error_type, missing.context["missing"]) == ("MissingInput", ("targets",))


def test_reproduced_needs_a_reproducer_before_it(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    step = with_verification(
        leaves([{"words.py": RIGHT}], []),
        pytest_checks(),
        must_pass="reproduced",  # noqa: S106 - a word, no password
    )
    error = failure(run(step, repo, tmp_path))
    assert (error.error_type, error.context["missing"]) == (
        "MissingInput",
        ("reproducer_ids", "reproducer_files"),
    )


def test_a_finding_target_passes_once_the_check_no_longer_names_it(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")

    def todos(output: CommandOutput) -> dict[str, str]:
        return {line.split(":")[0]: line for line in output.stdout.splitlines()}

    grep = shell_step("checks", "! grep -n TODO words.py", failures=todos)
    (repo / "words.py").write_text("# TODO count right\n" + (repo / "words.py").read_text())
    git(repo, "commit", "-qam", "a note")
    step = with_verification(leaves([{"words.py": RIGHT}], []), grep, must_pass=["1"])
    final = success(run(step, repo, tmp_path))
    assert (final.inputs["fix_verified_fixed"], final.inputs["fix_verified_kept"]) == (("1",), None)


def test_a_crashing_baseline_fails_closed_unless_told_to_go_on(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo", extra={"tests/conftest.py": "raise RuntimeError('boom')\n"})
    seen: list[tuple[str, ...]] = []
    step = with_verification(leaves([{"words.py": RIGHT}], seen), pytest_checks(), baseline=True)
    error = failure(run(step, repo, tmp_path))
    assert seen == []
    assert (error.step_name, error.error_type, error.context["permanent"]) == (
        "fix_verified",
        "ShellFailed",
        True,
    )
    assert error.message.startswith(
        "baseline failed with no named failure: cannot tell new failures from old"
        " (baseline_unnamed='ignore' goes on regardless): "
    )
    going_on = with_verification(
        leaves([{"words.py": RIGHT}], seen),
        pytest_checks(),
        baseline=True,
        baseline_unnamed="ignore",
    )
    final = success(run(going_on, repo, tmp_path))  # the crash is the baseline's: not new
    assert final.inputs["fix_verified_failures"] == ("exit status",)
    assert final.inputs["fix_verified_baseline"] == ("exit status",)


def test_a_check_that_fails_naming_nothing_can_be_made_the_target_whole(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    grep = shell_step("checks", "grep -q 'split()' words.py", failures="auto")
    seen: list[tuple[str, ...]] = []
    step = with_verification(
        leaves([{"words.py": WRONG}, {"words.py": RIGHT}], seen),
        grep,
        baseline=True,
        baseline_unnamed="must_pass",
    )
    final = success(run(step, repo, tmp_path))
    assert final.inputs["fix_verified_fixed"] == ("exit status",)
    assert seen[1] == (
        (
            "verification round 1/3 failed: 1 target still not passing:\n"
            "- exit status: exited with 1"
        ),
    )


def test_a_do_nothing_agent_ends_no_change_before_any_round_is_checked(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    nothing = ScriptedAgent(["STATUS: done\nSUMMARY: looks fine to me"] * 4)
    fix = agent_step(
        "fix",
        prompt="fix it",
        agent=nothing,
        contract=OutputContract(("SUMMARY",)),
        retry=RetryPolicy(max_attempts=2),
        edits=True,
    )
    error = failure(
        run(with_verification(fix, pytest_checks(), must_pass=[TARGET]), repo, tmp_path)
    )
    assert (error.step_name, error.error_type) == ("fix", "NoChange")
    assert error.message.startswith("you changed no file")
    assert len(nothing.requests) == 2
    assert "- attempt 1/2 failed: NoChange: you changed no file" in nothing.prompts[1]


def test_impossible_options_are_refused_at_definition_time() -> None:
    done = Step("main", IOSuccess)
    step = with_verification(done, done, must_pass=("t.py::a",), baseline_unnamed="ignore")
    assert step.spec == VerificationSpec(done, done, 3, True, 0, (), ("t.py::a",), "ignore")
    with pytest.raises(ValueError, match=r"must_pass must be a tuple of test ids or globs"):
        with_verification(done, done, must_pass="t.py::a")  # noqa: S106 - a word, no password
    choices = "'fail', 'ignore', 'must_pass'"
    with pytest.raises(ValueError, match=rf"baseline_unnamed must be one of {choices}, got 'x'"):
        with_verification(done, done, baseline_unnamed="x")  # type: ignore[arg-type] # the point
    with pytest.raises(ValueError, match=r"baseline_unnamed='ignore' needs baseline=True"):
        with_verification(done, done, baseline_unnamed="ignore")


def test_outside_a_worktree_the_checks_run_in_the_folder_the_guard_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = seeded(tmp_path / "repo")
    monkeypatch.chdir(repo)
    checks = shell_step(
        "checks",
        [sys.executable, "-m", "pytest", "-rA", "-q", "-p", "no:cacheprovider", "tests"],
        failures="pytest",
    )
    step = with_verification(
        leaves([{"words.py": RIGHT}], []), checks, must_pass=[TARGET], protect=("tests/**",)
    )
    final = success(run_workflow(Workflow("w", (step,))))
    assert final.inputs["fix_verified_fixed"] == (TARGET,)


def test_a_link_the_round_made_outside_the_workspace_fails_the_round(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    seen: list[tuple[str, ...]] = []

    def links(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        seen.append(ctx.feedback)
        (Path(str(ctx.inputs["worktree"])) / "data").symlink_to(tmp_path)
        return IOSuccess(ctx)

    step = with_verification(
        Step("fix", links), pytest_checks(), protect=("tests/**",), max_attempts=1
    )
    error = failure(run(step, repo, tmp_path))
    assert (error.step_name, error.error_type) == ("fix_verified", "WorkspaceFailed")
    assert error.message == (
        f"the symbolic link data points outside the workspace (to {tmp_path}): the checks cannot"
        " use it; link inside the workspace or copy the file"
    )


def test_a_worktree_whose_git_directory_went_cannot_be_checked(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")

    def breaks(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        folder = Path(str(ctx.inputs["worktree"]))
        shutil.rmtree(git(folder, "rev-parse", "--absolute-git-dir"))
        return IOSuccess(ctx.merge_outputs({"broken": True}))

    verified = with_verification(
        leaves([{"words.py": RIGHT}], []), pytest_checks(), must_pass=[TARGET], protect=("t/**",)
    )
    stage = sequence("work", [Step("break", breaks, writes=("broken",)), verified])
    error = failure(run(stage, repo, tmp_path))
    assert (error.step_name, error.error_type) == ("fix_verified", "WorkspaceFailed")
    assert error.message.startswith("git rev-parse for the verify tree")


def test_a_verify_error_no_round_can_mend_ends_the_step_at_once(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    blocked = Step("checks", lambda _ctx: IOFailure(PipelineError("", "Blocked", "no runner")))
    seen: list[tuple[str, ...]] = []
    step = with_verification(
        leaves([{"words.py": RIGHT}], seen), blocked, baseline=True, baseline_unnamed="ignore"
    )
    error = failure(run(step, repo, tmp_path))
    assert (error.error_type, len(seen)) == ("Blocked", 1)


def test_a_reproducers_run_is_taken_again_only_in_a_worktree_and_when_it_reads_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = seeded(tmp_path / "repo")
    runs: list[int] = []
    checks = pytest_checks()

    def counted(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        runs.append(1)
        return checks.run(ctx)

    def reproduced(check: object) -> Step:
        def run_(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
            found = {"reproducer_ids": [TARGET], "reproducer_files": [], "reproducer_check": check}
            return IOSuccess(ctx.merge_outputs(found))

        return Step("reproduced", run_, writes=("reproducer_ids",))

    good = {"checked": {"failing": {TARGET: "F"}, "passed": [], "ok": False, "named": True}}
    verify = Step("checks", counted)
    for check in ({"checked": "garbage"}, {"checked": {**good["checked"], "named": False}}):
        fix = with_verification(leaves([{"words.py": RIGHT}], []), verify, must_pass="reproduced")  # noqa: S106 - a word
        success(run(sequence("work", [reproduced(check), fix]), repo, tmp_path))
    assert len(runs) == 4  # a baseline each: neither run could be read back
    monkeypatch.chdir(repo)  # outside a worktree: the files are not read whole
    fix = with_verification(leaves([{"words.py": RIGHT}], []), verify, must_pass="reproduced")  # noqa: S106 - a word
    success(
        run_workflow(Workflow("w", (sequence("work", [reproduced({**good, "tree": "x"}), fix]),)))
    )
    assert len(runs) == 6
