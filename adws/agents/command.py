"""`CommandAgent`: run any command-line agent, prompt on stdin, answer on stdout."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Final, final

from returns.io import IOFailure, IOResult, IOSuccess

from adws import io_ops
from adws._checks import require_callable, require_count, require_seconds
from adws._exceptions import DefinitionError
from adws.agents.answers import AnswerError
from adws.agents.base import AgentRequest, AgentResponse
from adws.agents.offline import OFFLINE
from adws.agents.parsers import text
from adws.agents.sessions import hear_lines, refuse_session, session_listener
from adws.engine.errors import ErrorType, PipelineError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from adws.agents.sessions import SessionSwitch

__all__ = ["CommandAgent", "activity_listener", "read_outcome"]

_MISSING: Final = (
    "No such file or directory",
    "Permission denied",
    "Not a directory",
    "working folder",
)
"""Why a command could not start that no retry can change."""


@final
class CommandAgent:
    """Run `argv` once per request with the prompt on stdin; stdout is the answer.

    `argv` may be a list or one string split like a shell would (no shell
    runs it). The request's timeout and cwd, when set, take precedence over
    the ones given here. `parse` reads the answer from stdout, whatever the
    exit code: stdout as it is by default, or a tool's JSON with its usage
    (`adws.agents.parsers.claude_stream`, `claude_json`, `codex_jsonl`, or
    your own function `str -> AgentResponse`); an `AnswerError` it raises
    becomes the failure it names (`AgentUnavailable`, `PermissionDenied`,
    else `AgentFailed`) with stdout's tail, and its usage is still charged.

    Failures: a missing executable or working folder is `AgentFailed`
    marked `permanent` (never retried); a non-zero exit whose output the
    parser cannot read is `AgentFailed` with the exit code and stderr's tail
    (`permanent` when stderr says one of `permanent_stderr`); printing more
    than the request's `max_output_bytes` (times `output_factor`, for a CLI
    whose events repeat the answer) on stdout or stderr kills the process
    group as soon as it happens, and an answer longer than
    `max_output_bytes` fails too, both `AgentFailed` naming the limit;
    running past the timeout kills the group (`Timeout`); printing nothing
    for the request's `idle_timeout` kills it too (`AgentHung`).

    The step's `edits` picks `edits_argv` (appended when the step may edit
    files) or `no_edits_argv`; `activity` turns a stdout line into a short
    description of what the agent is doing, for the progress line.
    `sessions` says how the CLI continues a session (see
    `adws.agents.sessions`): with it, a request naming a `session` runs the
    command line that continues it, and the session the CLI names in its
    output is passed on as soon as it is printed; without it, the command
    cannot continue sessions and is always sent the whole prompt. A session
    that is not a plain token (`adws.agents.sessions.plain_session`) is
    never put on the command line: the call fails, permanent, and runs nothing.

    The command sees this process's environment less adws's own
    credentials (`ADWS_JOURNAL`, `PG*`, `GITHUB_TOKEN`, `GH_TOKEN`; see
    `adws.io_ops.environment`), plus `env`; `env_pass` names the ones it
    may see all the same, as the step's `env_pass` does for one step.
    """

    def __init__(  # noqa: PLR0913 - the command's whole configuration, all keyword-only
        self,
        argv: str | Sequence[str],
        *,
        timeout: float | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        parse: Callable[[str], AgentResponse] = text,
        edits_argv: Sequence[str] = (),
        no_edits_argv: Sequence[str] = (),
        output_factor: int = 1,
        activity: Callable[[str], str | None] | None = None,
        permanent_stderr: Sequence[str] = (),
        sessions: SessionSwitch | None = None,
        env_pass: Sequence[str] = (),
    ) -> None:
        """Keep the command line and its defaults."""
        self.argv = tuple(shlex.split(argv) if isinstance(argv, str) else argv)
        if not self.argv:
            msg = "CommandAgent needs a command to run"
            raise DefinitionError(msg)
        require_seconds("CommandAgent", "timeout", timeout, optional=True)
        self.timeout = timeout
        self.cwd = cwd
        self.env = dict(env) if env is not None else None
        self.env_pass = io_ops.checked_env_pass("CommandAgent", env_pass)
        require_callable("CommandAgent", "parse", parse)
        self.parse = parse
        self.edits_argv = tuple(edits_argv)
        self.no_edits_argv = tuple(no_edits_argv)
        require_count("CommandAgent", "output_factor", output_factor)
        self.output_factor = output_factor
        require_callable("CommandAgent", "activity", activity, optional=True)
        self.activity = activity
        self.permanent_stderr = tuple(permanent_stderr)
        self.sessions = sessions

    @property
    def continues_sessions(self) -> bool:
        """Tell whether this command continues a session a request names."""
        return self.sessions is not None

    def __repr__(self) -> str:
        """Show the command line."""
        return f"CommandAgent({shlex.join(self.argv)!r})"

    def argv_for(self, request: AgentRequest) -> tuple[str, ...]:
        """Return the command line for this request (with its edit switch and its session)."""
        argv = (*self.argv, *(self.edits_argv if request.edits else self.no_edits_argv))
        if request.session is not None and self.sessions is not None:
            return self.sessions.resume(argv, request.session)
        return argv

    def __call__(self, request: AgentRequest, /) -> IOResult[AgentResponse, PipelineError]:
        """Run the command and read its answer."""
        refused = OFFLINE.refuse(request, repr(self))
        if refused is None and self.sessions is not None:
            refused = refuse_session(request, repr(self))
        if refused is not None:
            return IOFailure(refused)
        argv = self.argv_for(request)
        timeout = request.timeout if request.timeout is not None else self.timeout
        outcome = io_ops.run_process(
            argv,
            stdin_text=request.prompt,
            timeout=timeout,
            cwd=request.cwd or self.cwd,
            env=self.env,
            env_pass=(*self.env_pass, *request.env_pass),
            max_output_bytes=request.max_output_bytes * self.output_factor,
            idle_timeout=request.idle_timeout,
            on_line=hear_lines(
                activity_listener(request, self.activity),
                session_listener(request, self.sessions and self.sessions.announced),
            ),
        )
        return read_outcome(
            request,
            outcome,
            shlex.join(argv),
            self.parse,
            timeout=timeout,
            permanent_stderr=self.permanent_stderr,
            factor=self.output_factor,
        )


def activity_listener(
    request: AgentRequest, activity: Callable[[str], str | None] | None
) -> Callable[[str], None] | None:
    """Pass what the agent is doing on to the step, when both sides care."""
    report = request.on_activity
    if report is None or activity is None:
        return None

    def hear(line: str) -> None:
        doing = activity(line)
        if doing:
            report(doing)

    return hear


def _details(outcome: io_ops.ProcessOutcome, command: str) -> dict[str, object]:
    return {
        "command": command,
        "returncode": outcome.returncode,
        "stderr_tail": io_ops.tail(outcome.stderr),
        "seconds": round(outcome.seconds, 3),
    }


def _stopped(  # noqa: PLR0913 - the outcome and what describes it
    request: AgentRequest,
    outcome: io_ops.ProcessOutcome,
    *,
    what: str,
    timeout: float | None,
    details: dict[str, object],
    factor: int,
) -> PipelineError | None:
    """Say why the process gave no answer to read, or None when it ran to its end."""
    step, failed = request.step_name, ErrorType.AGENT_FAILED
    if outcome.error is not None:
        permanent = any(reason in outcome.error for reason in _MISSING)
        return PipelineError(
            step,
            failed,
            f"could not start agent command: {outcome.error}",
            {**details, "permanent": True} if permanent else details,
        )
    if outcome.overflowed is not None:
        limit = request.max_output_bytes
        printed = limit * factor
        message = (
            f"{what} printed more than {printed} bytes on "
            f"{outcome.overflowed} (max_output_bytes {limit}) and was killed"
        )
        return PipelineError(step, failed, message, {**details, "limit": limit})
    if outcome.timed_out:
        message = f"{what} ran past its {timeout}s timeout and was killed"
        return PipelineError(step, ErrorType.TIMEOUT, message, details)
    if outcome.hung:
        message = (
            f"{what} printed nothing for {request.idle_timeout}s (idle_timeout) and was stopped"
        )
        return PipelineError(step, ErrorType.AGENT_HUNG, message, details)
    return None


def _exited(
    outcome: io_ops.ProcessOutcome, what: str, permanent_stderr: tuple[str, ...]
) -> tuple[str, bool]:
    last = outcome.stderr.strip().splitlines()[-1:] or ["no stderr"]
    permanent = any(pattern in outcome.stderr for pattern in permanent_stderr)
    return f"{what} exited with {outcome.returncode}: {last[0]}", permanent


def read_outcome(  # noqa: PLR0913 - the call and how to read it, keyword-only
    request: AgentRequest,
    outcome: io_ops.ProcessOutcome,
    command: str,
    parse: Callable[[str], AgentResponse],
    *,
    timeout: float | None,
    permanent_stderr: tuple[str, ...] = (),
    factor: int = 1,
    what: str | None = None,
) -> IOResult[AgentResponse, PipelineError]:
    """Turn a finished agent process into its answer, or the failure it explains.

    `what` names the agent in messages (`agent command `claude -p ...`` by default).
    """
    what = what or f"agent command `{command}`"
    details = _details(outcome, command)
    stopped = _stopped(request, outcome, what=what, timeout=timeout, details=details, factor=factor)
    if stopped is not None:
        return IOFailure(stopped)
    step = request.step_name
    try:
        parsed = parse(outcome.stdout)
    except ValueError as exc:
        found = exc if isinstance(exc, AnswerError) else AnswerError(str(exc))
        context = {**details, **found.details, "stdout_tail": io_ops.tail(outcome.stdout)}
        if found.usage is not None:
            context["usage"] = found.usage.to_dict()
        message = str(found) if found.error_type != ErrorType.AGENT_FAILED else ""
        if not message and outcome.returncode != 0:
            message, permanent = _exited(outcome, what, permanent_stderr)
            context["permanent"] = permanent or context.get("permanent", False)
            context["parse_error"] = str(found)
        message = message or f"{what}: {found}"
        return IOFailure(PipelineError(step, found.error_type, message, context))
    metadata = {**parsed.metadata, "command": command, "seconds": round(outcome.seconds, 3)}
    size = len(parsed.text.encode("utf-8", "surrogateescape"))
    problem = None
    if outcome.returncode != 0:
        problem, _ = _exited(outcome, what, permanent_stderr)
    elif size > request.max_output_bytes:
        problem = (
            f"{what} answered {size} bytes, more than the step's"
            f" max_output_bytes of {request.max_output_bytes}"
        )
    if problem is not None:
        context = {**details, **metadata}
        if parsed.usage is not None:
            context["usage"] = parsed.usage.to_dict()
        return IOFailure(PipelineError(step, ErrorType.AGENT_FAILED, problem, context))
    stderr = io_ops.tail(outcome.stderr)  # kept with the exchange, never as an output
    return IOSuccess(AgentResponse(parsed.text, metadata, parsed.usage, outcome.returncode, stderr))
