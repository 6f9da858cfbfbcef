"""A stand-in for `claude_agent_sdk`, imported by the session child: `ClaudeAgent(sdk_module=...)`.

The prompt picks the script: `raise` ends in an SDK error, `rate` reports a
rejected rate limit before its result, anything else answers with one of
every kind of message the child translates.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any


class ClaudeSDKError(Exception):
    """The SDK's error base."""


@dataclass
class ClaudeAgentOptions:
    """Accept what ClaudeAgent passes; the test reads it back from the answer."""

    model: str | None = None
    cwd: str | None = None
    permission_mode: str | None = None
    system_prompt: Any = None
    max_turns: int | None = None
    allowed_tools: list[str] | None = None


@dataclass
class SystemMessage:
    """Stand-in for the SDK's SystemMessage."""

    subtype: str
    data: dict[str, Any]


@dataclass
class TextBlock:
    """Stand-in for the SDK's TextBlock."""

    text: str


@dataclass
class ToolUseBlock:
    """Stand-in for the SDK's ToolUseBlock."""

    id: str
    name: str
    input: dict[str, Any]


@dataclass
class ThinkingBlock:
    """Stand-in for the SDK's ThinkingBlock."""

    thinking: str


@dataclass
class AssistantMessage:
    """Stand-in for the SDK's AssistantMessage."""

    content: list[Any]
    model: str


@dataclass
class RateLimitInfo:
    """Stand-in for the SDK's RateLimitInfo."""

    status: str
    resets_at: int | None = None


@dataclass
class RateLimitEvent:
    """Stand-in for the SDK's RateLimitEvent."""

    rate_limit_info: RateLimitInfo
    uuid: str = "u"
    session_id: str = "s"


@dataclass
class ResultMessage:
    """Stand-in for the SDK's ResultMessage."""

    subtype: str
    duration_ms: int
    duration_api_ms: int
    is_error: bool
    num_turns: int
    session_id: str
    total_cost_usd: float | None = None
    usage: dict[str, Any] | None = None
    result: str | None = None
    model_usage: dict[str, Any] | None = None
    permission_denials: list[Any] | None = None
    api_error_status: int | None = None
    errors: list[str] = field(default_factory=list)


class Unknown:
    """A message kind the child does not know."""


async def query(*, prompt: str, options: ClaudeAgentOptions) -> AsyncIterator[object]:
    """Yield a scripted session."""
    init = {"type": "system", "subtype": "init", "session_id": "sdk-1", "model": options.model}
    yield SystemMessage("init", init)
    if "raise" in prompt:
        msg = "the CLI went away"
        raise ClaudeSDKError(msg)
    blocks = [
        ThinkingBlock("hm"),
        ToolUseBlock("t1", "Read", {"file_path": "a.py"}),
        TextBlock("ok"),
    ]
    yield AssistantMessage(blocks, "opus")
    yield Unknown()
    if "rate" in prompt:
        yield RateLimitEvent(RateLimitInfo("rejected", 2_000_000_000))
        yield ResultMessage(
            "success", 5, 4, True, 1, "sdk-1", 0.0, {}, "API Error: 429", None, None, 429
        )
        return
    answer = (
        f"STATUS: done\nSUMMARY: {options.permission_mode} {options.system_prompt} {options.cwd}"
    )
    yield ResultMessage(
        "success", 5, 4, False, 2, "sdk-1", 0.25, {"input_tokens": 3}, answer, {"opus": {}}
    )
