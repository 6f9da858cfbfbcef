"""`reproduce(step, verify)`: a failing test first, its ids the fixer's targets, its files protected."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from returns.io import IOFailure, IOResult, IOSuccess

from adws import (
    PipelineError,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
    best_of,
    reproduce,
    sequence,
    use_agent,
    with_verification,
)
from adws.agents import ScriptedAgent
from adws.agents.step import AgentSpec
from adws.engine.combinators import VerificationSpec
from adws.engine.scope import current_worktree
from adws.workspaces import TESTS, BestOfSpec, ReproduceSpec
from tests.conftest import failure, success
from tests.engine.bugs import (
    DOUBLE,
    KEPT,
    ONE,
    RIGHT,
    TARGET,
    git,
    leaves,
    pytest_checks,
    run_in_worktree,
    seeded,
)

run = run_in_worktree


def writer(rounds: list[dict[str, str | None]], seen: list[tuple[str, ...]]) -> Step:
    """The reproducer's agent, as the files it leaves (named apart from the fixer)."""
    return leaves(rounds, seen, name="write_test", key="test")


def test_a_new_failing_test_becomes_the_fixers_target_and_is_protected(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo", double=False)
    stage = sequence(
        "work",
        [
            reproduce(writer([{"tests/test_double.py": DOUBLE}], []), pytest_checks()),
            with_verification(
                leaves([{"words.py": RIGHT}], []),
                pytest_checks(),
                must_pass="reproduced",  # noqa: S106 - a word, no password
            ),
        ],
    )
    final = success(run(stage, repo, tmp_path))
    assert (final.inputs["reproducer_ids"], final.inputs["reproducer_files"]) == (
        (TARGET,),
        ("tests/test_double.py",),
    )
    assert final.inputs["fix_verified_fixed"] == (TARGET,)


def test_a_fixer_that_weakens_the_reproducer_is_tampered(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo", double=False)
    weakened = DOUBLE.replace("== 2", "!= 2")
    stage = sequence(
        "work",
        [
            reproduce(writer([{"tests/test_double.py": DOUBLE}], []), pytest_checks()),
            with_verification(
                leaves([{"tests/test_double.py": weakened}], []),
                pytest_checks(),
                must_pass="reproduced",  # noqa: S106 - a word, no password
                max_attempts=1,
            ),
        ],
    )
    error = failure(run(stage, repo, tmp_path))
    assert (error.error_type, error.context["files"]) == ("Tampered", ("tests/test_double.py",))
    assert error.message.endswith(
        "do not change tests/test_double.py (they are how the work is checked)"
    )


@pytest.mark.parametrize(
    ("rounds", "said"),
    [
        ([{}], "you changed no file: write a test that shows the problem"),
        (
            [{"tests/test_double.py": DOUBLE, "words.py": "def words(text):\n    return 9\n"}],
            (
                "a reproducer writes tests only (tests/** or test/** or **/test_*.py or **/*_test.py"
                " or **/conftest.py); you changed words.py: restore it"
            ),
        ),
        (
            [{"tests/test_double.py": DOUBLE.replace("'a  b'", "'a b'")}],
            (
                "no new test fails on the untouched code: the tests in tests/test_double.py pass (or"
                " did not run); write a test that fails because of the problem"
            ),
        ),
        (
            [{"tests/test_one.py": ONE.replace("== 2", "== 3")}],
            (
                f"your change made checks that passed fail: {KEPT}; add new tests, and leave the"
                " others passing"
            ),
        ),
    ],
)
def test_a_round_that_does_not_reproduce_is_told_why(
    tmp_path: Path, rounds: list[dict[str, str | None]], said: str
) -> None:
    repo = seeded(tmp_path / "repo", double=False)
    seen: list[tuple[str, ...]] = []
    error = failure(
        run(reproduce(writer(rounds, seen), pytest_checks(), max_attempts=2), repo, tmp_path)
    )
    assert (error.error_type, error.message, error.context["rounds"]) == ("NotReproduced", said, 2)
    assert seen[1] == (f"reproduction round 1/2 failed: NotReproduced: {said}",)


def test_the_checks_run_in_a_verify_tree_with_the_tests_only(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo", double=False)
    places: list[tuple[str | None, object]] = []
    checks = pytest_checks()

    def where(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        places.append((current_worktree(), ctx.inputs["worktree"]))
        return checks.run(ctx)

    step = reproduce(writer([{"tests/test_double.py": DOUBLE}], []), Step("checks", where))
    success(run(step, repo, tmp_path))
    folder = str((tmp_path / "wt" / "r1" / "work").resolve())
    assert len(places) == 2
    for tree, given in places:
        assert tree == given
        assert tree != folder
        assert Path(str(tree)).parent == Path(folder).parent
        assert not Path(str(tree)).exists()  # removed once checked


def test_a_crashing_baseline_fails_closed_unless_told_to_go_on(tmp_path: Path) -> None:
    crash = {"tests/conftest.py": "raise RuntimeError('boom')\n"}
    repo = seeded(tmp_path / "repo", double=False, extra=crash)
    seen: list[tuple[str, ...]] = []
    step = reproduce(writer([{"tests/test_double.py": DOUBLE}], seen), pytest_checks())
    error = failure(run(step, repo, tmp_path))
    assert (error.step_name, error.context["permanent"], seen) == ("reproduce", True, [])
    assert error.message.startswith("baseline failed with no named failure")
    going_on = reproduce(
        writer([{"tests/test_double.py": DOUBLE}], seen),
        pytest_checks(),
        baseline_unnamed="ignore",
        max_attempts=1,
    )
    still = failure(run(going_on, repo, tmp_path))  # the crash hides every test: none is new
    assert (still.error_type, len(seen)) == ("NotReproduced", 1)


def test_the_spec_and_impossible_options(tmp_path: Path) -> None:
    del tmp_path
    agent, checks = Step("a", IOSuccess), Step("c", IOSuccess)
    step = reproduce(agent, checks, max_attempts=2)
    assert step.spec == ReproduceSpec(agent, checks, TESTS, 2, "fail")
    assert step.spec.describe() == (
        "a writes tests that c must show failing on the untouched code, up to 2 rounds"
    )
    with pytest.raises(
        ValueError, match=r"baseline_unnamed must be 'fail' or 'ignore', got 'must_pass'"
    ):
        reproduce(agent, checks, baseline_unnamed="must_pass")  # type: ignore[arg-type] # the point
    with pytest.raises(TypeError, match=r"protect must be a tuple of globs"):
        reproduce(agent, checks, tests="tests/**")


def test_use_agent_keeps_what_must_pass_the_reproducer_and_the_base() -> None:
    ask = agent_step("fix", prompt="p", agent=ScriptedAgent([]), edits=True, allow_no_change=True)
    steps = (
        reproduce(ask, Step("c", IOSuccess), name="repro", tests=("t/**",), max_attempts=2),
        best_of(
            "best",
            with_verification(
                ask,
                Step("v", IOSuccess),
                must_pass="{t}",  # noqa: S106 - a placeholder
                baseline_unnamed="ignore",
            ),
            n=2,
            base="{start}",
        ),
    )
    repro, best = use_agent(Workflow("w", steps), ScriptedAgent([])).steps
    assert isinstance(repro.spec, ReproduceSpec)
    assert (repro.name, repro.spec.tests, repro.spec.max_attempts) == ("repro", ("t/**",), 2)
    assert isinstance(repro.spec.step.spec, AgentSpec)
    assert repro.spec.step.spec.allow_no_change is True
    assert isinstance(best.spec, BestOfSpec)
    assert best.spec.base == "{start}"
    inner = best.spec.step.spec
    assert isinstance(inner, VerificationSpec)
    assert (inner.must_pass, inner.baseline, inner.baseline_unnamed) == ("{t}", True, "ignore")


def counted(runs: list[str]) -> Step:
    """The project's checks, counting their runs."""
    checks = pytest_checks()

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        runs.append(str(ctx.inputs.get("worktree", "")))
        return checks.run(ctx)

    return Step("checks", run)


def test_the_fix_takes_the_reproducers_last_run_as_its_baseline(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo", double=False)
    runs: list[str] = []
    stage = sequence(
        "work",
        [
            reproduce(writer([{"tests/test_double.py": DOUBLE}], []), counted(runs)),
            with_verification(
                leaves([{"words.py": RIGHT}], []),
                counted(runs),
                must_pass="reproduced",  # noqa: S106 - a word
            ),
        ],
    )
    final = success(run(stage, repo, tmp_path))
    assert len(runs) == 3  # the reproducer's baseline and round, the fix's round: no baseline again
    assert final.inputs["fix_verified_fixed"] == (TARGET,)
    assert final.inputs["fix_verified_kept"] == 1


def test_files_changed_since_the_reproducer_ran_take_a_baseline_of_their_own(
    tmp_path: Path,
) -> None:
    repo = seeded(tmp_path / "repo", double=False)
    runs: list[str] = []
    stage = sequence(
        "work",
        [
            reproduce(writer([{"tests/test_double.py": DOUBLE}], []), counted(runs)),
            leaves([{"notes.txt": "later\n"}], [], name="note", key="noted"),
            with_verification(
                leaves([{"words.py": RIGHT}], []),
                counted(runs),
                must_pass="reproduced",  # noqa: S106 - a word
            ),
        ],
    )
    success(run(stage, repo, tmp_path))
    assert len(runs) == 4


def test_a_reproducer_that_makes_the_checks_crash_is_told_so(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo", double=False)
    crash: dict[str, str | None] = {"tests/conftest.py": "raise RuntimeError('boom')\n"}
    error = failure(
        run(reproduce(writer([crash], []), pytest_checks(), max_attempts=1), repo, tmp_path)
    )
    assert error.error_type == "NotReproduced"
    assert error.message.startswith(
        "the checks failed naming no test (a test file that does not load?): make your test fail"
        " as a test does: "
    )


def test_a_reproducer_that_gives_up_or_writes_an_input_ends_the_step(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo", double=False)
    blocked = Step("write_test", lambda _ctx: IOFailure(PipelineError("", "Blocked", "no idea")))
    error = failure(run(reproduce(blocked, pytest_checks()), repo, tmp_path))
    assert (error.step_name, error.error_type) == ("write_test", "Blocked")
    clash = leaves([{"tests/test_double.py": DOUBLE}], [], name="write_test", key="target_dir")
    error = failure(run(reproduce(clash, pytest_checks()), repo, tmp_path))
    assert (error.step_name, error.error_type) == ("write_test", "ContextCollision")


def test_a_test_linked_outside_the_workspace_is_not_checked(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo", double=False)

    def links(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        (Path(str(ctx.inputs["worktree"])) / "tests" / "data").symlink_to(tmp_path)
        return IOSuccess(ctx.merge_outputs({"test": "linked"}))

    error = failure(
        run(reproduce(Step("write_test", links), pytest_checks(), max_attempts=1), repo, tmp_path)
    )
    assert (error.error_type, error.context["rounds"]) == ("WorkspaceFailed", 1)
    assert error.message.startswith("the symbolic link tests/data points outside the workspace")


def gone(part: str) -> Step:
    """A step that removes its worktree's folder, or its git directory."""

    def run_(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        folder = Path(str(ctx.inputs["worktree"]))
        shutil.rmtree(git(folder, "rev-parse", "--absolute-git-dir") if part == "git" else folder)
        return IOSuccess(ctx.merge_outputs({f"gone_{part}": True}))

    return Step(f"remove_{part}", run_, writes=(f"gone_{part}",))


@pytest.mark.parametrize(
    ("part", "said"),
    [("folder", "could not read the workspace "), ("git", "git rev-parse for the verify tree ")],
)
def test_a_workspace_that_cannot_be_read_or_checked_fails_the_step(
    tmp_path: Path, part: str, said: str
) -> None:
    repo = seeded(tmp_path / "repo", double=False)
    nothing: list[dict[str, str | None]] = [{}]
    stage = sequence("work", [gone(part), reproduce(writer(nothing, []), pytest_checks())])
    error = failure(run(stage, repo, tmp_path))
    assert (error.step_name, error.error_type) == ("reproduce", "WorkspaceFailed")
    assert error.message.startswith(said)


def test_a_reproducer_that_removes_its_workspace_fails_the_step(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo", double=False)
    error = failure(run(reproduce(gone("folder"), pytest_checks()), repo, tmp_path))
    assert (error.error_type, error.context["permanent"]) == ("WorkspaceFailed", True)
