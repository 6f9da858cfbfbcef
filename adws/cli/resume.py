"""`adws resume`: continue a recorded run, with the options it was started with."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from adws import io_ops
from adws.cli import EXIT_CODES
from adws.cli._args import (
    UsageError,
    apply_options,
    given_options,
    parse_inputs,
    require_journal,
)
from adws.cli._execute import execute, with_agents
from adws.cli._output import err, out
from adws.cli.runs import find_run, unreadable

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping, Sequence

    from adws.engine.scope import Decision
    from adws.engine.step import Workflow
    from adws.engine.usage import Budget
    from adws.journal import AttemptRecord, Journal, RunRecord, StepPlan
    from adws.journal.options import RunOptions
    from adws.journal.resume import ResumeStart
    from adws.journal.store import Guarded

# Each command imports what it needs when it runs; see adws.cli.workflows.

__all__ = ["asks_budget", "cmd_resume", "continue_run", "worst"]

EXIT_OK: Final = EXIT_CODES["succeeded"]
_SET_OPTIONS: Final = "UPDATE runs SET options = ? WHERE run_id = ?"


def asks_budget(record: RunRecord) -> bool:
    """Tell whether a waiting run's question is one its budget asked (`--on-budget ask`)."""
    error = record.error
    return error is not None and error.context.get("budget_question") is True


def _raise(
    args: argparse.Namespace, record: RunRecord, decided: tuple[str, Decision] | None
) -> Budget | None:
    """Return the budget `adws approve --max-cost/--max-tokens` raises a budget question to."""
    if decided is None or decided[1].verdict != "approved" or not asks_budget(record):
        return None
    from adws.engine.usage import Budget  # noqa: PLC0415 - see the note on imports

    return Budget(args.max_cost, args.max_tokens)


EXIT_FAILED: Final = EXIT_CODES["failed"]
EXIT_USAGE: Final = 2


def _stop_children(record: RunRecord, *, force: bool) -> None:
    """Refuse to resume over a child the run left running, or (`--force`) stop it first."""
    alive = record.live_children()
    if not alive:
        return
    groups = ", ".join(str(pgid) for pgid in alive)
    if not force:
        msg = (
            f"run {record.run_id} left child process group {groups} running; "
            "pass --force to stop it and resume"
        )
        raise UsageError(msg)
    for pgid in alive:
        io_ops.stop_group(pgid)
    err(f"adws: stopped process group {groups} left by run {record.run_id}")


def _options(args: argparse.Namespace, record: RunRecord) -> tuple[RunOptions, str]:
    """Choose the options to resume with: the recorded ones, overridden by those given.

    Returns them and the line that says what they are (what the resume
    overrode shown with what was recorded). The workflows folder is named
    only when it is not the one this shell would use anyway.
    """
    from adws.discovery import workflows_dir  # noqa: PLC0415 - see the note on imports

    options, changed = record.options.merged(given_options(args, resume=True))
    apply_options(args, options)
    usual = str(workflows_dir(None).resolve())
    hide = ("workflows",) if options.workflows in {None, usual} else ()
    return options, options.describe(changed, hide=hide)


def _plan(
    args: argparse.Namespace,
    journal: Journal,
    record: RunRecord,
    workflow: Workflow,
    described: str,
) -> int:
    """Print what a resume would do, and the options it would use; run nothing."""
    from adws.journal.resume import resume_plan  # noqa: PLC0415 - see the note on imports
    from adws.render import plan_text  # noqa: PLC0415 - see the note on imports

    attempts = journal.attempts(record.run_id)
    plan = resume_plan(
        workflow, attempts, from_step=args.from_step, rerun_changed=args.rerun_changed
    )
    if isinstance(plan, str):
        raise UsageError(plan)
    out(plan_text(record, plan))
    out(_spend_plan(journal, record.workflow, plan, attempts))
    for problem in _drift(journal, record):
        out(f"drift: {problem}; a resume refuses it (--accept-drift goes on with it)")
    out(f"options: {described or 'none'}")
    return unreadable(journal, [record], attempts)


def _spend_plan(
    journal: Journal, workflow: str, plan: Sequence[StepPlan], attempts: Sequence[AttemptRecord]
) -> str:
    """Say what a resume does not spend again, and what finishing should cost by the history."""
    from adws.journal.estimates import (  # noqa: PLC0415 - see the note on imports
        finish_estimate,
        kept_spend,
        not_spent,
    )
    from adws.journal.plan import stored_branches  # noqa: PLC0415 - see the note on imports

    to_run = [item.step for item in plan if item.action in {"to run", "rerun"}]
    first = next((item.step for item in plan if item.action == "to run"), None)
    kept = not_spent(kept_spend(plan, attempts, stored_branches(attempts, first)))
    if not to_run:
        return kept
    estimate = finish_estimate(journal, workflow, to_run).describe()
    return f"{kept}\nto finish: {estimate}"


def _drift(journal: Journal, record: RunRecord) -> list[str]:
    """Say what changed in the worktrees the run kept, as a resume would refuse it."""
    from adws.journal.workspaces import worktrees_of  # noqa: PLC0415 - see the note on imports

    worktrees = worktrees_of(journal, record.run_id)
    if not worktrees:
        return []
    from adws.workspaces.drift import drifted  # noqa: PLC0415 - git only for runs with worktrees

    return drifted(worktrees, record.run_id)


def _start(  # noqa: PLR0913 - the run, its journal, and what the resume was asked for
    args: argparse.Namespace,
    journal: Journal,
    record: RunRecord,
    workflow: Workflow,
    extra: Mapping[str, object],
    *,
    decided: tuple[str, Decision] | None,
) -> ResumeStart:
    """Check the run may be resumed as asked and say where it starts; a refusal is exit 2."""
    from adws.journal.resume import prepare_resume  # noqa: PLC0415 - see the note on imports
    from adws.journal.sessions import sessions_of  # noqa: PLC0415 - as above
    from adws.journal.workspaces import approvals_of, worktrees_of  # noqa: PLC0415 - as above

    attempts = journal.attempts(record.run_id)
    if unreadable(journal, [record], attempts) != EXIT_OK:
        msg = f"run {record.run_id} cannot be resumed from rows the journal cannot read"
        raise UsageError(msg)
    # A rejection only runs cleanup: no fingerprint and no worktree is checked for it.
    rejecting = decided is not None and decided[1].verdict == "rejected"
    try:
        start = prepare_resume(
            workflow,
            record,
            attempts,
            from_step=args.from_step,
            rerun_changed=args.rerun_changed,
            keep_changed=rejecting or getattr(args, "keep_changed", False),
            accept_drift=rejecting or getattr(args, "accept_drift", False),
            extra=extra,
            worktrees=worktrees_of(journal, record.run_id),
            approvals=approvals_of(journal, record.run_id),
            sessions=sessions_of(journal, record.run_id),
        )
    except ValueError as exc:  # its inputs or a step's outputs are not readable
        msg = f"run {record.run_id} cannot be resumed: {exc} ({journal.path})"
        raise UsageError(msg) from exc
    if isinstance(start, str):
        raise UsageError(start)
    return start


def _decision(
    run_id: str, decided: tuple[str, Decision], now: str, budget: Budget | None
) -> Guarded:
    """Record a decision stamped `now`, only while its question is open (else refuse)."""
    import attrs  # noqa: PLC0415 - see the note on imports

    from adws.journal.workspaces import decided_statement  # noqa: PLC0415 - as above

    step, decision = decided
    answered = (
        f"the question at step {step!r} of run {run_id} was answered meanwhile; "
        f"look again: adws status {run_id}"
    )
    stamped = attrs.evolve(decision, at=now)
    return decided_statement(run_id, step, stamped, budget), answered


def _recorded(
    run_id: str,
    decided: tuple[str, Decision] | None,
    now: str,
    raised: tuple[Budget, RunOptions] | None,
) -> list[Guarded]:
    """Return what a claim records with a decision: it, and the budget it raised (if any)."""
    recorded = []
    if decided is not None:
        recorded.append(_decision(run_id, decided, now, None if raised is None else raised[0]))
    if raised is not None:
        recorded.append(((_SET_OPTIONS, (raised[1].to_json(), run_id)), None))
    return recorded


def _claim(  # noqa: PLR0913 - the run, what was read of it, and what is recorded with it
    args: argparse.Namespace,
    journal: Journal,
    record: RunRecord,
    start: ResumeStart,
    decided: tuple[str, Decision] | None,
    *,
    raised: tuple[Budget, RunOptions] | None = None,
) -> ResumeStart:
    """Claim the run with what this command read of it, recording the decision in the claim.

    Compare-and-set (`Journal.claim`): a run that changed since `record` was
    read is refused, so of two people deciding at once, or two resumes, one
    acts. The decision is recorded only while its question is still open,
    stamped with the time of the claim, and the run continues with it as
    the journal now holds it. `--keep-changed` makes today's fingerprints the
    recorded ones in the same transaction, and so is a budget an approval
    raised (`raised`: the budget, and the run's options that now hold it).
    """
    import attrs  # noqa: PLC0415 - see the note on imports

    from adws.journal.resume import baseline  # noqa: PLC0415 - see the note on imports
    from adws.journal.workspaces import approvals_of, decisions_for  # noqa: PLC0415 - as above

    run_id = record.run_id
    keep = getattr(args, "keep_changed", False)  # `adws reject` has no such flag

    def then(now: str) -> list[Guarded]:
        recorded = baseline(run_id, start) if keep else []
        recorded.extend(_recorded(run_id, decided, now, raised))
        return recorded

    refused = journal.claim(run_id, force=args.force, seen=record.seen, then=then)
    if refused is not None:
        raise UsageError(refused)
    if decided is None:
        return start
    decisions = decisions_for(approvals_of(journal, run_id), journal.attempts(run_id))
    return attrs.evolve(start, decisions=decisions)


def _decide_elsewhere(
    args: argparse.Namespace,
    journal: Journal,
    record: RunRecord,
    decided: tuple[str, Decision],
    raised: Budget | None,
) -> int:
    """Record a decision on a run of another host, compare-and-set; its host continues it."""
    with_options = None
    if raised is not None:  # the raised limits go with the run's options, for its host
        import attrs  # noqa: PLC0415 - see the note on imports

        options, _ = _options(args, record)
        with_options = (raised, attrs.evolve(options, raised=True))
    refused = journal.claim(
        record.run_id,
        seen=record.seen,
        then=lambda now: _recorded(record.run_id, decided, now, with_options),
        take=False,
    )
    if refused is not None:
        raise UsageError(refused)
    host = record.host
    err(
        f"run {record.run_id} continues on host {host}: adws worker there, "
        f"or adws resume {record.run_id} on {host}"
    )
    return EXIT_OK


def continue_run(
    args: argparse.Namespace,
    journal: Journal,
    record: RunRecord,
    decided: tuple[str, Decision] | None = None,
) -> int:
    """Continue a recorded run as `adws resume` does; `decided` is a decision to record first.

    `adws approve` and `adws reject` come through here with theirs: it is
    journaled in the run's claim, so of two people deciding at once one
    decides, and the other is told the run changed since they read it.
    """
    raised = _raise(args, record, decided)
    if decided is not None and _elsewhere(record) and not getattr(args, "here", False):
        return _decide_elsewhere(args, journal, record, decided, raised)
    _check_host(journal, record, here=getattr(args, "here", False))
    options, described = _options(args, record)
    if raised is not None:  # the raised limits replace the workflow's, from now on
        import attrs  # noqa: PLC0415 - see the note on imports

        options = attrs.evolve(options, raised=True)
        apply_options(args, options)
    args.workflow = record.workflow
    workflow = with_agents(args)
    extra = parse_inputs(args.input, args.inputs)
    start = _start(args, journal, record, workflow, extra, decided=decided)
    if start.resume_from is None:
        if decided is not None:  # it ended since this command read it (or a forged row)
            raise UsageError(
                journal.changed(record.run_id, record.seen)
                or f"run {record.run_id} has nothing left to decide: every step succeeded"
            )
        err(f"every step of run {record.run_id} already succeeded; nothing to resume")
        return EXIT_OK
    if record.status != "running" or record.stale:
        _stop_children(record, force=args.force)  # what a crashed run may have left behind
    # The claim is the check: compare-and-set, so of several resumes or decisions one acts.
    start = _claim(
        args, journal, record, start, decided, raised=None if raised is None else (raised, options)
    )
    _reset(journal, record, start)
    if extra:
        journal.add_inputs(record.run_id, extra)  # a later resume needs them too
    if not args.quiet:
        err(f"resuming run {record.run_id}" + (f" with {described}" if described else ""))
    from adws.journal.estimates import kept_spend, not_spent  # noqa: PLC0415 - see the note on imports

    return execute(
        args,
        workflow,
        start.context,
        run_id=record.run_id,
        resume_from=start.resume_from,
        steps=start.steps,
        reuse=start.reuse,
        spent=start.spent,
        rerun=start.rerun,
        options=options,
        bases=start.bases,
        decisions=start.decisions,
        kept=not_spent(kept_spend(start.plan, journal.attempts(record.run_id), start.reuse)),
        sessions=start.sessions,
    )


def _elsewhere(record: RunRecord) -> bool:
    """Tell whether another host ran the run (its worktrees and process groups are there)."""
    import socket  # noqa: PLC0415 - see the note on imports

    return record.host is not None and record.host != socket.gethostname()


def _check_host(journal: Journal, record: RunRecord, *, here: bool) -> None:
    """Refuse to continue a run of another host here, unless `here` and it left no worktree."""
    if not _elsewhere(record):
        return
    run_id, host = record.run_id, record.host
    if not here:
        msg = (
            f"run {run_id} belongs to host {host}: resume it there (adws worker, or adws "
            f"resume {run_id} on {host}), or pass --here to continue it on this host"
        )
        raise UsageError(msg)
    from adws.journal.workspaces import worktrees_of  # noqa: PLC0415 - see the note on imports

    present = [tree.label for tree in worktrees_of(journal, run_id) if tree.state == "present"]
    if present:
        msg = (
            f"run {run_id} has worktrees present on host {host} ({', '.join(present)}): "
            f"--here cannot continue it without them; resume it on {host}"
        )
        raise UsageError(msg)


def _reset(journal: Journal, record: RunRecord, start: ResumeStart) -> None:
    """Reset what the attempt in flight when the run stopped left in its worktrees, and say so.

    Only once the run is claimed: a resume its claim refused touches nothing.
    """
    if start.resets:
        from adws.workspaces.drift import reset_in_flight  # noqa: PLC0415 - see the note on imports

        for line in reset_in_flight(start.resets, journal.attempts(record.run_id), record.run_id):
            err(line)


def _too_early(record: RunRecord) -> str | None:
    """Say why a parked run may not go on yet (its limit resets later), or None if it may."""
    from adws.render.words import parked_until  # noqa: PLC0415 - see the note on imports

    if record.status != "parked" or record.due(io_ops.wall_clock()):
        return None
    until = parked_until(record.wake_at, record.parked_reason or "its agent's limit")
    return (
        f"run {record.run_id} is {until}; adws resume {record.run_id} --now goes on before "
        "(the agent may refuse again), adws resume --due once the time has come"
    )


_INTERRUPTED: Final = frozenset({130, 143, 129})
_WORST: Final = (0, EXIT_CODES["parked"], EXIT_CODES["blocked"], EXIT_USAGE, EXIT_FAILED)
"""Exit codes from best to worst, for `--due`: an interruption is worse than all of them."""


def worst(codes: list[int]) -> int:
    """Return the worst of the runs' exit codes (see `adws resume --help`; `adws worker` too)."""
    stopped = [code for code in codes if code in _INTERRUPTED]
    if stopped:
        return stopped[0]
    return max(codes, key=lambda code: _WORST.index(code) if code in _WORST else len(_WORST))


def _due(args: argparse.Namespace) -> int:
    """Resume every parked run of this host whose time has come, oldest first."""
    import argparse  # noqa: PLC0415 - see the note on imports
    import socket  # noqa: PLC0415 - as above

    from adws.render.words import ended  # noqa: PLC0415 - as above

    for given, flag in ((args.run, "a run id"), (args.plan, "--plan"), (args.from_step, "--from")):
        if given:
            msg = f"--due resumes every parked run whose time has come; leave out {flag}"
            raise UsageError(msg)
    if args.input or args.inputs:
        msg = "--due resumes every parked run whose time has come; leave out -i and --inputs"
        raise UsageError(msg)
    journal = require_journal(args)
    now, host = io_ops.wall_clock(), socket.gethostname()
    due = [run for run in journal.runs(status="parked") if run.host == host and run.due(now)]
    if not due:
        out(f"no parked run of this host is due in {journal.path}")
        return EXIT_OK
    codes: list[int] = []
    for listed in reversed(due):  # oldest first
        # Read whole, as a claim compares it (its last attempt): `runs` lists it without.
        record = find_run(journal, listed.run_id)
        try:
            code = continue_run(argparse.Namespace(**vars(args)), journal, record)
        except UsageError as exc:
            out(f"{record.run_id} {record.workflow}: not resumed: {exc}")
            codes.append(EXIT_USAGE)
            continue
        codes.append(code)
        found = find_run(journal, record.run_id)
        out(f"{record.run_id} {record.workflow}: {ended(found.status, found.error)} (exit {code})")
        if code in _INTERRUPTED:
            break  # a Ctrl-C stops the round: the runs after it stay parked
    return worst(codes)


def cmd_resume(args: argparse.Namespace) -> int:
    """Continue a run from its first step that did not succeed (or show the plan).

    A run waiting for approval whose wait expired is ended as rejected
    (reason `timeout`); one still waiting waits again. A parked run goes on
    only once its time has come, unless `--now`; `--due` resumes every
    parked run of this host whose time has come.
    """
    from adws.cli._waits import expired  # noqa: PLC0415 - see the note on imports

    if args.due:
        return _due(args)
    if args.run is None:
        msg = "name the run to resume (adws runs lists them), or pass --due"
        raise UsageError(msg)
    journal = require_journal(args, readonly=args.plan)
    record = find_run(journal, args.run)
    if record.status == "succeeded" and not args.plan:
        err(f"run {record.run_id} already succeeded; nothing to resume")
        return EXIT_OK
    early = None if args.plan or args.now else _too_early(record)
    if early is not None:
        err(f"adws: {early}")
        return EXIT_CODES["parked"]
    if args.plan:
        _, described = _options(args, record)
        args.workflow = record.workflow
        return _plan(args, journal, record, with_agents(args), described)
    return continue_run(args, journal, record, expired(journal, record))
