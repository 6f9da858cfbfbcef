"""`Reply`: one scripted answer of the fake model API (see `adws.testing.model_api`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, final

import attrs

from adws._exceptions import MalformedError
from adws._frozen import freeze_mapping

__all__ = ["Reply", "ReplyKind", "replies_from_json"]

ReplyKind = Literal["text", "error", "tool", "drop"]

_OPTIONS: Final[Mapping[str, Mapping[str, tuple[type, ...]]]] = {
    "text": {"delay": (int, float), "input_tokens": (int,), "output_tokens": (int,)},
    "error": {"message": (str,), "retry_after": (int, float), "error_type": (str,)},
    "usage_limit": {},
    "tool": {"arguments": (dict,)},
    "drop": {},
}
"""Each kind of reply a replies file may hold, with the options it may have (and their types)."""

_VALUES: Final[Mapping[str, tuple[type, ...]]] = {
    "text": (str,),
    "error": (int,),
    "usage_limit": (int,),
    "tool": (str,),
    "drop": (bool,),
}


@final
@attrs.frozen
class Reply:
    """One scripted answer of the fake model API.

    `delay` seconds pass before anything is sent (a slow model; the CLI
    prints nothing meanwhile). Token counts decide what the CLI says the
    call cost (claude prices them by its model).
    """

    kind: ReplyKind
    content: str = ""
    status: int = 200
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=freeze_mapping)
    body: Mapping[str, Any] = attrs.field(factory=dict, converter=freeze_mapping)
    tool_name: str = ""
    arguments: Mapping[str, Any] = attrs.field(factory=dict, converter=freeze_mapping)
    delay: float = 0.0
    input_tokens: int = 10
    output_tokens: int = 5
    arguments_from: Callable[[str], Mapping[str, Any]] | None = None
    """Build the tool call's arguments from the prompt, when they can only be known then."""

    @classmethod
    def text(
        cls, text: str, *, delay: float = 0.0, input_tokens: int = 10, output_tokens: int = 5
    ) -> Reply:
        """Answer `text`, after `delay` seconds, saying it read and wrote that many tokens."""
        return cls(
            "text", text, delay=delay, input_tokens=input_tokens, output_tokens=output_tokens
        )

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "fake model API error",
        *,
        retry_after: float | None = None,
        error_type: str | None = None,
    ) -> Reply:
        """Answer HTTP `status` with an API error body (and `retry-after`, when given)."""
        headers = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
        kind = error_type or {429: "rate_limit_error", 529: "overloaded_error"}.get(
            status, "api_error"
        )
        body = {"type": kind, "message": message}
        return cls("error", status=status, headers=headers, body=body)

    @classmethod
    def usage_limit(cls, resets_in: int, now: float) -> Reply:
        """Answer a subscription's usage limit, reset `resets_in` seconds after `now`.

        As each API says it: OpenAI's body (429 `usage_limit_reached` with
        `resets_in_seconds` and `resets_at`, what codex reads), and
        Anthropic's `anthropic-ratelimit-unified-*` headers (status
        `rejected`, the reset, the window that ran out), which `claude`
        reads only when signed in with an OAuth token
        (`claude_env(home, oauth=True)`): it then makes no retry and
        prints a rejected `rate_limit_event` with `resetsAt`.
        """
        resets_at = int(now) + resets_in
        body = {
            "type": "usage_limit_reached",
            "message": "You have hit your usage limit",
            "resets_in_seconds": resets_in,
            "resets_at": resets_at,
        }
        headers = {
            "anthropic-ratelimit-unified-status": "rejected",
            "anthropic-ratelimit-unified-reset": str(resets_at),
            "anthropic-ratelimit-unified-representative-claim": "five_hour",
            "anthropic-ratelimit-unified-5h-status": "rejected",
            "anthropic-ratelimit-unified-5h-reset": str(resets_at),
        }
        return cls("error", status=429, headers=headers, body=body)

    @classmethod
    def quota(
        cls, text: str, *, used: float, resets_in: int, now: float, window: str = "five_hour"
    ) -> Reply:
        """Answer `text`, saying the account has used `used` (0 to 1) of a window.

        As each API says it on a response it answered: Anthropic's
        `anthropic-ratelimit-unified-*` headers (the window's utilization,
        its reset, and a threshold it passed, so `claude` signed in with an
        OAuth token prints a `rate_limit_event` with `utilization`), and
        OpenAI's `x-codex-primary-*` ones (what codex reads into its
        `rate_limits`). `window` is claude's name of it (`five_hour`,
        `seven_day`).
        """
        resets_at = str(int(now) + resets_in)
        short = {"five_hour": "5h", "seven_day": "7d"}.get(window, window)
        headers = {
            "anthropic-ratelimit-unified-status": "allowed",
            "anthropic-ratelimit-unified-reset": resets_at,
            "anthropic-ratelimit-unified-representative-claim": window,
            f"anthropic-ratelimit-unified-{short}-utilization": f"{used:g}",
            f"anthropic-ratelimit-unified-{short}-reset": resets_at,
            f"anthropic-ratelimit-unified-{short}-surpassed-threshold": f"{min(used, 0.9):g}",
            "x-codex-primary-used-percent": f"{used * 100:g}",
            "x-codex-primary-window-minutes": "300",
            "x-codex-primary-reset-at": resets_at,
        }
        return cls("text", text, headers=headers)

    @classmethod
    def tool(
        cls,
        name: str,
        arguments: Mapping[str, Any] | Callable[[str], Mapping[str, Any]],
        *,
        input_tokens: int = 10,
    ) -> Reply:
        """Ask the CLI to run tool `name` (`Write`, `Bash`, codex's `exec_command`).

        `arguments` may be a function of the prompt (the user's text of the
        request): a file in a run's worktree has a path only the run knows,
        and the prompt can say it (`{worktree}`).
        """
        if callable(arguments):
            return cls("tool", tool_name=name, arguments_from=arguments, input_tokens=input_tokens)
        return cls("tool", tool_name=name, arguments=arguments, input_tokens=input_tokens)

    @classmethod
    def drop(cls) -> Reply:
        """Start a streamed answer and close the connection before it ends."""
        return cls("drop")


def _checked(entry: object, where: str) -> tuple[str, Any, dict[str, Any]]:
    """Return a reply object's kind, value and options, or raise naming what is wrong."""
    kinds = [kind for kind in _VALUES if isinstance(entry, dict) and kind in entry]
    if not isinstance(entry, dict) or len(kinds) != 1:
        msg = f"{where}: a reply is a string or an object with one of {', '.join(_VALUES)}"
        raise MalformedError(msg)
    kind = kinds[0]
    typed = {kind: _VALUES[kind], **_OPTIONS[kind]}
    for name, value in entry.items():
        allowed = typed.get(name)
        if allowed is None:
            known = ", ".join(_OPTIONS[kind]) or "none"
            msg = f"{where}.{name}: not an option of a {kind} reply (its options: {known})"
            raise MalformedError(msg)
        # bool is an int to isinstance, yet never a status, a count or a delay.
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            names = " or ".join(t.__name__ for t in allowed)
            msg = f"{where}.{name}: expected {names}, got {json.dumps(value)}"
            raise MalformedError(msg)
    return kind, entry[kind], {name: entry[name] for name in entry if name != kind}


def _reply(entry: object, where: str, now: float) -> Reply:
    if isinstance(entry, str):
        return Reply.text(entry)
    kind, value, options = _checked(entry, where)
    if kind == "text":
        return Reply.text(value, **options)
    if kind == "error":
        return Reply.error(value, **options)
    if kind == "usage_limit":
        return Reply.usage_limit(value, now)
    if kind == "tool":
        return Reply.tool(value, options.get("arguments", {}))
    return Reply.drop()


def _queue(entries: object, where: str, now: float) -> list[Reply]:
    if not isinstance(entries, list):
        msg = f"{where}: expected a list of replies, got {json.dumps(entries)[:80]}"
        raise MalformedError(msg)
    return [_reply(entry, f"{where}[{index}]", now) for index, entry in enumerate(entries)]


def replies_from_json(data: object, now: float) -> dict[str | None, list[Reply]]:
    """Read scripted replies from a replies file's JSON, by marker (None: in order).

    The file is a list of replies, answered in order, or an object with
    `replies` (that list) and `by_marker` (a list per marker, for requests
    whose prompt holds it). A reply is a string (its text) or an object:
    `{"text": ..., "delay": s}`, `{"error": 429, "message": ..., "retry_after": s}`,
    `{"usage_limit": s}` (resetting `s` seconds after `now`),
    `{"tool": "Write", "arguments": {...}}` or `{"drop": true}`. A wrong
    shape is a `ValueError` naming where (`$.by_marker.PLAN[1].delay`).

    >>> replies_from_json(["hi", {"drop": True}], 0.0)[None][1].kind
    'drop'
    >>> replies_from_json({"by_marker": {"B": [{"text": "for B", "delay": 1}]}}, 0.0)["B"][0].delay
    1
    """
    if isinstance(data, list):
        return {None: _queue(data, "$", now)}
    if not isinstance(data, dict) or not data.keys() <= {"replies", "by_marker"}:
        msg = '$: expected a list of replies or an object with "replies" and "by_marker"'
        raise MalformedError(msg)
    queues: dict[str | None, list[Reply]] = {
        None: _queue(data.get("replies", []), "$.replies", now)
    }
    markers = data.get("by_marker", {})
    if not isinstance(markers, dict):
        msg = f"$.by_marker: expected an object of marker: replies, got {json.dumps(markers)[:80]}"
        raise MalformedError(msg)
    for marker, entries in markers.items():
        queues[marker] = _queue(entries, f"$.by_marker.{marker}", now)
    return queues
