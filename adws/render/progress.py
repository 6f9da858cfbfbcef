"""Progress lines for stderr: one line per event, and the whole error where a step fails.

`format_event` draws one event as one line. `Progress` is the observer's
memory: it puts a failure's whole error under its line, counts the rounds
of a `with_verification` step, and remembers the branches a parallel step
dropped so the run's final line can name them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, final

from adws.engine.errors import ErrorType
from adws.engine.events import (
    AgentActivity,
    AgentExchanged,
    AgentSessionStarted,
    AttemptFailed,
    BranchAttemptFailed,
    BranchFinished,
    BranchStarted,
    RoundFailed,
    RunEvent,
    RunFinished,
    RunStarted,
    StepSkipped,
    StepStarted,
    StepSucceeded,
    WorktreeRecorded,
)
from adws.engine.parking import is_parked, wake_at
from adws.render._text import indent, seconds, short
from adws.render.errors import branch_lines, error_lines
from adws.render.words import parked_until

if TYPE_CHECKING:
    from adws.engine.errors import PipelineError

__all__ = ["Progress", "format_event"]

_UNDER: str = "      "
"""How far a failure's details are indented under its progress line."""


def _at(event: StepStarted | AttemptFailed | StepSucceeded | StepSkipped | RoundFailed) -> str:
    return f"[{event.index + 1}/{event.total}]"


def _started(event: RunStarted) -> str:
    resumed = ""
    if event.resumed and event.first_step < len(event.steps):
        resumed = f", resuming at {event.steps[event.first_step]}"
        if event.rerun:
            verb = "runs" if len(event.rerun) == 1 else "run"
            resumed += f" ({', '.join(event.rerun)} {verb} again)"
    count = len(event.steps)
    noun = "step" if count == 1 else "steps"
    return f"{event.workflow}: run {event.run_id}, {count} {noun}{resumed}"


def _attempt_failed(event: AttemptFailed) -> str:
    prefix = f"{_at(event)} {event.step} …"
    if event.error.error_type == ErrorType.AWAITING_APPROVAL:
        return f"{prefix} waiting for approval: {event.error.message}"
    if is_parked(event.error):
        return f"{prefix} {_parked(event.error)}"
    if event.will_retry:
        wait = f" in {seconds(event.delay)}" if event.delay > 0 else ""
        return (
            f"{prefix} attempt {event.attempt}/{event.max_attempts} failed: "
            f"{short(event.error)}; retrying{wait}"
        )
    after = f" after {event.attempt} attempts" if event.attempt > 1 else ""
    return f"{prefix} failed{after}: {short(event.error)}"


def _round_failed(event: RoundFailed) -> str:
    then = "; running it again" if event.will_retry else ""
    return (
        f"{_at(event)} {event.path} … round {event.round}/{event.max_rounds}: verification "
        f"failed: {short(event.error)}{then}"
    )


def format_event(event: RunEvent) -> str:  # noqa: C901, PLR0911, PLR0912 - one line per kind of event
    """Render one progress line for stderr.

    >>> format_event(StepSucceeded("r", "verify", 1, 4, 2, 1.23, None))  # type: ignore[arg-type]
    '[2/4] verify … ok in 1.2s (2 attempts)'
    """
    match event:
        case RunStarted():
            return _started(event)
        case StepStarted():
            return f"{_at(event)} {event.step} … running"
        case AttemptFailed():
            return _attempt_failed(event)
        case StepSucceeded():
            attempts = f" ({event.attempts} attempts)" if event.attempts > 1 else ""
            return f"{_at(event)} {event.step} … ok in {seconds(event.seconds)}{attempts}"
        case StepSkipped():
            why = "condition is false" if event.reason == "condition" else "an earlier step failed"
            return f"{_at(event)} {event.step} … skipped ({why})"
        case BranchStarted() | BranchAttemptFailed() | BranchFinished():
            return _branch_line(event)
        case RoundFailed():
            return _round_failed(event)
        case AgentActivity():
            return f"      {event.branch or event.step} … {event.text}"
        case WorktreeRecorded():
            return _worktree_line(event)
        case AgentExchanged():
            answered = "answered" if event.answer is not None else "gave no answer"
            return f"{event.path} … {event.asked_by}'s agent {answered} in {seconds(event.seconds)}"
        case AgentSessionStarted():
            return _session_line(event)
        case RunFinished():
            head = f"{event.workflow} {event.status} in {seconds(event.seconds)}"
            spent = _spent(event)
            if event.error is None:
                return f"{head} (run {event.run_id}){spent}"
            if event.status == "waiting":
                return _waiting(event, spent)
            if event.status == "parked":
                return _parked_run(event, spent)
            where = f" at {event.error.step_name}" if event.error.step_name else ""
            return f"{head}{where}: {short(event.error)} (run {event.run_id}){spent}"
    return f"warning: observer {event.observer} failed and was detached: {event.message}"


def _session_line(event: AgentSessionStarted) -> str:
    """Say that a call continues its session, or why it could not; "" for a fresh call.

    >>> _session_line(AgentSessionStarted("r", "ask", 2, "ask", "s-1", True, "s-1", 1))
    '      ask … continuing session s-1 of attempt 1'
    >>> lost = AgentSessionStarted("r", "ask", 2, "ask", "s-2", False, "s-1", 1, "gone")
    >>> print(_session_line(lost))
          ask … session s-1 of attempt 1 not continued (gone): new session s-2
    """
    if event.continued is None:
        return ""
    where = f"      {event.path} … "
    before = f"session {event.continues} of attempt {event.from_attempt}"
    if event.continued:
        return f"{where}continuing {before}"
    return f"{where}{before} not continued ({event.why}): new session {event.session_id}"


def _waiting(event: RunFinished, spent: str) -> str:
    """Say where the run waits and the two commands that end the wait."""
    run, step = event.run_id, event.error.step_name if event.error else ""
    if event.error is not None and event.error.context.get("budget_question") is True:
        return (
            f"{event.workflow} waiting for a larger budget at {step} (run {run}){spent}: "
            f"{event.error.message}; adws approve {run} --max-cost USD (or --max-tokens N) "
            f"raises it, or adws reject {run} --reason TEXT"
        )
    return (
        f"{event.workflow} waiting for approval at {step} (run {run}){spent}: "
        f"adws approve {run} [--note TEXT], or adws reject {run} --reason TEXT"
    )


def _parked(error: PipelineError) -> str:
    return parked_until(wake_at(error), str(error.context.get("reason") or error.message))


def _parked_run(event: RunFinished, spent: str) -> str:
    """Say until when the run is parked, and the commands that go on with it."""
    run = event.run_id
    step = f" at {event.error.step_name}" if event.error and event.error.step_name else ""
    until = _parked(event.error) if event.error is not None else "parked"
    return (
        f"{event.workflow} {until}{step} (run {run}){spent}: adws resume {run} then, "
        "or adws resume --due"
    )


def _worktree_line(event: WorktreeRecorded) -> str:
    """Say where a worktree was made and when it went; "" after an attempt (nothing new)."""
    if event.state == "created":
        return f"      {event.step} … worktree {event.path} on branch {event.branch}"
    if event.state == "removed":
        return f"      {event.step} … worktree removed; branch {event.branch} stays"
    if event.state == "discarded":
        return f"      {event.step} … not chosen: worktree and branch {event.branch} removed"
    return ""


def _spent(event: RunFinished) -> str:
    """Say what the run spent, and of what budget, when either is known."""
    if event.usage is None and event.budget is None:
        return ""
    spent = "nothing reported" if event.usage is None else event.usage.describe()
    limit = "" if event.budget is None else f" (budget {event.budget.describe()})"
    return f"; spent {spent}{limit}"


def _branch_line(event: BranchStarted | BranchAttemptFailed | BranchFinished) -> str:  # noqa: PLR0911 - one line per way a branch goes
    prefix = f"[{event.index + 1}/{event.total}] {event.branch} …"
    if isinstance(event, BranchStarted):
        return f"{prefix} running"
    if isinstance(event, BranchAttemptFailed):
        if is_parked(event.error):
            return f"{prefix} {_parked(event.error)}"
        if event.will_retry:
            failed = f"attempt {event.attempt}/{event.max_attempts} failed: {short(event.error)}"
            wait = f" in {seconds(event.delay)}" if event.delay > 0 else ""
            return f"{prefix} {failed}; retrying{wait}"
        after = f" after {event.attempt} attempts" if event.attempt > 1 else ""
        return f"{prefix} failed{after}: {short(event.error)}"
    counts = f"{event.done}/{event.of} done, {event.failed} failed"
    match event.status:
        case "succeeded":
            attempts = f" ({event.attempts} attempts)" if event.attempts > 1 else ""
            return f"{prefix} ok in {seconds(event.seconds)}{attempts} · {counts}"
        case "reused":
            return f"{prefix} kept from an earlier session · {counts}"
        case "failed" if is_parked(event.error):
            return f"{prefix} parked · {counts}"
        case "failed":
            return f"{prefix} gave up · {counts}"
        case _:
            return f"{prefix} cancelled · {counts}"


@final
class Progress:
    """Turn a run's events into the lines `adws run` prints on stderr.

    A final failure (of a step or a branch) is followed by its whole error,
    indented (`verbose`: with the traceback of a step that raised); a
    parallel step's failure lists how each branch ended instead, its
    branches' errors being shown above. A `with_verification` step's
    success says how many rounds it took; a run that succeeded although a
    parallel step dropped branches (`min_successes`) names them on its
    final line. Agent exchanges are not shown: `adws status --step` shows
    them whole. A resumed run's final line says what it did not spend again.
    """

    def __init__(self, *, verbose: bool = False, kept: str | None = None) -> None:
        """Start a run's progress; `verbose` adds tracebacks.

        `kept` says, for a resume, what it keeps and so does not spend again
        (see `adws.journal.store.estimates.not_spent`).
        """
        self.verbose = verbose
        self.kept = kept
        self.rounds: dict[str, int] = {}
        self.dropped: dict[str, list[str]] = {}
        self.succeeded: set[str] = set()

    def lines(self, event: RunEvent) -> list[str]:
        """Return the lines one event prints (none for an agent exchange or a worktree's hash)."""
        line = format_event(event)
        match event:
            case AgentExchanged():
                return []
            case RoundFailed():
                self.rounds[event.path] = event.round
            case AttemptFailed(will_retry=False) | BranchAttemptFailed(will_retry=False):
                return [line, *self._details(event.error)]
            case BranchFinished(status="failed" | "cancelled"):
                why = "" if event.error is None else f": {short(event.error)}"
                self.dropped.setdefault(event.step, []).append(
                    f"{event.branch} {event.status}{why}"
                )
            case StepSucceeded():
                self.succeeded.add(event.step)
                return [self._with_rounds(event.step, line)]
            case BranchFinished(status="succeeded"):
                return [self._with_rounds(event.branch, line)]
            case RunFinished():
                return [line + self._drops() + self._not_spent()]
            case _:
                pass
        return [line] if line else []  # a worktree hashed after an attempt says nothing new

    def _with_rounds(self, path: str, line: str) -> str:
        """Say how many rounds a verification took, when it took more than one."""
        failed = self.rounds.get(path)
        if failed is None:
            return line
        rounds = f"{failed + 1} rounds"
        head, _, tail = line.partition(" · ")
        # "(2 attempts)" already: say both in one parenthesis.
        head = f"{head[:-1]}, {rounds})" if head.endswith(")") else f"{head} ({rounds})"
        return f"{head} · {tail}" if tail else head

    def _details(self, error: PipelineError) -> list[str]:
        if error.error_type == ErrorType.AWAITING_APPROVAL:
            return []  # the question is on the line: there is no error to show under it
        if is_parked(error) and "branches" not in error.context:
            return indent([error.message.strip()], _UNDER)  # the line says until when, and why
        if "branches" in error.context:  # each failed branch's error was shown whole above
            return indent(branch_lines(error.context), _UNDER)
        return indent(error_lines(error, verbose=self.verbose), _UNDER)

    def _not_spent(self) -> str:
        """Say what a resume kept and so did not spend again ("" for a fresh run)."""
        return "" if self.kept is None else f"; {self.kept}"

    def _drops(self) -> str:
        """Name what succeeded steps dropped (branches that failed or were cancelled)."""
        dropped = [
            f"{step} dropped {', '.join(notes)}"
            for step, notes in self.dropped.items()
            if step in self.succeeded
        ]
        return "".join(f"; {note}" for note in dropped)
