"""What an agent step adds to an agent's failure: a hint for unparsed CLI JSON, a bounded wait.

A missing report whose text is Claude Code's own JSON says how to read it;
a service that names when to come back (`retry_after`, a reset time) has
that wait kept for the retry, unless it is longer than the run may wait
(`--max-wait`): then the run parks until then.
"""

from __future__ import annotations

import json
import time
from typing import Final

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
    wait = retry_after(error)
    if wait is None:
        wait = _seconds_until(error.context.get("resets_at"), error.context.get("resets_at_clock"))
    if wait is None:
        return error
    if wait > max_wait:
        return park(error, io_ops.wall_clock() + wait, _reason(error))
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


def _seconds_until(epoch: object, clock: object) -> float | None:
    """Return the seconds until a named reset (an epoch, or a local `HH:MM`), if one is named."""
    now = io_ops.wall_clock()
    if isinstance(epoch, int | float) and not isinstance(epoch, bool) and epoch < _LATEST_EPOCH:
        return max(float(epoch) - now, 0.0)
    if isinstance(clock, str):
        local = time.localtime(now)
        hour, minute = (int(part) for part in clock.split(":"))
        # Codex names a local time of day, its seconds cut off: the reset comes before the
        # named minute ends, so that is the wait. A minute long past names tomorrow's.
        delta = (hour * 60 + minute) * 60 - (
            local.tm_hour * 3600 + local.tm_min * 60 + local.tm_sec
        )
        return float(delta + 60 if delta > _JUST_PAST else delta + 86_460)
    return None
