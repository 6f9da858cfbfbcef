"""`ClaudeAgent`: the Claude Agent SDK as an `AgentBackend` (extra: `adws[claude]`).

Importing adws never imports the SDK. Each call runs one SDK session in a
child process of its own process group (`adws.agents._sdk_session`), which
prints the session's messages as Claude Code's stream events: so the
session is read like the `claude` preset (API errors, refused tools, cost,
model and session id), a silence is seen (`idle_timeout`), and a timeout
or Ctrl-C stops the child and the CLI the SDK started at once, instead of
waiting for the SDK's own close. A missing extra is an `AgentFailed`
saying how to install it.
"""

from __future__ import annotations

import json
import shlex
import sys
from typing import TYPE_CHECKING, Any, Final, final

from returns.io import IOFailure, IOResult

from adws import io_ops
from adws.agents.answers import AnswerError
from adws.agents.claude_output import claude_activity, claude_stream
from adws.agents.command import activity_listener, read_outcome
from adws.agents.offline import OFFLINE
from adws.agents.sessions import CLAUDE, hear_lines, refuse_session, session_listener

if TYPE_CHECKING:
    from adws.agents.base import AgentRequest, AgentResponse
    from adws.engine.errors import PipelineError

__all__ = ["INSTALL_HINT", "STOP_GRACE_SECONDS", "ClaudeAgent", "sdk_stream"]

INSTALL_HINT: Final = "pip install 'adws[claude]'"
STOP_GRACE_SECONDS: Final = 0.5
"""How long the session's group gets between SIGTERM and SIGKILL: stops land within a second."""
_OUTPUT_FACTOR: Final = 4
_CLAUDE_CODE_PROMPT: Final = {"type": "preset", "preset": "claude_code"}


def sdk_stream(stdout: str) -> AgentResponse:
    """Read the session child's output: Claude's stream events, and its own error lines."""
    events: list[str] = []
    failure: dict[str, Any] | None = None
    for line in stdout.splitlines():
        if line.startswith('{"type": "adws_error"'):
            failure = json.loads(line)
        else:
            events.append(line)
    if failure is not None and failure["kind"] == "missing":
        msg = f"the Claude Agent SDK is not installed: {INSTALL_HINT} ({failure['message']})"
        raise AnswerError(msg, details={"permanent": True})
    try:
        return claude_stream("\n".join(events))
    except AnswerError as exc:
        if failure is None or "printed no result" not in str(exc):
            raise
        msg = f"the Claude Agent SDK failed: {failure['message']}"
        raise AnswerError(msg, details={**exc.details, "sdk_error": failure["kind"]}) from exc


@final
class ClaudeAgent:
    """Answer each request in a Claude Agent SDK session: a fresh one, or the one it names.

    The answer is the session's result text; its cost, tokens, turns and
    model are the response's `usage`; its session id and duration go into
    `AgentResponse.metadata` (and from there into the step's `<name>_agent`
    output). A step's `edits=True` sets the SDK's `permission_mode` to
    `acceptEdits` (unless one is given here); Claude Code's own system
    prompt is kept unless `system_prompt` is given. `env` is added to the
    session's environment (and so the CLI's: `ANTHROPIC_BASE_URL`, say),
    which holds none of adws's own credentials but those the step names in
    `env_pass` (see `adws.io_ops.environment`).
    Failures read as the `claude` preset's do; the request's timeout (or
    this agent's) bounds the whole call (`Timeout`), its `idle_timeout` the
    silences (`AgentHung`), and either stops the session within a second.
    A request naming a `session` continues it (the SDK's `resume`); one that
    is not a plain token fails the call before anything starts.
    `sdk_module` names the module to import (the SDK, or a stand-in).
    """

    continues_sessions: Final = True

    def __init__(  # noqa: PLR0913 - the SDK's options, all keyword-only
        self,
        *,
        model: str | None = None,
        cwd: str | None = None,
        max_turns: int | None = None,
        allowed_tools: list[str] | None = None,
        permission_mode: str | None = None,
        system_prompt: str | None = None,
        timeout: float | None = None,
        env: dict[str, str] | None = None,
        sdk_module: str = "claude_agent_sdk",
    ) -> None:
        """Keep the options; nothing is imported or started until the first call."""
        self.options: dict[str, Any] = {
            "model": model,
            "cwd": cwd,
            "max_turns": max_turns,
            "allowed_tools": allowed_tools,
            "permission_mode": permission_mode,
            "system_prompt": system_prompt,
        }
        self.timeout = timeout
        self.cwd = cwd
        self.env = dict(env) if env is not None else None
        self.sdk_module = sdk_module

    def __repr__(self) -> str:
        """Show the options that are set."""
        shown = ", ".join(f"{k}={v!r}" for k, v in self.options.items() if v is not None)
        return f"ClaudeAgent({shown})"

    def session_options(self, request: AgentRequest) -> dict[str, Any]:
        """Return the SDK options for this request."""
        chosen = {**self.options, "cwd": request.cwd or self.options["cwd"]}
        if chosen["permission_mode"] is None:
            chosen["permission_mode"] = "acceptEdits" if request.edits else "default"
        if chosen["system_prompt"] is None:
            chosen["system_prompt"] = _CLAUDE_CODE_PROMPT
        if request.session is not None:
            chosen["resume"] = request.session
        return {key: value for key, value in chosen.items() if value is not None}

    def __call__(self, request: AgentRequest, /) -> IOResult[AgentResponse, PipelineError]:
        """Run one SDK session for this request."""
        refused = OFFLINE.refuse(request, repr(self)) or refuse_session(request, repr(self))
        if refused is not None:
            return IOFailure(refused)
        payload = {
            "module": self.sdk_module,
            "prompt": request.prompt,
            "options": self.session_options(request),
        }
        # -P: the working folder is not on the path, so no file there can pose as the SDK.
        argv = (sys.executable, "-P", "-m", "adws.agents._sdk_session")
        timeout = request.timeout if request.timeout is not None else self.timeout
        outcome = io_ops.run_process(
            argv,
            stdin_text=json.dumps(payload),
            timeout=timeout,
            env=self.env,
            env_pass=request.env_pass,
            grace=STOP_GRACE_SECONDS,
            max_output_bytes=request.max_output_bytes * _OUTPUT_FACTOR,
            idle_timeout=request.idle_timeout,
            on_line=hear_lines(
                activity_listener(request, claude_activity),
                session_listener(request, CLAUDE.announced),
            ),
        )
        return read_outcome(
            request,
            outcome,
            shlex.join(argv),
            sdk_stream,
            timeout=timeout,
            factor=_OUTPUT_FACTOR,
            what="ClaudeAgent",
        )
