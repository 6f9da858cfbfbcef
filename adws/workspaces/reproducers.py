"""`reproduce(step, verify)`: a test that shows the problem first, then the fix.

A bug fix proves itself when a test that failed because of the bug passes
after it. `reproduce` asks an agent to write that test before anyone fixes
anything: its new tests must fail on the untouched code, and their ids
become the fixer's targets (`with_verification(..., must_pass="reproduced")`),
its files protected from the fixer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess

from adws._checks import require_count, require_type
from adws._exceptions import DefinitionError
from adws.engine.errors import ErrorType, PipelineError, is_permanent
from adws.engine.proof import REPRODUCER_CHECK, REPRODUCER_FILES, REPRODUCER_IDS, Checked
from adws.engine.protect import Rules, check_protect
from adws.engine.scope import current_worktree
from adws.engine.step import Step
from adws.engine.verification import (
    BASELINE_UNNAMED,
    WORKSPACE_FAILED,
    Checks,
    checked_of,
    report_round,
    run_round,
    unnamed_baseline,
)
from adws.io_ops.changes import Entry, changed_paths, entries, tree_digest

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from adws.engine.context import WorkflowContext

__all__ = ["TESTS", "ReproduceSpec", "reproduce"]

TESTS: Final = ("tests/**", "test/**", "**/test_*.py", "**/*_test.py", "**/conftest.py")
"""Where a reproducer may write by default: the project's tests (what pytest collects)."""


@final
@attrs.frozen
class ReproduceSpec:
    """Describe a `reproduce` step, for `adws show`, the fingerprint and `--agent`."""

    step: Step
    verify: Step
    tests: tuple[str, ...]
    max_attempts: int
    baseline_unnamed: Literal["fail", "ignore"] = "fail"

    def describe(self) -> str:
        """Say what the step does, for `adws show`."""
        return (
            f"{self.step.name} writes tests that {self.verify.name} must show failing on the"
            f" untouched code, up to {self.max_attempts} rounds"
        )


def _read(name: str, folder: str) -> dict[str, Entry] | PipelineError:
    """Read the workspace's files whole, or say it cannot be read (`WorkspaceFailed`)."""
    try:
        return entries(folder)
    except OSError as exc:
        message = f"could not read the workspace {folder}: {exc}"
        return PipelineError(name, WORKSPACE_FAILED, message, {"permanent": True})


def _not_reproduced(name: str, message: str, **context: object) -> PipelineError:
    return PipelineError(name, ErrorType.NOT_REPRODUCED, message, context)


def _files_problem(name: str, files: Sequence[str], rules: Rules) -> PipelineError | None:
    """Say why a round's files cannot be a reproducer: none changed, or not only tests."""
    if not files:
        return _not_reproduced(name, "you changed no file: write a test that shows the problem")
    outside = [path for path in files if not rules.covers(path)]
    if not outside:
        return None
    message = (
        f"a reproducer writes tests only ({rules.describe()}); you changed"
        f" {', '.join(outside)}: restore {'it' if len(outside) == 1 else 'them'}"
    )
    return _not_reproduced(name, message, files=list(files), outside=outside)


def _new_tests(
    name: str, files: Sequence[str], known: Checked, ran: WorkflowContext | PipelineError
) -> PipelineError | list[str]:
    """Name the new ids failing now, or say why there are none (or an old check broke)."""
    now = checked_of(ran)
    if isinstance(ran, PipelineError) and not now.named:
        message = (
            "the checks failed naming no test (a test file that does not load?): make your"
            f" test fail as a test does: {ran.message.strip()}"
        )
        return _not_reproduced(name, message, files=list(files))
    seen = set(known.seen())
    broken = sorted(key for key in now.failing if key in seen and key not in known.failing)
    if broken:
        message = (
            f"your change made checks that passed fail: {', '.join(broken)};"
            " add new tests, and leave the others passing"
        )
        return _not_reproduced(name, message, files=list(files), broken=broken)
    ids = sorted(key for key in now.failing if key not in seen)
    if not ids:
        message = (
            f"no new test fails on the untouched code: the tests in {', '.join(files)} pass"
            " (or did not run); write a test that fails because of the problem"
        )
        return _not_reproduced(name, message, files=list(files))
    return ids


def reproduce(  # noqa: PLR0913 - the step, its check, and keyword-only options
    step: Step,
    verify: Step,
    *,
    name: str = "reproduce",
    tests: Sequence[str] = TESTS,
    max_attempts: int = 3,
    baseline_unnamed: Literal["fail", "ignore"] = "fail",
    when: Callable[[WorkflowContext], bool] | None = None,
) -> Step:
    """Build a step in which `step` writes tests that show the problem on the untouched code.

    `verify` (the project's checks, with a parser: `shell_step(...,
    failures="pytest")`) first runs on the workspace as it is (the
    baseline; one that fails naming no failure fails closed, as in
    `with_verification`, unless `baseline_unnamed="ignore"`). Then each
    round `step` (an agent step with `edits=True`) writes its tests and
    `verify` runs again. The round reproduces the problem when the files
    it changed are all tests (`tests`, globs as for `protect`) and some
    ids fail that the baseline did not run: the new, failing tests. Else
    it fails `NotReproduced` and the next round is told why: no file
    changed, a file that is not a test changed (the code must stay
    untouched: restore it), a check that passed now fails, or no new test
    fails. Inside a worktree the checks run in a verify tree (see
    `with_verification`); the files are read from disk.

    Outputs: the step's own, `reproducer_ids` (the new failing ids,
    sorted) and `reproducer_files` (the files it changed, sorted): a
    following `with_verification(..., must_pass="reproduced")` makes those
    ids its targets and protects those files from the fixer. And
    `reproducer_check`, the round's run of the checks with a digest of the
    files it ran on: a `with_verification` in a worktree whose files are the
    same takes it as its baseline rather than running the checks again. `when` skips
    the step where it is false (see `Step`), as a yes/no input does.
    """
    owner = f"reproduce {name!r}"
    require_type(owner, "step", step, Step, "a Step")
    require_type(owner, "verify", verify, Step, "a Step")
    require_count(owner, "max_attempts", max_attempts)
    globs = check_protect(owner, tests)
    if baseline_unnamed not in BASELINE_UNNAMED[:2]:
        msg = f"{owner}: baseline_unnamed must be 'fail' or 'ignore', got {baseline_unnamed!r}"
        raise DefinitionError(msg)
    rules = Rules.of(globs)

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return _Reproduction(
            name, step, verify, rules=rules, max_attempts=max_attempts, unnamed=baseline_unnamed
        ).run(ctx)

    return Step(
        name,
        run,
        when=when,
        kind="reproduce",
        spec=ReproduceSpec(step, verify, globs, max_attempts, baseline_unnamed),
        children=(step, verify),
    )


class _Reproduction:
    """One run of a `reproduce` step: the baseline, then rounds until a new test fails."""

    def __init__(  # noqa: PLR0913 - the step's configuration, as `reproduce` checked it
        self,
        name: str,
        step: Step,
        verify: Step,
        *,
        rules: Rules,
        max_attempts: int,
        unnamed: Literal["fail", "ignore"],
    ) -> None:
        self.name, self.step, self.verify, self.rules = name, step, verify, rules
        self.max_attempts, self.unnamed = max_attempts, unnamed
        self.folder = current_worktree() or "."
        self.checks = Checks(name, Rules(), isolate=True)

    def baseline(self, ctx: WorkflowContext) -> tuple[dict[str, Entry], Checked] | PipelineError:
        """Read the files and run the checks on the untouched workspace."""
        start = _read(self.name, self.folder)
        if isinstance(start, PipelineError):
            return start
        with self.checks.place(guarded=False) as where:
            if isinstance(where, PipelineError):
                return where
            before = self.checks.run(self.verify, ctx, where)
        known = checked_of(before)
        if isinstance(before, PipelineError) and not known.named and self.unnamed == "fail":
            return unnamed_baseline(self.name, before)
        return start, known

    def run(self, ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        """Take the baseline, then have the step write tests until they show the problem."""
        taken = self.baseline(ctx)
        if isinstance(taken, PipelineError):
            return IOFailure(taken)
        start, known = taken
        round_ctx = ctx
        error = PipelineError(self.name, ErrorType.NOT_REPRODUCED, "no round ran")
        for round_number in range(1, self.max_attempts + 1):
            done = run_round(self.step, round_ctx, ctx)
            if isinstance(done, PipelineError):
                return IOFailure(done)
            made, promoted = done
            found = self.judge(promoted, start, known)
            if not isinstance(found, PipelineError):
                return IOSuccess(ctx.merge_outputs({**made.outputs, **found}))
            if is_permanent(found):  # the workspace cannot be read: no round can mend it
                return IOFailure(found)
            error = found
            again = round_number < self.max_attempts
            report_round(self.name, round_number, self.max_attempts, error, again=again)
            feedback = (
                f"reproduction round {round_number}/{self.max_attempts} failed:"
                f" {error.error_type}: {error.message}"
            )
            round_ctx = round_ctx.add_feedback(feedback)
        return IOFailure(error.with_context(rounds=self.max_attempts))

    def judge(
        self, ctx: WorkflowContext, start: dict[str, Entry], known: Checked
    ) -> dict[str, object] | PipelineError:
        """Judge a round's tests: the outputs they make, or why they do not reproduce."""
        now = _read(self.name, self.folder)
        if isinstance(now, PipelineError):
            return now
        files = changed_paths(start, now)
        judged = _round(
            self.checks,
            verify=self.verify,
            ctx=ctx,
            files=files,
            rules=self.rules,
            known=known,
            name=self.name,
        )
        if isinstance(judged, PipelineError):
            return judged
        ids, checked = judged
        return {
            REPRODUCER_IDS: ids,
            REPRODUCER_FILES: list(files),
            REPRODUCER_CHECK: {"checked": checked.to_dict(), "tree": tree_digest(now)},
        }


def _round(  # noqa: PLR0913 - a round's work, and what it is judged against
    checks: Checks,
    *,
    verify: Step,
    ctx: WorkflowContext,
    files: Sequence[str],
    rules: Rules,
    known: Checked,
    name: str,
) -> PipelineError | tuple[list[str], Checked]:
    """Judge a round's tests: its files first (no check runs for files that cannot be tests).

    Returns the new failing ids and the run of the checks that found them.
    """
    problem = _files_problem(name, files, rules)
    if problem is not None:
        return problem
    with checks.place(guarded=False) as where:
        if isinstance(where, PipelineError):
            return where
        ran = checks.run(verify, ctx, where)
    ids = _new_tests(name, files, known, ran)
    return ids if isinstance(ids, PipelineError) else (ids, checked_of(ran))
