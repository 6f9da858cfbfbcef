"""Run one Claude Agent SDK session and print its messages as Claude Code's stream events.

`ClaudeAgent` starts this module as a child process in its own process
group (`python -m adws.agents._sdk_session`), with a JSON request on stdin:
`{"module": "claude_agent_sdk", "prompt": ..., "options": {...}}`; it runs
with `python -P`, so a file in the working folder named like the SDK is
never imported in its place. Each SDK
message is printed as one JSON line in the shape `claude -p --output-format
stream-json` prints, so the parent reads it with the same parser, sees
silence as silence, and can stop the whole group (this process and the
CLI the SDK started) at once rather than wait for the SDK's own close.
An SDK that cannot be imported or that raises is one more line,
`{"type": "adws_error", ...}`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from typing import TYPE_CHECKING, Any

from adws._optional import import_optional

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["main"]


def _emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event, default=str) + "\n")
    sys.stdout.flush()


def _block(block: object) -> dict[str, Any]:
    kind = type(block).__name__
    if kind == "ToolUseBlock":
        return {"type": "tool_use", "name": getattr(block, "name", ""), "input": block.input}  # type: ignore[attr-defined] # checked by the class name
    if kind == "TextBlock":
        return {"type": "text", "text": block.text}  # type: ignore[attr-defined] # as above
    return {"type": kind}


def _event(message: object) -> dict[str, Any]:
    """Translate one SDK message back into the CLI's stream event it came from."""
    kind = type(message).__name__
    fields: dict[str, Any] = {}
    if dataclasses.is_dataclass(message) and not isinstance(message, type):
        fields = dataclasses.asdict(message)
    if kind == "SystemMessage":
        return {**fields.get("data", {}), "type": "system", "subtype": fields.get("subtype")}
    if kind == "AssistantMessage":
        blocks = [_block(block) for block in getattr(message, "content", [])]
        return {"type": "assistant", "message": {"model": fields.get("model"), "content": blocks}}
    if kind == "ResultMessage":
        return {**fields, "type": "result", "modelUsage": fields.get("model_usage")}
    if kind == "RateLimitEvent":
        info = fields.get("rate_limit_info") or {}
        limit = {"status": info.get("status"), "resetsAt": info.get("resets_at")}
        return {"type": "rate_limit_event", "rate_limit_info": limit}
    return {"type": "other", "class": kind}


async def _session(sdk: ModuleType, prompt: str, options: object) -> None:
    async for message in sdk.query(prompt=prompt, options=options):
        _emit(_event(message))


def main() -> int:
    """Run the session the request on stdin describes; always exit 0 once it is read."""
    request = json.loads(sys.stdin.read())
    try:
        sdk = import_optional(request["module"])
    except ImportError as exc:
        _emit({"type": "adws_error", "kind": "missing", "message": str(exc)})
        return 0
    options = sdk.ClaudeAgentOptions(**request["options"])
    try:
        asyncio.run(_session(sdk, request["prompt"], options))
    except sdk.ClaudeSDKError as exc:
        _emit({"type": "adws_error", "kind": type(exc).__name__, "message": str(exc)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
