"""Read what Claude Code prints: its result object, alone or at the end of its event stream.

`claude -p --output-format json` prints one result object; with
`--output-format stream-json --verbose` it prints one event per line (the
session's `init`, each assistant message and tool result, `api_retry` while
it retries the API itself, and the same result object last). The Claude
Agent SDK drives the same CLI, so `ClaudeAgent` reads the same shapes.

The result object says what happened whatever the exit code: `is_error`
with `api_error_status` is an API error (`AgentUnavailable`, naming the
status), `permission_denials` are tools the CLI refused
(`PermissionDenied`, naming the tool and its target), and its cost is
charged either way.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from adws import io_ops
from adws.agents.answers import AnswerError, api_error, count, event_of, json_object, usage_of
from adws.agents.base import AgentResponse
from adws.agents.quota import claude_quota
from adws.engine.errors import ErrorType

if TYPE_CHECKING:
    from collections.abc import Mapping

    from adws.engine.usage import Usage

__all__ = ["claude_activity", "claude_json", "claude_result", "claude_stream", "claude_usage"]

_TARGETS: Final = ("file_path", "notebook_path", "path", "command", "url", "pattern")
"""The tool-input fields that say what a tool call acts on, most telling first."""

_CLI: Final = "claude"
_USAGE_LIMIT: Final = "usage_limit_reached"
"""What claude's result names as `api_error` when a subscription's usage limit is reached."""
EDITS_HINT: Final = "let the step change files with agent_step(..., edits=True)"


def claude_usage(cost: object, tokens: object, turns: object, model: object) -> Usage:
    """Build a `Usage` from Claude's result fields (the CLI's JSON and the SDK's message).

    Input tokens count cache reads and cache writes too: the model read them all.

    >>> claude_usage(0.5, {"input_tokens": 2, "cache_creation_input_tokens": 8}, 3, None)
    Usage(cost_usd=0.5, input_tokens=10, output_tokens=None, turns=3, model=None)
    """
    tokens = tokens or {}
    if not isinstance(tokens, dict):
        msg = f"claude's usage is not an object: {tokens!r}"
        raise AnswerError(msg)
    return usage_of(
        cost_usd=cost,
        input_tokens=count(
            tokens, "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"
        ),
        output_tokens=count(tokens, "output_tokens"),
        turns=turns,
        model=model,
    )


def _target(tool_input: object) -> str:
    if not isinstance(tool_input, dict):
        return ""
    for key in _TARGETS:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _denials(denials: object) -> str | None:
    """Describe the tools the CLI refused (`permission_denials`), or None when it refused none."""
    if not isinstance(denials, list) or not denials:
        return None
    described = []
    for denial in denials:
        entry = denial if isinstance(denial, dict) else {}
        tool = str(entry.get("tool_name") or "a tool")
        target = _target(entry.get("tool_input"))
        described.append(f"{tool} on {target}" if target else tool)
    return "; ".join(dict.fromkeys(described))


_RESETS: Final = re.compile(
    r"resets (?:(?P<month>[A-Z][a-z]{2}) (?P<day>\d{1,2}), )?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))? ?(?P<half>am|pm)(?: \((?P<zone>[^)]+)\))?",
    re.IGNORECASE,
)
"""Claude names a limit's reset in its result text: `resets 11:24am (UTC)`, `resets 3pm`,
`resets Nov 30, 3:44pm (America/New_York)`."""


def _named_reset(text: str) -> dict[str, object]:
    """Read the reset time claude's text names as `resets_at`, the end of the minute it names.

    Claude cuts the seconds off, so the limit has reset once that minute is over.

    >>> import time
    >>> named = _named_reset("You've hit your 5-hour limit · resets 11:24am (UTC)")["resets_at"]
    >>> time.strftime("%H:%M:%S", time.gmtime(named))
    '11:25:00'
    >>> _named_reset("no time here"), _named_reset("resets 3pm (Not/AZone)")
    ({}, {})
    >>> _named_reset("resets Feb 30, 3:44pm (UTC)"), _named_reset("resets 3:75pm")
    ({}, {})
    """
    found = _RESETS.search(text)
    if found is None:
        return {}
    try:
        zone: tzinfo | None = ZoneInfo(found["zone"]) if found["zone"] else None
    except (ValueError, ZoneInfoNotFoundError):
        return {}
    now = datetime.fromtimestamp(io_ops.wall_clock(), tz=zone).astimezone(zone)
    hour = int(found["hour"]) % 12 + (12 if found["half"].lower() == "pm" else 0)
    try:
        named = now.replace(hour=hour, minute=int(found["minute"] or 0), second=0, microsecond=0)
        if found["month"] is not None:
            month = datetime.strptime(found["month"], "%b").month  # noqa: DTZ007 - the month alone
            named = named.replace(month=month, day=int(found["day"]))
    except ValueError:  # no such minute, month or day
        return {}
    if named < now - timedelta(days=1):  # a date named in January, read in December
        named = named.replace(year=named.year + 1)
    elif found["month"] is None and named < now - timedelta(minutes=1):
        named += timedelta(days=1)  # a time of day already past names tomorrow's
    return {"resets_at": (named + timedelta(minutes=1)).timestamp()}


def claude_result(envelope: Mapping[str, object], extra: Mapping[str, object]) -> AgentResponse:
    """Turn Claude's result object into the answer, or an `AnswerError` that keeps its cost.

    `extra` is what the events before it said (`session_id`, `model`,
    `api_retries`, `resets_at`); the result's own fields win.
    """
    models = envelope.get("modelUsage")
    model = next(iter(models), None) if isinstance(models, dict) and models else extra.get("model")
    usage = claude_usage(
        envelope.get("total_cost_usd"), envelope.get("usage"), envelope.get("num_turns"), model
    )
    details = {**extra, "session_id": envelope.get("session_id") or extra.get("session_id")}
    details.pop("model", None)
    answer = envelope.get("result")
    status = envelope.get("api_error_status")
    if envelope.get("is_error") is not False:
        errors = envelope.get("errors")
        texts = [str(e) for e in errors if e] if isinstance(errors, list) else []
        detail = "; ".join(texts) or (answer if isinstance(answer, str) and answer else "no detail")
        if isinstance(status, int) and not isinstance(status, bool):
            if "resets_at" not in details:  # `--output-format json` names it only in the text
                details.update(_named_reset(detail))
            limited = envelope.get("api_error") == _USAGE_LIMIT or "resets_at" in details
            reason = "usage limit" if limited else None
            raise api_error(_CLI, status, detail, usage, details, reason=reason)
        msg = f"claude reported an error ({envelope.get('subtype', 'error')}): {detail}"
        raise AnswerError(msg, usage, details=details)
    refused = _denials(envelope.get("permission_denials"))
    if refused is not None:
        msg = f"claude was refused {refused}; {EDITS_HINT}"
        raise AnswerError(msg, usage, error_type=ErrorType.PERMISSION_DENIED, details=details)
    if not isinstance(answer, str):
        msg = "claude's result object has no result text"
        raise AnswerError(msg, usage, details=details)
    metadata = {"session_id": details.get("session_id"), "duration_ms": envelope.get("duration_ms")}
    if details.get("quota"):
        metadata["quota"] = details["quota"]
    return AgentResponse(answer, metadata, usage)


def claude_json(stdout: str) -> AgentResponse:
    """Read `claude -p --output-format json`: one result object.

    The answer is `result`; the usage is `total_cost_usd`, `num_turns`, the
    first model of `modelUsage`, and `usage`'s tokens (input counts cache
    reads and writes too). `is_error: true` is an `AnswerError` that still
    carries the usage (`AgentUnavailable` when it names an API status).

    >>> envelope = '{"type": "result", "is_error": false, "result": "STATUS: done",'
    >>> envelope += ' "total_cost_usd": 0.02, "num_turns": 1,'
    >>> envelope += ' "usage": {"input_tokens": 5, "cache_read_input_tokens": 100,'
    >>> envelope += ' "output_tokens": 7}}'
    >>> response = claude_json(envelope)
    >>> response.text, response.usage.describe()
    ('STATUS: done', '$0.0200, 112 tokens')
    """
    envelope = json_object(stdout.strip(), "claude's output")
    if envelope.get("type") != "result":
        msg = f"claude's output is not a result object (type {envelope.get('type')!r})"
        raise AnswerError(msg)
    return claude_result(envelope, {})


def claude_stream(stdout: str) -> AgentResponse:
    r"""Read `claude -p --output-format stream-json --verbose`: one event per line.

    The `init` event names the session and the model, `api_retry` events
    count the retries the CLI made itself, a `rate_limit_event` says how
    much of its account's window is used (`quota`, see `adws.agents.quota`)
    and, rejected, when the limit resets (`resets_at`), and the last `result` event is
    read as `claude_json` reads its one object.

    >>> lines = [
    ...     '{"type": "system", "subtype": "init", "session_id": "s-1", "model": "opus"}',
    ...     '{"type": "result", "is_error": false, "result": "STATUS: done", "num_turns": 1}',
    ... ]
    >>> response = claude_stream("\n".join(lines))
    >>> response.text, response.usage.model, response.metadata["session_id"]
    ('STATUS: done', 'opus', 's-1')
    """
    extra: dict[str, object] = {"api_retries": 0}
    result: Mapping[str, object] | None = None
    for number, line in enumerate(stdout.splitlines(), 1):
        if not line.strip():
            continue
        event = json_object(line, f"claude's line {number}")
        kind, subtype = event.get("type"), event.get("subtype")
        if kind == "system" and subtype == "init":
            extra["session_id"], extra["model"] = event.get("session_id"), event.get("model")
        elif kind == "system" and subtype == "api_retry":
            extra["api_retries"] = int(str(extra["api_retries"])) + 1
        elif kind == "rate_limit_event":
            info = event.get("rate_limit_info")
            if isinstance(info, dict) and info.get("status") == "rejected":
                extra["resets_at"] = info.get("resetsAt")
            extra["quota"] = claude_quota(info)
        elif kind == "result":
            result = event
    if result is None:
        msg = "claude printed no result"
        raise AnswerError(msg, details={"session_id": extra.get("session_id")})
    return claude_result(result, extra)


def claude_activity(line: str) -> str | None:
    """Describe Claude's latest tool call from one stream event, for the progress line.

    >>> claude_activity('{"type": "assistant", "message": {"content": [{"type": "tool_use",'
    ...     ' "name": "Write", "input": {"file_path": "a.py"}}]}}')
    'Write a.py'
    >>> claude_activity('{"type": "user"}') is None
    True
    """
    event = event_of(line, "assistant")
    message = event.get("message") if event is not None else None
    content = message.get("content") if isinstance(message, dict) else None
    calls = [
        block
        for block in (content if isinstance(content, list) else [])
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]
    if not calls:
        return None
    last = calls[-1]
    target = _target(last.get("input"))
    return f"{last.get('name')} {target}".strip()
