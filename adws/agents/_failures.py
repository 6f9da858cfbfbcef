"""What an agent step adds to an agent's failure: a hint for unparsed CLI JSON, a bounded wait.

A missing report whose text is Claude Code's own JSON says how to read it;
a service that names when to come back (`retry_after`, a reset time) has
that wait kept for the retry, unless it is longer than the run may wait
(`--max-wait`): then the run parks until then.
"""

from __future__ import annotations

import json
import time
from typing import Final, TypeGuard

import attrs

from adws import io_ops
from adws.engine.errors import ErrorType, PipelineError
from adws.engine.parking import park
from adws.engine.retry_policy import retry_after

__all__ = ["bounded_wait", "with_hint"]


_CLAUDE_JSON_HINT: Final = (
    "the answer looks like the JSON Claude Code prints with --output-format json or"
    " stream-json, not the answer inside it: read it with --agent-output claude-json"
    " (or use --agent claude, or CommandAgent(..., parse=claude_json))"
)


def _looks_like_claude_json(text: str) -> bool:
    """Tell whether an answer is Claude Code's JSON result (or its event stream), unparsed."""
    for line in text.strip().splitlines()[-3:]:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "result" and "result" in event:
            return True
    return False


def with_hint(error: PipelineError, text: str) -> PipelineError:
    """Add a hint to a missing report when the answer is an agent CLI's unparsed JSON."""
    if error.message != "STATUS missing" or not _looks_like_claude_json(text):
        return error
    return attrs.evolve(error, message=f"STATUS missing: {_CLAUDE_JSON_HINT}").with_context(
        hint=_CLAUDE_JSON_HINT
    )


def bounded_wait(error: PipelineError, max_wait: float) -> PipelineError:
    """Wait for a limit that resets within `max_wait` seconds; park the run on a later one.

    A known reset time (`resets_at`, seconds since the epoch, or
    `resets_at_clock`, a local `HH:MM`) becomes `retry_after`, the seconds
    the run's retry waits (through its `sleep`), whatever the step's
    timeout: a timeout bounds a call, not the wait between calls. A wait
    past `max_wait` (the run's `--max-wait`) turns the error into `Parked`
    until the reset (see `adws.engine.parking`).
    """
    if error.error_type != ErrorType.AGENT_UNAVAILABLE:
        return error
    now = io_ops.wall_clock()
    wait = retry_after(error)
    if wait is None:
        reset = _reset_at(error.context.get("resets_at"), error.context.get("resets_at_clock"), now)
        if reset is None:
            return error
        wake_at, wait = max(reset, now), max(reset - now, 0.0)
    else:
        wake_at = now + wait
    if wait > max_wait:
        return park(error, wake_at, _reason(error))
    return error.with_context(retry_after=round(wait, 3))


def _reason(error: PipelineError) -> str:
    """Name the limit in a few words (`claude usage limit`), for `adws status`."""
    limit = error.context.get("limit")
    if isinstance(limit, str) and limit:
        return limit
    first = error.message.strip().splitlines()[0] if error.message.strip() else ""
    return first[:_REASON_CHARS] or error.error_type


_REASON_CHARS: Final = 80
_LATEST_EPOCH: Final = 1e12
"""Past this a `resets_at` is no time in seconds (milliseconds, or forged): ignored."""
_JUST_PAST: Final = -60
"""A reset named to the minute may be up to a minute ago: that minute is still this one."""


def _is_epoch(value: object) -> TypeGuard[float]:
    """Tell whether a `resets_at` is a time in seconds (not milliseconds, not forged)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and value < _LATEST_EPOCH


def _reset_at(epoch: object, clock: object, now: float) -> float | None:
    """Return when a named reset comes (an epoch, or a local `HH:MM`), if one is named."""
    if _is_epoch(epoch):
        return float(epoch)
    if not isinstance(clock, str):
        return None
    hour, minute = (int(part) for part in clock.split(":"))
    year, month, day = time.localtime(now)[:3]
    start = time.mktime((year, month, day, hour, minute, 0, 0, 0, -1))
    if start - now <= _JUST_PAST:  # long past: it names tomorrow's (mktime rolls the date)
        start = time.mktime((year, month, day + 1, hour, minute, 0, 0, 0, -1))
    # Codex names a local time of day, its seconds cut off: the reset comes before the named
    # minute ends, so that is when to come back.
    return start + 60
