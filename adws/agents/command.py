"""`CommandAgent`: run any command-line agent, prompt on stdin, answer on stdout."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, final

from returns.io import IOFailure, IOResult, IOSuccess

from adws import io_ops
from adws._checks import require_callable, require_seconds
from adws.agents.base import AgentRequest, AgentResponse
from adws.agents.offline import OFFLINE
from adws.agents.parsers import AnswerError, text
from adws.errors import ErrorType, PipelineError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = ["CommandAgent"]


@final
class CommandAgent:
    """Run `argv` once per request with the prompt on stdin; stdout is the answer.

    `argv` may be a list or one string split like a shell would (no shell
    runs it). The request's timeout and cwd, when set, take precedence over
    the ones given here. Non-zero exit or a missing executable is
    `AgentFailed` (with the exit code and stderr's tail); printing more than
    the request's `max_output_bytes` (the step contract's, 1 MiB by default)
    on stdout or stderr kills the process group as soon as it happens and is
    `AgentFailed` naming the limit; running past the timeout kills the process
    group and is `Timeout`. `parse` reads the answer from stdout: stdout
    as it is by default, or a tool's JSON with its usage
    (`adws.agents.parsers.claude_json`, `codex_jsonl`, or your own function
    `str -> AgentResponse`); a `ValueError` it raises is `AgentFailed` with
    stdout's tail, and the usage an `AnswerError` carries is still charged.
    """

    def __init__(
        self,
        argv: str | Sequence[str],
        *,
        timeout: float | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        parse: Callable[[str], AgentResponse] = text,
    ) -> None:
        """Keep the command line and its defaults."""
        self.argv = tuple(shlex.split(argv) if isinstance(argv, str) else argv)
        if not self.argv:
            msg = "CommandAgent needs a command to run"
            raise ValueError(msg)
        require_seconds("CommandAgent", "timeout", timeout, optional=True)
        self.timeout = timeout
        self.cwd = cwd
        self.env = dict(env) if env is not None else None
        require_callable("CommandAgent", "parse", parse)
        self.parse = parse

    def __repr__(self) -> str:
        """Show the command line."""
        return f"CommandAgent({shlex.join(self.argv)!r})"

    def __call__(self, request: AgentRequest, /) -> IOResult[AgentResponse, PipelineError]:
        """Run the command and return its stdout as the answer."""
        refused = OFFLINE.refuse(request, repr(self))
        if refused is not None:
            return IOFailure(refused)
        timeout = request.timeout if request.timeout is not None else self.timeout
        outcome = io_ops.run_process(
            self.argv,
            stdin_text=request.prompt,
            timeout=timeout,
            cwd=request.cwd or self.cwd,
            env=self.env,
            max_output_bytes=request.max_output_bytes,
        )
        failed = _failure(request, outcome, shlex.join(self.argv), timeout)
        if failed is not None:
            return IOFailure(failed)
        command = shlex.join(self.argv)
        try:
            parsed = self.parse(outcome.stdout)
        except ValueError as exc:
            details = _details(outcome, command)
            usage = exc.usage if isinstance(exc, AnswerError) else None
            if usage is not None:
                details["usage"] = usage.to_dict()
            details["stdout_tail"] = io_ops.tail(outcome.stdout)
            message = f"agent command `{command}`: {exc}"
            return IOFailure(
                PipelineError(request.step_name, ErrorType.AGENT_FAILED, message, details)
            )
        metadata = {**parsed.metadata, "command": command, "seconds": round(outcome.seconds, 3)}
        return IOSuccess(AgentResponse(parsed.text, metadata, parsed.usage))


def _details(outcome: io_ops.ProcessOutcome, command: str) -> dict[str, object]:
    return {
        "command": command,
        "returncode": outcome.returncode,
        "stderr_tail": io_ops.tail(outcome.stderr),
        "seconds": round(outcome.seconds, 3),
    }


def _failure(
    request: AgentRequest, outcome: io_ops.ProcessOutcome, command: str, timeout: float | None
) -> PipelineError | None:
    """Say why the process gave no answer to read, or None when it exited cleanly."""
    details = _details(outcome, command)
    step, failed = request.step_name, ErrorType.AGENT_FAILED
    if outcome.error is not None:
        return PipelineError(
            step, failed, f"could not start agent command: {outcome.error}", details
        )
    if outcome.overflowed is not None:
        limit = request.max_output_bytes
        message = (
            f"agent command `{command}` printed more than {limit} bytes on "
            f"{outcome.overflowed} (max_output_bytes) and was killed"
        )
        return PipelineError(step, failed, message, {**details, "limit": limit})
    if outcome.timed_out:
        message = f"agent command `{command}` ran past its {timeout}s timeout and was killed"
        return PipelineError(step, ErrorType.TIMEOUT, message, details)
    if outcome.returncode != 0:
        last = outcome.stderr.strip().splitlines()[-1:] or ["no stderr"]
        message = f"agent command `{command}` exited with {outcome.returncode}: {last[0]}"
        return PipelineError(step, failed, message, details)
    return None
