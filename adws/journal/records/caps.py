"""A cap that holds across runs: an amount per window, for some workflow or agent, and its windows.

A cap (`adws caps set NAME (--usd X | --tokens N | --runs N) --per WINDOW
[--tz ZONE] [--workflow W] [--agent PRESET]`) bounds what every run sharing
a journal spends. Its window is a duration (`30s`, `5m`, `5h`, `7d`):
rolling, starting at the window's first spend, as a subscription's window
does; or `day` / `week`: calendar, from local midnight in `tz` (a week
from Monday), computed on the wall clock of that zone, so a day across a
daylight-saving change is 23 or 25 hours long and still ends at midnight.

Everything that crosses the boundary is checked here: a name that is not a
plain word, an amount that is negative or not finite (0 freezes), a
zero or unreadable window and an unknown zone are refused with the reason
(`MalformedError`), both when a cap is set and when a stored row is read
back (a row altered to nonsense reads as unreadable, never as no cap).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import zoneinfo
from typing import Final, Literal, TypeAlias, final

import attrs

from adws._durations import parse_duration
from adws._exceptions import MalformedError

__all__ = ["Cap", "Currency", "parse_window", "window_start"]

Currency: TypeAlias = Literal["usd", "tokens", "runs"]

_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_CALENDAR: Final = ("day", "week")
_MOST: Final = 1e12
"""No cap is this large: anything past it is a typo or an attack, refused."""


def parse_window(text: str) -> int | str:
    """Read a window: seconds of a rolling one, or `day` / `week`.

    >>> parse_window("5h"), parse_window("30s"), parse_window("day")
    (18000, 30, 'day')
    >>> parse_window("0h")
    Traceback (most recent call last):
    ...
    adws._exceptions.MalformedError: window '0h' is not a duration (30s, 5h, 7d) or day/week
    """
    if text in _CALENDAR:
        return text
    try:
        return parse_duration(text, "window")
    except MalformedError as exc:
        msg = f"{exc} or day/week"
        raise MalformedError(msg) from None


def _zone(name: str) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        msg = f"unknown time zone {name!r}"
        raise MalformedError(msg) from exc


def window_start(per: str, tz: str, now: dt.datetime) -> dt.datetime:
    """Return when the calendar window holding `now` began: local midnight in `tz` (UTC).

    >>> paris = dt.datetime(2026, 10, 25, 12, 0, tzinfo=dt.UTC)  # the day clocks go back
    >>> window_start("day", "Europe/Paris", paris).isoformat()
    '2026-10-24T22:00:00+00:00'
    """
    local = now.astimezone(_zone(tz))
    day = local.date()
    if per == "week":
        day -= dt.timedelta(days=day.weekday())
    return dt.datetime.combine(day, dt.time(), tzinfo=local.tzinfo).astimezone(dt.UTC)


def _window_end(per: str, tz: str, start: dt.datetime) -> dt.datetime:
    """Return the next local midnight after a calendar window's start (23, 24 or 25 hours on)."""
    zone = _zone(tz)
    day = start.astimezone(zone).date() + dt.timedelta(days=7 if per == "week" else 1)
    return dt.datetime.combine(day, dt.time(), tzinfo=zone).astimezone(dt.UTC)


def _amount(currency: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        msg = f"the amount must be a number, got {value!r}"
        raise MalformedError(msg)
    if not math.isfinite(value) or value < 0 or value > _MOST:
        msg = f"the amount must be a finite number from 0 (nothing may spend), got {value!r}"
        raise MalformedError(msg)
    if currency != "usd" and value != int(value):
        msg = f"--{currency} must be a whole number, got {value!r}"
        raise MalformedError(msg)
    return float(value)


@final
@attrs.frozen
class Cap:
    """An amount of `currency` per window, for the runs of `workflow` and calls of `agent`.

    Build one with `Cap.checked` (what `adws caps set` does) or read a
    stored one with `Cap.from_json`: both refuse nonsense with the reason.
    """

    name: str
    currency: Currency
    amount: float
    per: str
    tz: str = "UTC"
    workflow: str | None = None
    agent: str | None = None

    @classmethod
    def checked(  # noqa: PLR0913 - a cap's fields, all keyword-only
        cls,
        *,
        name: object,
        currency: object,
        amount: object,
        per: object,
        tz: object = "UTC",
        workflow: object = None,
        agent: object = None,
    ) -> Cap:
        """Return the cap these values describe, or raise `MalformedError` saying what is wrong."""
        if not isinstance(name, str) or _NAME.fullmatch(name) is None:
            msg = f"cap name {name!r} is not a plain word (letters, digits, _ . -)"
            raise MalformedError(msg)
        if currency not in {"usd", "tokens", "runs"}:
            msg = f"cap {name}: the currency must be usd, tokens or runs, got {currency!r}"
            raise MalformedError(msg)
        if not isinstance(per, str) or not isinstance(tz, str):
            msg = f"cap {name}: the window and the zone must be text, got {per!r} and {tz!r}"
            raise MalformedError(msg)
        scopes = []
        for label, scope in (("workflow", workflow), ("agent", agent)):
            if scope is not None and (not isinstance(scope, str) or not scope):
                msg = f"cap {name}: {label} must be a name, got {scope!r}"
                raise MalformedError(msg)
            scopes.append(scope if isinstance(scope, str) else None)
        try:
            value = _amount(str(currency), amount)
            parse_window(per)
            _zone(tz)
        except MalformedError as exc:
            msg = f"cap {name}: {exc}"
            raise MalformedError(msg) from exc
        kind: Currency = (
            "usd" if currency == "usd" else "tokens" if currency == "tokens" else "runs"
        )
        return cls(name, kind, value, per, tz, scopes[0], scopes[1])

    def to_json(self) -> str:
        """Return the JSON the journal stores."""
        return json.dumps(attrs.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, name: str, text: object) -> Cap:
        """Read a stored cap; a row that is not one is `MalformedError` naming the cap."""
        try:
            fields = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            fields = None
        if not isinstance(fields, dict) or fields.get("name") != name:
            msg = f"cap {name}: its journal row is unreadable"
            raise MalformedError(msg)
        try:
            return cls.checked(
                name=name,
                currency=fields.get("currency"),
                amount=fields.get("amount"),
                per=fields.get("per"),
                tz=fields.get("tz", "UTC"),
                workflow=fields.get("workflow"),
                agent=fields.get("agent"),
            )
        except MalformedError as exc:
            msg = f"cap {name}: its journal row is unreadable ({exc})"
            raise MalformedError(msg) from exc

    @property
    def rolling(self) -> int | None:
        """Return the rolling window's seconds (None: a calendar window)."""
        window = parse_window(self.per)
        return window if isinstance(window, int) else None

    def window(
        self, now: dt.datetime, spends: list[dt.datetime]
    ) -> tuple[dt.datetime, dt.datetime]:
        """Return the window holding `now`: its start and its end (when it resets), in UTC.

        A calendar window runs from local midnight to the next. A rolling one
        starts at the first spend (of `spends`, oldest first) not inside an
        earlier window; with none in a window still open, it would start now.
        """
        seconds = self.rolling
        if seconds is None:
            start = window_start(self.per, self.tz, now)
            return start, _window_end(self.per, self.tz, start)
        length = dt.timedelta(seconds=seconds)
        opened: dt.datetime | None = None
        for spend in spends:
            if opened is None or spend >= opened + length:
                opened = spend
        if opened is None or now >= opened + length:
            return now, now + length
        return opened, opened + length

    def describe(self) -> str:
        """Say the cap in a few words.

        >>> Cap("daily", "usd", 20.0, "day", "Europe/Paris", "fix").describe()
        '$20.00 per day (Europe/Paris), workflow fix'
        """
        amount = (
            f"${self.amount:,.2f}"
            if self.currency == "usd"
            else f"{self.amount:,.0f} {self.currency}"
        )
        said = f"{amount} per {self.per}"
        if self.rolling is None:
            said += f" ({self.tz})"
        scopes = [
            f"{label} {value}"
            for label, value in (("workflow", self.workflow), ("agent", self.agent))
            if value
        ]
        return ", ".join([said, *scopes])
