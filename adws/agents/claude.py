"""`ClaudeAgent`: the Claude Agent SDK as an `AgentBackend` (extra: `adws[claude]`).

Importing adws never imports the SDK: it is loaded on the first call, and a
missing extra is an `AgentFailed` saying how to install it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Final, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess

from adws._optional import import_optional
from adws.agents.base import AgentRequest, AgentResponse
from adws.agents.offline import OFFLINE
from adws.agents.parsers import AnswerError, claude_usage
from adws.errors import ErrorType, PipelineError

__all__ = ["INSTALL_HINT", "ClaudeAgent", "SdkApi", "load_sdk"]

INSTALL_HINT: Final = "pip install 'adws[claude]'"


@final
@attrs.frozen
class SdkApi:
    """The four parts of `claude_agent_sdk` that `ClaudeAgent` uses.

    Tests build one around a fake `query`; `load_sdk` builds the real one.
    """

    query: Callable[..., AsyncIterator[object]]
    options: Callable[..., object]
    result_message: type
    sdk_error: type[Exception]


def load_sdk() -> SdkApi | str:
    """Import the SDK, or explain how to install it."""
    try:
        sdk: Any = import_optional("claude_agent_sdk")  # the extra, loaded on first use
    except ImportError as exc:
        return f"ClaudeAgent needs the Claude Agent SDK: {INSTALL_HINT} ({exc})"
    return SdkApi(sdk.query, sdk.ClaudeAgentOptions, sdk.ResultMessage, sdk.ClaudeSDKError)


def _failed(request: AgentRequest, message: str, **context: object) -> IOFailure[PipelineError]:
    return IOFailure(PipelineError(request.step_name, ErrorType.AGENT_FAILED, message, context))


@final
class ClaudeAgent:
    """Answer each request in a fresh Claude Agent SDK session.

    The answer is the final result message's text. Its cost, tokens and
    turns are the response's `usage` (the model is the one asked for); its
    cost, turns, duration and session id also go into `AgentResponse.metadata`
    (and from there into the step's `<name>_agent` output). SDK errors,
    a missing result and a result flagged as an error are `AgentFailed`; the
    request's timeout (or this agent's) bounds the whole call (`Timeout`).
    """

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
        sdk: Callable[[], SdkApi | str] = load_sdk,
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
        self._sdk = sdk

    def __repr__(self) -> str:
        """Show the options that are set."""
        shown = ", ".join(f"{k}={v!r}" for k, v in self.options.items() if v is not None)
        return f"ClaudeAgent({shown})"

    def _options(self, request: AgentRequest) -> dict[str, Any]:
        chosen = {**self.options, "cwd": request.cwd or self.options["cwd"]}
        return {key: value for key, value in chosen.items() if value is not None}

    def __call__(self, request: AgentRequest, /) -> IOResult[AgentResponse, PipelineError]:
        """Run one SDK session for this request."""
        # Only the real SDK reaches the service; a test's stand-in may run offline.
        refused = OFFLINE.refuse(request, repr(self)) if self._sdk is load_sdk else None
        if refused is not None:
            return IOFailure(refused)
        api = self._sdk()
        if isinstance(api, str):
            return _failed(request, api)
        options = api.options(**self._options(request))
        timeout = request.timeout if request.timeout is not None else self.timeout
        try:
            session = _last_result(api, request.prompt, options)
            result = asyncio.run(asyncio.wait_for(session, timeout))
        except TimeoutError:
            message = f"Claude did not finish within its {timeout}s timeout"
            error = PipelineError(request.step_name, ErrorType.TIMEOUT, message)
            return IOFailure(error)
        except api.sdk_error as exc:
            return _failed(request, f"Claude Agent SDK: {exc}", sdk_error=type(exc).__name__)
        if result is None:
            return _failed(request, "the Claude Agent SDK ended without a result message")
        return _response(request, result, self.options["model"])


def _response(
    request: AgentRequest, result: object, model: str | None
) -> IOResult[AgentResponse, PipelineError]:
    """Turn the session's result message into the answer, or a failure that keeps its usage."""
    metadata = _metadata(result)
    try:
        usage = claude_usage(
            metadata["cost_usd"], getattr(result, "usage", None), metadata["turns"], model
        )
    except AnswerError as exc:
        return _failed(request, f"Claude Agent SDK: {exc}", **metadata)
    if getattr(result, "is_error", False):
        errors = getattr(result, "errors", None) or [getattr(result, "result", None)]
        detail = "; ".join(str(e) for e in errors if e) or "no detail"
        subtype = getattr(result, "subtype", "error")
        message = f"Claude reported an error ({subtype}): {detail}"
        return _failed(request, message, **metadata, usage=usage.to_dict())
    text = getattr(result, "result", None) or ""
    return IOSuccess(AgentResponse(text, metadata, usage if usage.known else None))


async def _last_result(api: SdkApi, prompt: str, options: object) -> object | None:
    """Drain one SDK session and return its last result message."""
    last = None
    async for message in api.query(prompt=prompt, options=options):
        if isinstance(message, api.result_message):
            last = message
    return last


def _metadata(result: object) -> Mapping[str, object]:
    fields = {
        "cost_usd": "total_cost_usd",
        "turns": "num_turns",
        "duration_ms": "duration_ms",
        "session_id": "session_id",
    }
    return {name: getattr(result, attribute, None) for name, attribute in fields.items()}
