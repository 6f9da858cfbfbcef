"""Read the answer and its usage from agent CLIs that print JSON.

A `CommandAgent(argv, parse=...)` hands its stdout to one of these (or any
function of the same shape), whatever the exit code: the CLIs print what
went wrong on stdout too. A parser returns the `AgentResponse`, or raises
`AnswerError` (a `ValueError`), which the agent turns into a failure of the
error type it names (`AgentFailed` by default, `AgentUnavailable` for an API
error, `PermissionDenied` for a refused tool) with stdout's tail;
`AnswerError.usage` keeps what a failed call still cost, so it is charged
and journaled, and `AnswerError.details` what else it said (the session id,
when the service said to come back). Every field is checked: a cost that is
negative, not a number or not finite is refused, so output that forges a
refund cannot stretch a budget.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from returns.result import Failure

from adws._strict import parse_strict_json
from adws.agents.base import AgentResponse
from adws.agents.answers import AnswerError, api_error, count, json_object, usage_of
from adws.agents.claude_output import claude_json, claude_stream, claude_usage
from adws.usage import Usage

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "PARSERS",
    "AnswerError",
    "claude_json",
    "claude_stream",
    "claude_usage",
    "codex_activity",
    "codex_jsonl",
    "text",
]


def text(stdout: str) -> AgentResponse:
    """Take stdout as the answer, with no usage (the default).

    >>> text("STATUS: done").text
    'STATUS: done'
    """
    return AgentResponse(stdout)


_STATUS: Final = re.compile(r"(?:last status|status):? (\d{3})\b")
_AT_CLOCK: Final = re.compile(r"try again at (\d{1,2}):(\d{2}) ?([AP]M)", re.IGNORECASE)


def _codex_failure(message: str, usage: Usage | None, details: Mapping[str, object]) -> AnswerError:
    """Describe a failed codex turn: its model API failed, however it said so."""
    status_match = _STATUS.search(message)
    status = int(status_match.group(1)) if status_match else None
    found = dict(details)
    clock = _AT_CLOCK.search(message)
    if clock is not None:
        hour = int(clock.group(1)) % 12 + (12 if clock.group(3).upper() == "PM" else 0)
        found["resets_at_clock"] = f"{hour:02d}:{clock.group(2)}"
    if "usage limit" in message.lower():
        return api_error("codex", 429, message, usage, found, reason="usage limit")
    return api_error("codex", status, message, usage, found)


def codex_jsonl(stdout: str) -> AgentResponse:
    r"""Read `codex exec --json`: one event per line.

    The answer is the last `item.completed` item of type `agent_message`;
    the usage sums every `turn.completed` event's tokens (codex reports no
    cost); the session is `thread.started`'s thread id. `Reconnecting...`
    error events are codex recovering by itself, not failures: an answer
    after them is an answer. A `turn.failed` (or a final `error` with no
    answer) is `AgentUnavailable`: the model API failed.

    >>> lines = [
    ...     '{"type": "thread.started", "thread_id": "t-1"}',
    ...     '{"type": "error", "message": "Reconnecting... 1/5 (stream disconnected)"}',
    ...     '{"type": "item.completed", "item": {"type": "agent_message", "text": "STATUS: done"}}',
    ...     '{"type": "turn.completed", "usage": {"input_tokens": 30, "output_tokens": 4}}',
    ... ]
    >>> response = codex_jsonl("\n".join(lines))
    >>> response.text, response.usage.describe(), dict(response.metadata)
    ('STATUS: done', '34 tokens', {'session_id': 't-1', 'reconnects': 1})
    """
    answer: str | None = None
    usage = Usage()
    thread: object = None
    reconnects = 0
    failed: str | None = None
    turn_failed = False
    for number, line in enumerate(stdout.splitlines(), 1):
        if not line.strip():
            continue
        event = json_object(line, f"codex's line {number}")
        kind = event.get("type")
        item = event.get("item")
        if kind == "thread.started":
            thread = event.get("thread_id")
        elif kind == "item.completed" and isinstance(item, dict):
            if item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                answer = item["text"]
        elif kind == "turn.completed":
            tokens = event.get("usage")
            if not isinstance(tokens, dict):
                msg = f"codex's line {number}: turn.completed has no usage object"
                raise AnswerError(msg, usage, details={"session_id": thread})
            usage += usage_of(
                input_tokens=count(tokens, "input_tokens"),
                output_tokens=count(tokens, "output_tokens"),
                turns=1,
            )
        elif kind == "error":
            message = str(event.get("message"))
            if message.startswith("Reconnecting"):
                reconnects += 1
            else:
                failed = message
        elif kind == "turn.failed":
            error = event.get("error")
            detail = error.get("message") if isinstance(error, dict) else error
            failed = str(detail or failed or "no detail")
            turn_failed = True
    details: dict[str, object] = {"session_id": thread, "reconnects": reconnects}
    known = usage if usage.known else None
    if failed is not None and (answer is None or turn_failed):
        raise _codex_failure(failed, known, details)
    if answer is None:
        msg = "codex printed no agent_message"
        raise AnswerError(msg, known, details={"session_id": thread})
    return AgentResponse(answer, details, known)


def codex_activity(line: str) -> str | None:
    """Describe a codex event worth showing on the progress line (a command it runs).

    >>> codex_activity('{"type": "item.started", "item": {"type": "command_execution", "command": "ls"}}')
    '$ ls'
    >>> codex_activity('{"type": "turn.started"}') is None
    True
    """
    parsed = parse_strict_json(line)
    if isinstance(parsed, Failure):
        return None
    event = parsed.unwrap()
    if not isinstance(event, dict) or event.get("type") != "item.started":
        return None
    item = event.get("item")
    if isinstance(item, dict) and item.get("type") == "command_execution":
        return f"$ {item.get('command')}"
    return None


PARSERS: Final = {
    "text": text,
    "claude-json": claude_json,
    "claude-stream": claude_stream,
    "codex-jsonl": codex_jsonl,
}
"""The parsers by name, for `adws run --agent-output NAME`."""
