"""Read what agent CLIs say about their account's quota, and name the account it is of.

Claude Code prints a `rate_limit_event` in its stream (`rate_limit_info`:
`status`, `resetsAt`, `rateLimitType`, and once a threshold is passed
`utilization`, 0 to 1, with `unifiedWindows` naming each window's); codex
keeps `rate_limits` (`primary` and `secondary`: `used_percent`, 0 to 100,
`window_minutes`, `resets_at` or `resets_in_seconds`) on the events that
carry them. The parsers turn both into `quota` entries (`window`, `used`,
`resets_at`) on the answer's metadata, or the failure's context; a
usage-limit reply's reset is one more (`usage limit`, used whole). Values
that are not numbers in range are dropped, never trusted.

An account is what the quota is counted against: the CLI (the program's
name) and its configuration home (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, else
`HOME`), plus a short hash of the API key or token it signs in with, when
one is set, so two keys in one home are two accounts. The key itself is
never kept: only 8 hex digits of its SHA-256. A backend that runs no CLI
(a function, `ScriptedAgent`) has no account: nothing it says is
journaled, nothing parks it.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Mapping
from pathlib import PurePath
from typing import TYPE_CHECKING, Final

from adws.engine.caps import QuotaReport
from adws.engine.errors import ErrorType

if TYPE_CHECKING:
    from adws.engine.errors import PipelineError

__all__ = ["account_of", "agent_account", "claude_quota", "codex_quota", "reports_of"]

_HOMES: Final = {"claude": ("CLAUDE_CONFIG_DIR",), "codex": ("CODEX_HOME",)}
_KEYS: Final = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
)
"""The variables a CLI signs in with, the first one set naming the key."""
_LATEST: Final = 1e12
"""Past this a reset is no time in seconds (milliseconds, or forged): dropped."""
_PERCENT: Final = 100.0


def _share(value: object, whole: float = 1.0) -> float | None:
    """Return a used share from 0 to 1 (`whole`: what all of it is), or None if not one.

    >>> _share(0.96), _share(96, 100.0), _share(-1), _share(float("nan")), _share(True)
    (0.96, 0.96, None, None, None)
    """
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    share = float(value) / whole
    return min(share, 1.0) if math.isfinite(share) and share >= 0 else None


def _epoch(value: object) -> float | None:
    """Return a reset time in Unix seconds, or None if it is not one.

    >>> _epoch(1795967447), _epoch(1795967447000), _epoch("soon"), _epoch(-5)
    (1795967447.0, None, None, None)
    """
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return float(value) if 0 < value < _LATEST else None


def _entry(window: object, used: float | None, resets_at: float | None) -> dict[str, object]:
    return {"window": str(window)[:40], "used": used, "resets_at": resets_at}


def claude_quota(info: object) -> list[dict[str, object]]:
    """Read claude's `rate_limit_info` into `quota` entries, one per window it names.

    A `rejected` status is the window used whole.

    >>> claude_quota({"status": "allowed_warning", "resetsAt": 1795967447,
    ...               "rateLimitType": "five_hour", "utilization": 0.96})
    [{'window': 'five_hour', 'used': 0.96, 'resets_at': 1795967447.0}]
    >>> claude_quota({"status": "allowed"}), claude_quota("nonsense")
    ([{'window': 'unified', 'used': None, 'resets_at': None}], [])
    """
    if not isinstance(info, dict):
        return []
    used = 1.0 if info.get("status") == "rejected" else _share(info.get("utilization"))
    named = info.get("rateLimitType") or "unified"
    found = {str(named): _entry(named, used, _epoch(info.get("resetsAt")))}
    windows = info.get("unifiedWindows")
    for name, window in (windows if isinstance(windows, dict) else {}).items():
        if isinstance(window, dict) and str(name) not in found:
            share = _share(window.get("utilization"))
            found[str(name)] = _entry(name, share, _epoch(window.get("resetsAt")))
    return list(found.values())


def codex_quota(limits: object, now: float) -> list[dict[str, object]]:
    """Read codex's `rate_limits` into `quota` entries (its primary and secondary windows).

    A window is named by its length (`300m`), else by its place.

    >>> codex_quota({"primary": {"used_percent": 96.0, "window_minutes": 300,
    ...              "resets_in_seconds": 60}}, 1000.0)
    [{'window': '300m', 'used': 0.96, 'resets_at': 1060.0}]
    >>> codex_quota({"secondary": {"used_percent": 5, "resets_at": 2000}}, 0.0)
    [{'window': 'secondary', 'used': 0.05, 'resets_at': 2000.0}]
    >>> codex_quota(None, 0.0)
    []
    """
    if not isinstance(limits, dict):
        return []
    found = []
    for place in ("primary", "secondary"):
        window = limits.get(place)
        if not isinstance(window, dict):
            continue
        minutes = window.get("window_minutes")
        name = (
            f"{minutes}m" if isinstance(minutes, int) and not isinstance(minutes, bool) else place
        )
        resets = _epoch(window.get("resets_at"))
        wait = _epoch(window.get("resets_in_seconds"))
        if resets is None and wait is not None:
            resets = now + wait
        found.append(_entry(name, _share(window.get("used_percent"), _PERCENT), resets))
    return found


def _report(entry: object) -> QuotaReport | None:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("window"), str):
        return None
    return QuotaReport(entry["window"], _share(entry.get("used")), _epoch(entry.get("resets_at")))


def reports_of(said: Mapping[str, object], error: PipelineError | None) -> tuple[QuotaReport, ...]:
    """Return the windows a call's answer (or failure) reported, checked again.

    `said` is the answer's metadata or the failure's context; a usage-limit
    failure that names its reset (or parked the run until it) adds the
    `usage limit` window, used whole.

    >>> reports_of({"quota": [{"window": "five_hour", "used": 0.5, "resets_at": 9.0}]}, None)
    (QuotaReport(window='five_hour', used=0.5, resets_at=9.0),)
    """
    entries = said.get("quota")  # a frozen answer's list is a tuple, its dicts mappings
    listed = entries if isinstance(entries, list | tuple) else ()
    found = [_report(entry) for entry in listed]
    reports = [report for report in found if report is not None]
    if error is not None and error.error_type in {ErrorType.AGENT_UNAVAILABLE, ErrorType.PARKED}:
        limit = error.context.get("limit")
        # A parked one knows when (`wake_at`), codex's local time of day read too.
        resets = _epoch(error.context.get("wake_at")) or _epoch(error.context.get("resets_at"))
        if isinstance(limit, str) and "usage limit" in limit and resets is not None:
            reports.append(QuotaReport("usage limit", 1.0, resets))
    return tuple(reports)


def account_of(argv: tuple[str, ...], env: Mapping[str, str] | None) -> str:
    """Name the account an agent's calls are counted against (see the module's docstring).

    `argv` is the agent's command (its program names the CLI); `env` what
    it adds to this process's environment.

    >>> account_of(("claude", "-p"), {"CLAUDE_CONFIG_DIR": "/h/.claude", "ANTHROPIC_API_KEY": ""})
    'claude /h/.claude'
    >>> account_of(("/bin/codex", "exec"), {"CODEX_HOME": "/c", "OPENAI_API_KEY": "sk-x"})
    'codex /c key 9df37f5e'
    """
    program = PurePath(argv[0]).name
    seen = {**os.environ, **(env or {})}
    homes = [seen.get(name) for name in _HOMES.get(program, ())]
    home = next((found for found in homes if found), None) or seen.get("HOME", "~")
    key = next((seen[name] for name in _KEYS if seen.get(name)), None)
    if key is None:
        return f"{program} {home}"
    return f"{program} {home} key {hashlib.sha256(key.encode()).hexdigest()[:8]}"


def agent_account(agent: object) -> str | None:
    """Name the account of an agent backend: a command's program, or the SDK's claude.

    Any other backend (a function, `ScriptedAgent`) runs no CLI: it has no
    account (None), so nothing it says is journaled and nothing parks it.

    >>> agent_account(lambda request: None) is None
    True
    """
    argv, env = getattr(agent, "argv", None), getattr(agent, "env", None)
    if isinstance(argv, tuple) and argv:
        return account_of(tuple(str(part) for part in argv), env)
    if type(agent).__name__ == "ClaudeAgent":
        return account_of(("claude",), env)
    return None
