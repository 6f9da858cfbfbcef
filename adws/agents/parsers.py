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
from datetime import datetime
from typing import TYPE_CHECKING, Final

from adws import io_ops
from adws.agents.answers import AnswerError, api_error, count, event_of, json_object, usage_of
from adws.agents.base import AgentResponse
from adws.agents.claude_output import claude_json, claude_stream, claude_usage
from adws.agents.quota import codex_quota
from adws.engine.usage import Usage

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
_AT: Final = re.compile(
    r"try again at (?:(?P<month>[A-Z][a-z]{2}) (?P<day>\d{1,2})(?:st|nd|rd|th), (?P<year>\d{4}) )?"
    r"(?P<hour>\d{1,2}):(?P<minute>\d{2}) ?(?P<half>[AP]M)",
    re.IGNORECASE,
)
"""Codex names a reset as a local time: `try again at 9:22 PM` or `at Nov 24th, 2026 1:37 AM`."""


def _reset(message: str) -> dict[str, object]:
    """Read the reset time codex names, as `resets_at` (epoch) or `resets_at_clock` (HH:MM).

    >>> _reset("try again at 9:05 PM.")
    {'resets_at_clock': '21:05'}
    >>> _reset("no time here")
    {}
    """
    found = _AT.search(message)
    if found is None:
        return {}
    hour = int(found["hour"]) % 12 + (12 if found["half"].upper() == "PM" else 0)
    clock = f"{hour:02d}:{found['minute']}"
    if found["year"] is None:
        return {"resets_at_clock": clock}
    stamp = f"{found['year']} {found['month']} {found['day']} {clock}"
    try:
        moment = datetime.strptime(stamp, "%Y %b %d %H:%M")  # noqa: DTZ007 - codex prints local time
    except ValueError:
        return {}
    return {"resets_at": moment.timestamp()}


def _codex_failure(message: str, usage: Usage | None, details: Mapping[str, object]) -> AnswerError:
    """Describe a failed codex turn: its model API failed, however it said so."""
    status_match = _STATUS.search(message)
    status = int(status_match.group(1)) if status_match else None
    found = {**details, **_reset(message)}
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
    run = _CodexRun()
    for number, line in enumerate(stdout.splitlines(), 1):
        if line.strip():
            run.read(json_object(line, f"codex's line {number}"), number)
    return run.finish()


class _CodexRun:
    """What codex's events said so far: the answer, the tokens, the thread, any failure."""

    def __init__(self) -> None:
        self.answer: str | None = None
        self.usage = Usage()
        self.thread: object = None
        self.reconnects = 0
        self.failed: str | None = None
        self.turn_failed = False
        self.quota: list[dict[str, object]] = []

    def read(self, event: Mapping[str, object], number: int) -> None:
        kind, item = event.get("type"), event.get("item")
        if "rate_limits" in event:  # the latest said wins
            self.quota = codex_quota(event["rate_limits"], io_ops.wall_clock())
        if kind == "thread.started":
            self.thread = event.get("thread_id")
        elif kind == "item.completed" and isinstance(item, dict):
            if item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                self.answer = item["text"]
        elif kind == "turn.completed":
            self._count(event.get("usage"), number)
        elif kind == "error":
            message = str(event.get("message"))
            if message.startswith("Reconnecting"):
                self.reconnects += 1
            else:
                self.failed = message
        elif kind == "turn.failed":
            error = event.get("error")
            detail = error.get("message") if isinstance(error, dict) else error
            self.failed, self.turn_failed = str(detail or self.failed or "no detail"), True

    def _count(self, tokens: object, number: int) -> None:
        if not isinstance(tokens, dict):
            msg = f"codex's line {number}: turn.completed has no usage object"
            raise AnswerError(msg, self.usage, details={"session_id": self.thread})
        self.usage += usage_of(
            input_tokens=count(tokens, "input_tokens"),
            output_tokens=count(tokens, "output_tokens"),
            turns=1,
        )

    def finish(self) -> AgentResponse:
        details: dict[str, object] = {"session_id": self.thread, "reconnects": self.reconnects}
        if self.quota:
            details["quota"] = self.quota
        known = self.usage if self.usage.known else None
        if self.failed is not None and (self.answer is None or self.turn_failed):
            raise _codex_failure(self.failed, known, details)
        if self.answer is None:
            msg = "codex printed no agent_message"
            raise AnswerError(msg, known, details={"session_id": self.thread})
        return AgentResponse(self.answer, details, known)


def codex_activity(line: str) -> str | None:
    """Describe a codex event worth showing on the progress line (a command it runs).

    >>> import json
    >>> event = {"type": "item.started", "item": {"type": "command_execution", "command": "ls"}}
    >>> codex_activity(json.dumps(event))
    '$ ls'
    >>> codex_activity('{"type": "turn.started"}') is None
    True
    """
    event = event_of(line, "item.started")
    item = event.get("item") if event is not None else None
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
