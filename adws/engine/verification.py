"""`with_verification`: run a step, check its work, feed what failed back, round after round.

The rounds, the baseline, rechecks and `protect` live here; what must
pass and what a round proved are `adws.engine.proof`'s; the files a
round changed are read from disk (`adws.engine.protect`), and inside a
worktree the checks run in a verify tree adws builds for the round
(`adws.io_ops.verify_tree`). `adws.engine.combinators` hands the names on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess

from adws._checks import require_count, require_type
from adws._exceptions import DefinitionError
from adws.engine.context import WorkflowContext, promote
from adws.engine.errors import ErrorType, PipelineError
from adws.engine.events import RoundFailed
from adws.engine.proof import (
    REPRODUCER_CHECK,
    REPRODUCER_FILES,
    REPRODUCER_IDS,
    Checked,
    MustPass,
    Proof,
    matching,
    target_state,
)
from adws.engine.protect import Guard, Rules, check_protect
from adws.engine.retry import current_attempt, retry_step
from adws.engine.scope import (
    current_base,
    current_gitdir,
    current_scope,
    current_worktree,
    in_round,
    in_worktree,
)
from adws.engine.step import Step
from adws.io_ops.changes import entries, tree_digest
from adws.io_ops.verify_tree import TreeError, build_verify_tree, remove_verify_tree

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

__all__ = [
    "BASELINE_UNNAMED",
    "WORKSPACE_FAILED",
    "Checks",
    "VerificationSpec",
    "checked_of",
    "failures_of",
    "report_round",
    "run_round",
    "unnamed_baseline",
    "with_verification",
]

BASELINE_UNNAMED: Final = ("fail", "ignore", "must_pass")
"""What `with_verification` does with a baseline that fails naming no failure."""
WORKSPACE_FAILED: Final = "WorkspaceFailed"
"""The kind of a round whose files adws could not copy into its verify tree."""
_SEEN_SHOWN: Final = 30
"""How many ids the baseline saw an `UnknownTargets` error names."""
_DID_NOT_RUN: Final = (
    "did not run (deleted, renamed, deselected or not collected?); a target must run and pass,"
    " and the check must list passing tests (pytest -rA, or JUnit)"
)


@final
@attrs.frozen
class VerificationSpec:
    """Describe a `with_verification` step, for `adws show` and `--agent`."""

    main: Step
    verify: Step
    max_attempts: int
    baseline: bool = False
    recheck: int = 0
    protect: tuple[str, ...] = ()
    must_pass: tuple[str, ...] | str = ()
    baseline_unnamed: Literal["fail", "ignore", "must_pass"] = "fail"


def _round_feedback(round_number: int, max_rounds: int, error: PipelineError) -> str:
    return (
        f"verification round {round_number}/{max_rounds} failed: "
        f"{error.error_type}: {error.message}"
    )


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def _new_lines(new: Mapping[str, str]) -> str:
    return "\n".join(f"- {new[key]}" for key in sorted(new))


def _new_feedback(round_number: int, max_rounds: int, new: Mapping[str, str]) -> str:
    """Tell the agent only what it broke: the failures that were not failing before."""
    return (
        f"verification round {round_number}/{max_rounds} failed:"
        f" {_plural(len(new), 'new failure')}:\n{_new_lines(new)}"
    )


def _targets_text(failing: Mapping[str, str], new: Mapping[str, str]) -> str:
    """Name the targets still not passing first, then the new failures."""
    lines = "\n".join(f"- {target}: {failing[target]}" for target in sorted(failing))
    text = f"{_plural(len(failing), 'target')} still not passing:\n{lines}"
    if new:
        text += f"\nand {_plural(len(new), 'new failure')}:\n{_new_lines(new)}"
    return text


def failures_of(error: PipelineError) -> dict[str, str]:
    """Name a verify error's failures by id: its parser's (`shell_step(failures=...)`).

    An error no parser named is one failure, its kind: any `ShellFailed` is
    the same failure as any other.

    >>> failures_of(PipelineError("t", "ShellFailed", "exit 1", {"failures": ["a::t"]}))
    {'a::t': 'a::t'}
    >>> failures_of(PipelineError("t", "ShellFailed", "exit 1"))
    {'ShellFailed': 'ShellFailed: exit 1'}
    """
    ids = error.context.get("failures")
    details = error.context.get("failure_details")
    details = details if isinstance(details, Mapping) else {}
    if isinstance(ids, list | tuple) and ids:
        return {str(key): str(details.get(key, key)) for key in ids}
    return {str(error.error_type): f"{error.error_type}: {error.message.strip()}"}


def _ids(value: object) -> frozenset[str] | None:
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return frozenset(value)
    return None


def checked_of(result: WorkflowContext | PipelineError) -> Checked:
    """Read one run of a verify step by id: its failures and the passes its check listed.

    Passes come from a failure's `context["passed"]`, or from a success's
    `*_passed` outputs (see `shell_step(failures=...)`). Failures are named
    when a parser named them (not the fallback `exit status`, not an error
    no parser saw).

    >>> checked_of(WorkflowContext(outputs={"t_passed": ["a::b"]})).passed
    frozenset({'a::b'})
    """
    if isinstance(result, WorkflowContext):
        listed = [_ids(value) for key, value in result.outputs.items() if key.endswith("_passed")]
        known = [ids for ids in listed if ids is not None]
        return Checked({}, frozenset().union(*known) if known else None, ok=True)
    context = result.context
    named = bool(context.get("failures")) and context.get("unnamed") is not True
    return Checked(failures_of(result), _ids(context.get("passed")), ok=False, named=named)


@final
@attrs.frozen
class _Verdict:
    """What a failed verify means once the baseline and the rechecks are known."""

    failing: Mapping[str, str]
    new: Mapping[str, str]
    flaky: Mapping[str, str]


def _judged(
    again: Callable[[], WorkflowContext | PipelineError],
    error: PipelineError,
    known: Mapping[str, str],
    recheck: int,
) -> _Verdict:
    """Recheck a failed verify (`again`) up to `recheck` times: what still fails, what is new."""
    failing = failures_of(error)
    flaky: dict[str, str] = {}
    for _ in range(recheck):
        if not set(failing) - set(known):
            break  # only old failures left: nothing a recheck could clear the round of
        ran = again()
        still = {} if isinstance(ran, WorkflowContext) else failures_of(ran)
        flaky.update({key: detail for key, detail in failing.items() if key not in still})
        failing = {key: detail for key, detail in failing.items() if key in still}
    new = {key: detail for key, detail in failing.items() if key not in known}
    return _Verdict(failing, new, flaky)


@final
@attrs.frozen
class _Judged:
    """How a round ended: the outputs it adds, or its error and the feedback for the next."""

    outputs: Mapping[str, object] = attrs.field(factory=dict)
    error: PipelineError | None = None
    feedback: str = ""


@final
@attrs.frozen
class _Options:
    """A `with_verification` step's options, as checked at definition time."""

    name: str
    main: Step
    verify: Step
    max_attempts: int
    baseline: bool
    recheck: int
    protect: tuple[str, ...]
    wanted: MustPass
    unnamed: Literal["fail", "ignore", "must_pass"]

    @property
    def judging(self) -> bool:
        return self.baseline or self.recheck > 0


@final
@attrs.frozen
class _Targets:
    """The targets a step's rounds must make pass, and the baseline they are judged against."""

    ids: tuple[str, ...]
    known: Checked

    def proof(self, checked: Checked, verdict: _Verdict | None) -> Proof:
        """Say what a round proved, from its run of the checks (and the rechecks' verdict)."""
        failing = dict(verdict.failing) if verdict is not None else dict(checked.failing)
        states = {target: target_state(target, checked) for target in self.ids}
        not_passing = {
            target: (
                f"failing: {failing.get(target, target)}" if state == "failing" else _DID_NOT_RUN
            )
            for target, state in states.items()
            if state != "passed"
        }
        before = {target: target_state(target, self.known) for target in self.ids}
        passed = [target for target, state in states.items() if state == "passed"]
        kept = None
        if self.known.passed is not None and checked.passed is not None:
            kept = len(self.known.passed & checked.passed)
        return Proof(
            self.ids,
            fixed=tuple(t for t in passed if before[t] != "passed"),
            passing=tuple(t for t in passed if before[t] == "passed"),
            failing=not_passing,
            new=tuple(sorted(verdict.new if verdict is not None else ())),
            left=tuple(sorted(k for k in failing if k in self.known.failing and k not in self.ids)),
            flaky=tuple(sorted(verdict.flaky if verdict is not None else ())),
            kept=kept,
        )


class Checks:
    """Where a step's checks run, and the guard that says whether its protected files changed.

    With `protect` (or `isolate`) inside a worktree whose base is known,
    each run of the checks gets a verify tree of its own (the base commit plus the round's
    change, see `adws.io_ops.verify_tree`) and the guard reads that tree:
    what was compared is what is checked. Elsewhere the guard reads the
    workspace and the checks run where they would.
    """

    def __init__(self, step_name: str, rules: Rules, *, isolate: bool = False) -> None:
        """Read the workspace now (the guard's reference); `isolate`: trees even with no rules."""
        self.step_name = step_name
        self.folder = current_worktree()
        self.base, self.gitdir = current_base(), current_gitdir()
        self.guard = Guard.on_disk(step_name, rules) if rules or isolate else None
        self.tree = bool(self.guard and self.folder and self.base and self.gitdir)

    @contextlib.contextmanager
    def place(self, *, guarded: bool) -> Iterator[str | PipelineError | None]:
        """Yield the verify tree to check in (None: check in place), or the error that stops it."""
        if self.guard is None:
            yield None
            return
        if not self.tree:
            yield self.guard.check() if guarded else None
            return
        folder = str(self.folder)
        try:
            tree = build_verify_tree(
                folder,
                base=self.base,
                gitdir=self.gitdir,
                links=self.guard.links,
                parent=Path(folder).parent,
            )
        except TreeError as exc:
            yield PipelineError(self.step_name, WORKSPACE_FAILED, str(exc), {"worktree": folder})
            return
        try:
            yield (self.guard.check(str(tree)) if guarded else None) or str(tree)
        finally:
            remove_verify_tree(tree)

    def run(
        self, verify: Step, ctx: WorkflowContext, tree: str | None
    ) -> WorkflowContext | PipelineError:
        """Run `verify` under its policy in the verify tree (its `worktree` input too), or here."""
        if tree is None:
            return retry_step(verify, ctx)[0]
        inputs = {**ctx.inputs, "worktree": tree} if "worktree" in ctx.inputs else ctx.inputs
        moved = WorkflowContext(inputs=inputs, feedback=ctx.feedback, failure=ctx.failure)
        with in_worktree(tree, str(Path(tree, ".git")), self.base):
            return retry_step(verify, moved)[0]


def _reused(inputs: Mapping[str, object]) -> Checked | None:
    """Take a reproducer's last run of the checks as the baseline, if it ran on these very files.

    Only in a worktree (the files are read and hashed whole), and only a
    run that named its failures; anything else runs the checks again.
    """
    found = inputs.get(REPRODUCER_CHECK)
    folder = current_worktree()
    if not isinstance(found, Mapping) or folder is None:
        return None
    checked = Checked.from_dict(found.get("checked"))
    if checked is None or not (checked.ok or checked.named):
        return None
    return checked if found.get("tree") == tree_digest(entries(folder)) else None


def _reproduced(
    inputs: Mapping[str, object], step_name: str
) -> tuple[list[str], list[str]] | PipelineError:
    """Read a `reproduce` step's test ids and files from the inputs."""
    ids, files = _ids(inputs.get(REPRODUCER_IDS)), _ids(inputs.get(REPRODUCER_FILES))
    if not ids or files is None:
        message = (
            f"must_pass='reproduced' of step {step_name!r} needs the inputs {REPRODUCER_IDS!r}"
            f" and {REPRODUCER_FILES!r} that a reproduce(...) step before it writes"
        )
        missing = [key for key in (REPRODUCER_IDS, REPRODUCER_FILES) if key not in inputs]
        return PipelineError(step_name, ErrorType.MISSING_INPUT, message, {"missing": missing})
    return sorted(ids), sorted(files)


def _unknown(
    step_name: str, unmatched: Sequence[str], seen: Sequence[str], *, listed: bool
) -> PipelineError:
    """Say which targets the baseline never ran, and what it did run."""
    more = len(seen) - _SEEN_SHOWN
    shown = ", ".join(seen[:_SEEN_SHOWN]) + (f" and {more} more" if more > 0 else "")
    hint = (
        ""
        if listed
        else (
            "; the check lists no passing test, so only failing ones can be named"
            " (run pytest with -rA, or use JUnit)"
        )
    )
    message = (
        f"must_pass names {', '.join(unmatched)}, which the baseline did not run;"
        f" it saw {len(seen)} ids: {shown or 'none'}{hint}"
    )
    context = {"unmatched": list(unmatched), "seen": list(seen), "permanent": True}
    return PipelineError(step_name, ErrorType.UNKNOWN_TARGETS, message, context)


def unnamed_baseline(step_name: str, error: PipelineError) -> PipelineError:
    """Fail closed on a baseline whose failures no parser named (`baseline_unnamed="fail"`)."""
    message = (
        "baseline failed with no named failure: cannot tell new failures from old"
        f" (baseline_unnamed='ignore' goes on regardless): {error.message.strip()}"
    )
    return PipelineError(
        step_name, error.error_type, message, {"baseline_error": error.to_dict(), "permanent": True}
    )


def run_round(
    step: Step, round_ctx: WorkflowContext, ctx: WorkflowContext
) -> tuple[WorkflowContext, WorkflowContext] | PipelineError:
    """Run a round's step under its policy, in a round of its own; return it and its promotion.

    The promotion is the inputs of `ctx` (the combinator's own context)
    plus the step's outputs: what the checks see. A failure, or an output
    that would overwrite an input, is the step's.
    """
    with in_round():
        made, _ = retry_step(step, round_ctx)
    if isinstance(made, PipelineError):
        return made.with_step_name(step.name)
    promoted = promote(ctx.inputs, made.outputs)
    if isinstance(promoted, PipelineError):
        return promoted.with_step_name(step.name)
    return made, promoted


def report_round(
    step_name: str, round_number: int, max_rounds: int, error: PipelineError, *, again: bool
) -> None:
    """Tell the run's observers a round of a step failed (`RoundFailed`), and if it goes on."""
    scope = current_scope()
    path, attempt = current_attempt()
    scope.emit(
        RoundFailed(
            scope.run_id,
            step_name,
            scope.index,
            scope.total,
            path or step_name,
            attempt or 1,
            round_number,
            max_rounds,
            error,
            again,
        )
    )


class _Rounds:
    """One run of a `with_verification` step: the baseline, then each round until one passes."""

    def __init__(self, options: _Options, ctx: WorkflowContext) -> None:
        self.options, self.ctx = options, ctx

    def report(self, round_number: int, error: PipelineError, *, again: bool) -> None:
        """Tell the run's observers a round failed (`RoundFailed`)."""
        report_round(self.options.name, round_number, self.options.max_attempts, error, again=again)

    def extras(
        self, targets: _Targets, proof: Proof, verdict: _Verdict | None
    ) -> dict[str, object]:
        """The outputs a judging step adds: failures left, baseline, flaky, fixed, kept, proof."""
        o = self.options
        return {
            f"{o.name}_failures": sorted(verdict.failing) if verdict else [],
            f"{o.name}_baseline": sorted(targets.known.failing),
            f"{o.name}_flaky": sorted(verdict.flaky) if verdict else [],
            f"{o.name}_fixed": list(proof.fixed),
            f"{o.name}_kept": proof.kept,
            f"{o.name}_proved": proof.to_dict(),
        }

    def run(self) -> IOResult[WorkflowContext, PipelineError]:
        """Resolve the targets, take the baseline, then run the rounds."""
        o, ctx = self.options, self.ctx
        wanted = o.wanted.resolved(ctx.inputs, o.name)
        if isinstance(wanted, PipelineError):
            return IOFailure(wanted)
        reproduced: tuple[list[str], list[str]] = ([], [])
        if wanted.reproduced:
            found = _reproduced(ctx.inputs, o.name)
            if isinstance(found, PipelineError):
                return IOFailure(found)
            reproduced = found
        checks = Checks(o.name, Rules.of(o.protect, exact=reproduced[1]))
        targets = _Targets((), Checked({}, None, ok=True))
        if o.baseline:
            taken = self.baseline(checks, wanted, reproduced[0])
            if isinstance(taken, PipelineError):
                return IOFailure(taken)
            targets = taken
        return self.rounds(checks, targets)

    def baseline(
        self, checks: Checks, wanted: MustPass, reproduced: list[str]
    ) -> _Targets | PipelineError:
        """Take the baseline (a reproducer's last run, if it ran on these files) and the targets."""
        o, ctx = self.options, self.ctx
        before: WorkflowContext | PipelineError | Checked | None = None
        if wanted.reproduced:
            before = _reused(ctx.inputs)
        if before is None:
            with checks.place(guarded=False) as where:
                if isinstance(where, PipelineError):
                    return where
                before = checks.run(o.verify, ctx, where)
        known = before if isinstance(before, Checked) else checked_of(before)
        unnamed = isinstance(before, PipelineError) and not known.named
        if isinstance(before, PipelineError) and unnamed and o.unnamed == "fail":
            return unnamed_baseline(o.name, before)
        if unnamed and o.unnamed == "must_pass":  # the check must pass whole
            wanted = attrs.evolve(wanted, patterns=(*wanted.patterns, *known.failing))
        resolved = self.targets(wanted, known, reproduced)
        return resolved if isinstance(resolved, PipelineError) else _Targets(resolved, known)

    def targets(
        self, wanted: MustPass, known: Checked, reproduced: list[str]
    ) -> tuple[str, ...] | PipelineError:
        """Resolve what must pass against what the baseline ran: ids, globs and the words."""
        seen = known.seen()
        named, unmatched = matching([*wanted.patterns, *reproduced], seen)
        if unmatched:
            return _unknown(self.options.name, unmatched, seen, listed=known.passed is not None)
        chosen = set(named)
        if wanted.baseline:
            chosen.update(known.failing)
        return tuple(sorted(chosen))

    def rounds(self, checks: Checks, targets: _Targets) -> IOResult[WorkflowContext, PipelineError]:
        """Run `main`, guard, check and judge, until a round passes or the rounds run out."""
        o, ctx = self.options, self.ctx
        round_ctx = ctx
        error = PipelineError("", ErrorType.STEP_EXCEPTION, "no verification round ran")
        for round_number in range(1, o.max_attempts + 1):
            done = run_round(o.main, round_ctx, ctx)
            if isinstance(done, PipelineError):
                return IOFailure(done)
            made, promoted = done
            with checks.place(guarded=True) as where:
                if isinstance(where, PipelineError):
                    judged = _Judged(error=where)
                else:
                    judged = self.judge(checks, where, promoted, targets, round_number)
            if judged.error is None:
                clashes = sorted(set(made.outputs) & set(judged.outputs))
                if clashes:
                    message = f"verify output {clashes[0]!r} would overwrite main's output"
                    return IOFailure(
                        PipelineError(
                            o.verify.name, ErrorType.CONTEXT_COLLISION, message, {"keys": clashes}
                        )
                    )
                return IOSuccess(ctx.merge_outputs({**made.outputs, **judged.outputs}))
            error = judged.error
            retryable = bool(o.verify.retry.retry_on(error))
            self.report(round_number, error, again=retryable and round_number < o.max_attempts)
            if not retryable:
                return IOFailure(error)
            feedback = judged.feedback or _round_feedback(round_number, o.max_attempts, error)
            round_ctx = round_ctx.add_feedback(feedback)
        return IOFailure(error.with_context(rounds=o.max_attempts))

    def judge(
        self,
        checks: Checks,
        where: str | None,
        promoted: WorkflowContext,
        targets: _Targets,
        round_number: int,
    ) -> _Judged:
        """Run the checks on a round's work and say whether it passed, and what it proved."""
        o = self.options
        result = checks.run(o.verify, promoted, where)
        if isinstance(result, PipelineError):
            result = result.with_step_name(o.verify.name)
        if not o.judging:
            if isinstance(result, WorkflowContext):
                return _Judged(dict(result.outputs))
            return _Judged(error=result)
        verdict = None
        if isinstance(result, PipelineError):
            if not o.verify.retry.retry_on(result):
                return _Judged(error=result)

            def again() -> WorkflowContext | PipelineError:
                return checks.run(o.verify, promoted, where)

            verdict = _judged(again, result, targets.known.failing, o.recheck)
        checked = checked_of(result)
        proof = targets.proof(checked, verdict)
        proved = proof.to_dict()
        rounds = f"{round_number}/{o.max_attempts}"
        if proof.failing:
            new = verdict.new if verdict is not None else {}
            shown = {t: why.removeprefix("failing: ") for t, why in proof.failing.items()}
            text = _targets_text(shown, new)
            context = {
                "targets": list(targets.ids),
                "not_passing": dict(proof.failing),
                "new_failures": sorted(new),
                "baseline": sorted(targets.known.failing),
                "flaky": list(proof.flaky),
                "proved": proved,
            }
            error = PipelineError(o.verify.name, ErrorType.NOT_FIXED, text, context)
            return _Judged(error=error, feedback=f"verification round {rounds} failed: {text}")
        if verdict is not None and verdict.new:
            assert isinstance(result, PipelineError)  # noqa: S101 - a verdict is of a failure
            error = result.with_context(
                new_failures=sorted(verdict.new),
                baseline=sorted(targets.known.failing),
                flaky=sorted(verdict.flaky),
                proved=proved,
            )
            return _Judged(
                error=error, feedback=_new_feedback(round_number, o.max_attempts, verdict.new)
            )
        outputs = dict(result.outputs) if isinstance(result, WorkflowContext) else {}
        return _Judged({**outputs, **self.extras(targets, proof, verdict)})


def with_verification(  # noqa: PLR0913 - DESIGN's options, keyword-only
    main: Step,
    verify: Step,
    *,
    max_attempts: int = 3,
    name: str | None = None,
    rerun_on_resume: bool = False,
    baseline: bool = False,
    recheck: int = 0,
    protect: Sequence[str] = (),
    must_pass: Sequence[str] | str = (),
    baseline_unnamed: Literal["fail", "ignore", "must_pass"] = "fail",
) -> Step:
    """Run `main`, then `verify` on its outputs; on a failed verify, run both again.

    Each round starts from the step's own context plus one feedback line per
    failed verification, so the third round of `main` sees both earlier
    verify errors. `verify` sees `main`'s outputs as inputs. Each inner step
    keeps its own retry policy (an agent's self-healing retries happen inside
    a round); their attempts are not reported as separate events. The
    combined outputs are `main`'s plus `verify`'s; the step is named
    `<main>_verified` unless `name` is given. A `main` failure, or a verify
    error its policy will not retry (`Blocked`), ends the step at once; after
    `max_attempts` rounds the last verify error is returned with `rounds`.
    Each failed round is reported to the run's observers (`RoundFailed`),
    so progress, the journal and `adws status` show every round's error.
    Retries inside a round wait through the run's injected `sleep`.
    `rerun_on_resume` makes `adws resume` run it again (see `Step`).

    Checks fail for reasons that are not the agent's. Failures are compared
    by id (`failures_of`: what `shell_step(..., failures=PARSER)` named).
    `baseline=True` first runs `verify` once on the untouched workspace
    (inside a `worktree`, its base commit); a round then passes when it adds
    no failure the baseline did not have, and only the new ones are fed
    back (one line each), never the pre-existing ones. A baseline that fails
    naming no failure (a crash, a bare exit status: nothing to compare by
    id) fails the step at once, closed (`baseline failed with no named
    failure: cannot tell new failures from old`), unless
    `baseline_unnamed="ignore"`, which goes on with that one failure as the
    baseline's, or `"must_pass"`, which makes it a target: the check must
    then pass whole (a check that is the task's acceptance test, such as
    `grep -q DONE notes`). A baseline proves nothing was broken, not that
    anything was fixed: the bug's own failing test is in it.

    `must_pass` names what the work is for: a tuple of test ids or globs
    (`"tests/test_calc.py::test_add"`, `"tests/test_calc.py::*"`; see
    `adws.engine.proof.matches`), `"baseline"` (every failure the baseline
    had must go), `"reproduced"` (the tests a `reproduce` step before it
    wrote: its `reproducer_ids`, and its `reproducer_files` are protected),
    a mix of them, or a placeholder `"{key}"` whose input holds them (a
    list, or one string split on whitespace; empty: nothing must pass). It
    implies `baseline=True`. Ids and globs that name nothing the baseline
    ran fail the step before `main` runs (`UnknownTargets`, naming them and
    what the baseline saw). A round passes only when every target ran and
    passed and no new failure appeared; a target that did not run is a
    failure, never a pass (see `adws.engine.proof.target_state`), so a
    check is not passed by making its test disappear. Such a round fails
    `NotFixed`, and its feedback names the targets still not passing first,
    then the new failures.

    `recheck=N` runs a failing verify up to N more times: a failure that
    passes on a recheck is flaky, not counted against the round and never
    fed back. With a baseline or rechecks, the outputs also hold
    `<name>_failures` (the ids still failing in the last round: pre-existing
    ones), `<name>_baseline` and `<name>_flaky` (sorted ids), `<name>_fixed`
    (the targets that went from failing or not running to passing),
    `<name>_kept` (how many ids passed before and still pass, when the check
    lists passes; else None) and `<name>_proved` (`adws.engine.proof.Proof`
    as a dict, with its `text`: targets fixed, new failures, pre-existing
    failures left, flaky); a failed round's error carries `new_failures`,
    `baseline`, `flaky` and `proved` in its context.

    `protect=("tests/**", ...)`: a round whose `main` changed a protected
    path fails `Tampered` before any check runs, and the next round is told
    to restore the files. The files themselves are compared (see
    `adws.engine.protect`) with how they were when the step began. Inside a
    `worktree`, the checks (the baseline's too) run in a verify tree adws
    builds for each run of them: the base commit plus the round's change,
    with adws's own git index and configuration (see
    `adws.io_ops.verify_tree`); the guard reads that tree, so what was
    compared is what was checked, and nothing the agent did to git's
    metadata reaches the checks. `verify` runs there (its default `cwd`,
    and its `worktree` input). Outside a worktree the checks run in the
    current folder, which the guard reads whole.
    """
    owner = "with_verification"
    require_type(owner, "main", main, Step, "a Step")
    require_type(owner, "verify", verify, Step, "a Step")
    require_count(owner, "max_attempts", max_attempts)
    require_type(owner, "baseline", baseline, bool, "a bool")
    if recheck != 0:
        require_count(owner, "recheck", recheck)
    globs = check_protect(owner, protect)
    wanted = MustPass.of(owner, must_pass)
    if baseline_unnamed not in BASELINE_UNNAMED:
        choices = ", ".join(map(repr, BASELINE_UNNAMED))
        msg = f"{owner}: baseline_unnamed must be one of {choices}, got {baseline_unnamed!r}"
        raise DefinitionError(msg)
    if baseline_unnamed != "fail" and not (baseline or wanted):
        msg = f"{owner}: baseline_unnamed={baseline_unnamed!r} needs baseline=True (or must_pass)"
        raise DefinitionError(msg)
    step_name = name or f"{main.name}_verified"
    kept = must_pass if isinstance(must_pass, str) else tuple(must_pass)
    options = _Options(
        step_name,
        main,
        verify,
        max_attempts,
        baseline or bool(wanted),
        recheck,
        globs,
        wanted,
        baseline_unnamed,
    )

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return _Rounds(options, ctx).run()

    return Step(
        step_name,
        run,
        rerun_on_resume=rerun_on_resume,
        kind="verification",
        spec=VerificationSpec(
            main, verify, max_attempts, options.baseline, recheck, globs, kept, baseline_unnamed
        ),
        children=(main, verify),
    )
