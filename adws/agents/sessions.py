"""Agent sessions that continue: which backends can, how to ask, and a session the CLI lost.

An agent step's retry after a rejected answer, and the next round of a
`with_verification`, continue the session of the call before: the agent
keeps what it read and tried, and is told only what is new (the feedback).
A backend says it can with `continues_sessions = True` and honours
`AgentRequest.session`: the `claude` preset adds `--resume ID`, `codex`
runs `codex exec resume ID` (its `--sandbox` becomes `-c sandbox_mode=...`,
which `exec resume` takes), `ClaudeAgent` sets the SDK's `resume`, and a
`ScriptedAgent(..., sessions=True)` plays along. Any other backend gets the
whole prompt with the feedback, as before. A session the CLI cannot find
(`No conversation found with session ID`, codex's `no rollout found for
thread id`: a deleted home, an expired session) is asked again at once in
a fresh session with the whole prompt, and the journal records that the
call did not continue, and why.

Each call's session is the one its CLI names in its init event (claude's
`system`/`init` `session_id`, codex's `thread.started` `thread_id`),
journaled as soon as it is printed (`AgentSessionStarted`), so a call
stopped halfway has its session recorded, and a resume can continue it.

A session id becomes an argument of the CLI's command line, so only a
plain token is ever trusted (`SESSION_ID`: a letter or digit, then up to
127 letters, digits, `.`, `_`, `:` or `-`): one a CLI names that is not
one (`--dangerously-bypass-approvals-and-sandbox` would be codex's flag)
is neither journaled nor continued, and the answer says so
(`session_refused`); a backend asked to continue one refuses the call
without starting anything (`refuse_session`); the journal refuses a row
that holds one (`adws.journal.store.sessions`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io

from adws._exceptions import DefinitionError
from adws.engine.errors import ErrorType, PipelineError
from adws.engine.events import AgentSessionStarted
from adws.engine.scope import AgentSession, current_scope

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.agents.base import AgentRequest, AgentResponse

__all__ = [
    "CLAUDE",
    "CODEX",
    "LOST_SESSION",
    "SESSION_ID",
    "SESSION_MODES",
    "CallSessions",
    "Continuation",
    "SessionMode",
    "SessionSwitch",
    "check_sessions",
    "continues_sessions",
    "feedback_prompt",
    "hear_lines",
    "interrupted_prompt",
    "lost_session",
    "plain_session",
    "plan_continuation",
    "refuse_session",
    "session_listener",
    "unplain_session",
]

SessionMode: TypeAlias = Literal["continue", "fresh"]
SESSION_MODES: Final = ("continue", "fresh")
LOST_SESSION: Final = ("No conversation found with session ID", "no rollout found for thread id")
"""What claude and codex say when they cannot find the session they were asked to continue."""
SESSION_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
"""A session id adws passes to a CLI: a plain token, never an option or a second argument."""


def plain_session(value: object) -> bool:
    r"""Tell whether `value` is a session id a CLI may be given (a whole `SESSION_ID`).

    >>> plain_session("0199a2b4-7c1e-7f00-8d1b-5e0c9f2a3b4c"), plain_session("t-1:2.x_y")
    (True, True)
    >>> plain_session("--dangerously-bypass-approvals-and-sandbox"), plain_session("s-1\n")
    (False, False)
    """
    return isinstance(value, str) and SESSION_ID.fullmatch(value) is not None


def unplain_session(value: object) -> str:
    """Say why a session id is not one adws passes to a CLI (see `SESSION_ID`).

    >>> print(unplain_session("-x"))
    session id '-x' is not a plain token ([A-Za-z0-9][A-Za-z0-9._:-]{0,127})
    """
    shown = repr(value)
    if len(shown) > _SHOWN:
        shown = shown[:_SHOWN] + "…"
    return f"session id {shown} is not a plain token ({SESSION_ID.pattern})"


_SHOWN: Final = 160
"""How much of a refused session id a message quotes."""


def refuse_session(request: AgentRequest, backend: str) -> PipelineError | None:
    """Return the error that stops `backend` continuing a session that is not a plain token.

    Nothing adws journals or hears from a CLI can get here (both refuse such
    an id first); this is the last guard before an argv, for a request built
    by hand.
    """
    if request.session is None or plain_session(request.session):
        return None
    message = f"{backend} was not started for step {request.step_name!r}: " + unplain_session(
        request.session
    )
    return PipelineError(request.step_name, ErrorType.AGENT_FAILED, message, {"permanent": True})


def check_sessions(owner: str, value: object) -> None:
    """Refuse a `sessions=` that is not one of `SESSION_MODES`, at definition time.

    >>> check_sessions("agent_step 'ask'", "again")
    Traceback (most recent call last):
    ...
    adws._exceptions.DefinitionError: agent_step 'ask': sessions must be "continue" (a retry continues the session of the attempt before) or "fresh" (every attempt starts a new session), got 'again'
    """  # noqa: E501
    if not isinstance(value, str) or value not in SESSION_MODES:
        msg = (
            f'{owner}: sessions must be "continue" (a retry continues the session of the'
            ' attempt before) or "fresh" (every attempt starts a new session),'
            f" got {value!r}"
        )
        raise DefinitionError(msg)


def continues_sessions(agent: object) -> bool:
    """Tell whether a backend continues the session `AgentRequest.session` names."""
    return getattr(agent, "continues_sessions", False) is True


@final
@attrs.frozen
class SessionSwitch:
    """How an agent CLI continues a session, and where it names the session a call runs in.

    `resume` turns a call's command line into the one that continues
    session ID; `announced` reads the session's id from one line of the
    CLI's output (its init event), None from any other line.

    >>> CLAUDE.resume(("claude", "-p"), "s-1")
    ('claude', '-p', '--resume', 's-1')
    >>> CODEX.resume(("codex", "exec", "--json", "-", "--sandbox", "read-only"), "t-1")
    ('codex', 'exec', 'resume', 't-1', '--json', '-', '-c', 'sandbox_mode="read-only"')
    """

    resume: Callable[[tuple[str, ...], str], tuple[str, ...]]
    announced: Callable[[str], str | None]


def _claude_resume(argv: tuple[str, ...], session: str) -> tuple[str, ...]:
    return (*argv, "--resume", session)


def _codex_resume(argv: tuple[str, ...], session: str) -> tuple[str, ...]:
    """Run `codex exec resume ID ...`: it takes no `--sandbox`, so say it as configuration."""
    at = argv.index("exec") + 1 if "exec" in argv else len(argv)
    rest: list[str] = []
    words = iter(argv[at:])
    for word in words:
        if word in {"--sandbox", "-s"}:
            rest += ["-c", f'sandbox_mode="{next(words, "")}"']
        elif word.startswith("--sandbox="):
            rest += ["-c", f'sandbox_mode="{word.partition("=")[2]}"']
        else:
            rest.append(word)
    return (*argv[:at], "resume", session, *rest)


def _announced(line: str, marker: str, kind: str, field: str) -> str | None:
    import json  # noqa: PLC0415 - only for the line that names the session

    if marker not in line:  # every output line passes here: look before parsing
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict) or event.get("type") != kind:
        return None
    if kind == "system" and event.get("subtype") != "init":
        return None
    found = event.get(field)
    return found if isinstance(found, str) and found else None


def _claude_announced(line: str) -> str | None:
    """Read claude's `system`/`init` event (stream-json) for its session id.

    >>> _claude_announced('{"type": "system", "subtype": "init", "session_id": "s-1"}')
    's-1'
    >>> _claude_announced('{"type": "system", "subtype": "api_retry", "session_id": "s-1"}')
    """
    return _announced(line, '"init"', "system", "session_id")


def _codex_announced(line: str) -> str | None:
    """Read codex's `thread.started` event (`--json`) for its thread id.

    >>> _codex_announced('{"type":"thread.started","thread_id":"t-1"}')
    't-1'
    >>> _codex_announced("thread.started, not JSON")
    """
    return _announced(line, "thread.started", "thread.started", "thread_id")


CLAUDE: Final = SessionSwitch(_claude_resume, _claude_announced)
CODEX: Final = SessionSwitch(_codex_resume, _codex_announced)


def session_listener(
    request: AgentRequest, announced: Callable[[str], str | None] | None
) -> Callable[[str], None] | None:
    """Pass the session a CLI names on to the step, once, when both sides care."""
    hear = request.on_session
    if hear is None or announced is None:
        return None
    told: list[str] = []

    def listen(line: str) -> None:
        if told:
            return
        found = announced(line)
        if found is not None:
            told.append(found)
            hear(found)

    return listen


def hear_lines(*listeners: Callable[[str], None] | None) -> Callable[[str], None] | None:
    """Join the listeners of an agent's output lines that are there (None when none is)."""
    present = [listener for listener in listeners if listener is not None]
    if len(present) <= 1:
        return present[0] if present else None

    def hear(line: str) -> None:
        for listener in present:
            listener(line)

    return hear


def lost_session(error: PipelineError) -> str | None:
    r"""Return what the agent said when it could not find the session to continue, or None.

    >>> from adws.engine.errors import PipelineError
    >>> lost_session(PipelineError("s", "AgentFailed", "exited with 1",
    ...     {"stderr_tail": "No conversation found with session ID: s-1\n"}))
    'No conversation found with session ID: s-1'
    """
    texts = [error.message, *(str(error.context.get(key) or "") for key in _SAID)]
    for text in texts:
        for line in text.splitlines():
            if any(said in line for said in LOST_SESSION):
                return line.strip()
    return None


_SAID: Final = ("stderr_tail", "stdout_tail", "parse_error")


def feedback_prompt(lines: Sequence[str]) -> str:
    """Tell a continued session what was wrong with its answer: only the new feedback.

    >>> print(feedback_prompt(["attempt 1/3 failed: ContractViolation: missing SUMMARY"]))
    Your answer was rejected. Fix every point below, then answer again in the format asked for:
    - attempt 1/3 failed: ContractViolation: missing SUMMARY
    <BLANKLINE>
    """
    listed = "\n".join(f"- {line}" for line in lines)
    return (
        "Your answer was rejected. Fix every point below, then answer again in the format"
        f" asked for:\n{listed}\n"
    )


def interrupted_prompt(step_name: str, lines: Sequence[str] = ()) -> str:
    """Tell a session a resume continues that its work on step `step_name` was interrupted.

    >>> print(interrupted_prompt("implement"))
    Your work on step `implement` was interrupted before you answered. Look at where you left off, finish the task, then answer in the format asked for.
    <BLANKLINE>
    """  # noqa: E501
    said = (
        f"Your work on step `{step_name}` was interrupted before you answered. Look at where"
        " you left off, finish the task, then answer in the format asked for.\n"
    )
    return said + ("\n" + feedback_prompt(lines) if lines else "")


@final
@attrs.frozen
class Continuation:
    """A call that continues a session: which, what to tell it, and the attempt it came from.

    `why` (not empty) says why the session cannot be continued after all (a
    parent run's session on another host): the call starts afresh with
    `prompt`, and the journal records it did not continue `session`, and why.
    """

    session: str
    prompt: str
    from_attempt: int
    why: str = ""


def plan_continuation(
    note: AgentSession | None, feedback: tuple[str, ...], step_name: str, whole: str = ""
) -> Continuation | None:
    """Say which session the next call continues and what it tells it, or None for a fresh one.

    A session continues when the step has something new to tell it: feedback
    lines it has not seen (a rejected answer), or that its call was
    interrupted (a resume). Otherwise (a retry after a timeout: nothing new)
    the call starts afresh with the whole prompt. The parent run's session
    (a review round's first call) is told the `whole` prompt: it is a new task.

    >>> note = AgentSession("s-1", 1)
    >>> plan_continuation(note, ("attempt 1/3 failed: Blocked: no",), "ask").session
    's-1'
    >>> plan_continuation(note, (), "ask") is None
    True
    >>> plan_continuation(AgentSession("s-0", 1, parent="r-1"), (), "ask", "Do it.").prompt
    'Do it.'
    """
    if note is None:
        return None
    if note.parent:
        return Continuation(note.session_id, whole, note.attempt, note.why)
    seen = len(note.feedback)
    if feedback[:seen] != note.feedback:
        return None  # another history than the one the session was told
    new = feedback[seen:]
    if note.interrupted:
        return Continuation(note.session_id, interrupted_prompt(step_name, new), note.attempt)
    if not new:
        return None
    return Continuation(note.session_id, feedback_prompt(new), note.attempt)


@final
class CallSessions:
    """Journal the sessions of one attempt's agent calls; remember the last for the next call.

    `before` is the session the step's call before ran in; `start` says
    what the next call is (a continuation, a fresh call after a lost session
    with `why`, or a plain fresh call); `announce` is the request's
    `on_session`; `finish` journals a session the backend named only in its
    answer, keeps the latest for the step's next call, and says in the
    answer whether it continued. A session id that is not a plain token
    (`plain_session`) is neither journaled nor kept: the answer loses it and
    says why (`session_refused`), and the step's next call starts afresh.
    """

    def __init__(self, key: tuple[str, str], attempt: int) -> None:
        """Follow the calls of the agent step `key[1]` at path `key[0]`, attempt `attempt`."""
        self.key = key
        self.attempt = attempt
        self.scope = current_scope()
        self._plan: Continuation | None = None
        self._feedback: tuple[str, ...] = ()
        self._why = ""
        self._announced: str | None = None
        self._refused: str | None = None

    def before(self) -> AgentSession | None:
        """Return the session the step's call before ran in (None for a first call)."""
        return self.scope.sessions.get(self.key)

    def start(self, plan: Continuation | None, feedback: tuple[str, ...], why: str = "") -> None:
        """Begin a call told `feedback`: continuing `plan`'s session, or afresh (lost: `why`)."""
        self._plan, self._feedback, self._why, self._announced = plan, feedback, why, None
        self._refused = None

    def announce(self, session_id: str) -> None:
        """Journal the session the call runs in, once, as soon as the agent names it.

        An id that is not a plain token is refused instead: never journaled.
        """
        if self._announced is not None or self._refused is not None:
            return
        if not plain_session(session_id):
            self._refused = unplain_session(session_id)
            return
        self._announced = session_id
        path, asked_by = self.key
        plan = self._plan
        self.scope.emit(
            AgentSessionStarted(
                self.scope.run_id,
                path,
                self.attempt,
                asked_by,
                session_id,
                None if plan is None else not self._why,
                None if plan is None else plan.session,
                None if plan is None else plan.from_attempt,
                self._why,
            )
        )

    def finish(
        self, answer: IOResult[AgentResponse, PipelineError]
    ) -> IOResult[AgentResponse, PipelineError]:
        """End the call: journal and keep its session; say in the answer whether it continued."""
        if isinstance(answer, IOSuccess):
            response = unsafe_perform_io(answer.unwrap())
            named = response.metadata.get("session_id")
        else:
            named = unsafe_perform_io(answer.failure()).context.get("session_id")
        if self._announced is None and isinstance(named, str) and named:
            self.announce(named)
        if named is not None and named != "" and not plain_session(named):
            self._refused = self._refused or unplain_session(named)
        if self._refused is not None:  # the call's session is not trusted: never kept
            return _without_session(answer, self._refused)
        if self._announced is not None and self.scope.run_id:  # outside a run, nothing is kept
            note = AgentSession(self._announced, self.attempt, self._feedback)
            self.scope.sessions[self.key] = note
        if self._plan is None or not isinstance(answer, IOSuccess):
            return answer
        said: dict[str, object] = {"continued": not self._why}
        if self._why:
            said["not_continued"] = self._why
        return IOSuccess(attrs.evolve(response, metadata={**response.metadata, **said}))


def _without_session(
    answer: IOResult[AgentResponse, PipelineError], refused: str
) -> IOResult[AgentResponse, PipelineError]:
    """Drop the session id an answer names, saying why (`session_refused`): it is not trusted."""
    said = {"session_id": None, "session_refused": refused}
    if isinstance(answer, IOSuccess):
        response = unsafe_perform_io(answer.unwrap())
        return IOSuccess(attrs.evolve(response, metadata={**response.metadata, **said}))
    error = unsafe_perform_io(answer.failure())
    return IOFailure(error.with_context(**said))
