"""Caps: checked when set and when read back, their windows (rolling, calendar across DST)."""

from __future__ import annotations

import datetime as dt
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adws._exceptions import MalformedError
from adws.journal.records.caps import Cap, parse_window, window_start

UTC = dt.UTC


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).astimezone(UTC)


def paris_daily() -> Cap:
    return Cap.checked(name="daily-claude", currency="usd", amount=20, per="day", tz="Europe/Paris")


def test_a_daily_cap_resets_at_the_next_local_midnight_across_the_autumn_change() -> None:
    """25 October 2026: Paris goes from +02:00 to +01:00; the day is 25 hours long."""
    start, resets = paris_daily().window(at("2026-10-25T12:00:00+00:00"), [])
    assert (start, resets) == (at("2026-10-24T22:00:00+00:00"), at("2026-10-25T23:00:00+00:00"))
    assert resets - start == dt.timedelta(hours=25)


def test_a_daily_cap_resets_at_the_next_local_midnight_across_the_spring_change() -> None:
    """29 March 2026: Paris goes from +01:00 to +02:00; the day is 23 hours long."""
    start, resets = paris_daily().window(at("2026-03-29T12:00:00+00:00"), [])
    assert (start, resets) == (at("2026-03-28T23:00:00+00:00"), at("2026-03-29T22:00:00+00:00"))


def test_a_weekly_cap_runs_from_monday_local_midnight() -> None:
    cap = Cap.checked(name="w", currency="tokens", amount=5, per="week", tz="America/New_York")
    start, resets = cap.window(at("2026-11-05T15:00:00+00:00"), [])  # a Thursday, after DST ended
    assert (start, resets) == (at("2026-11-02T05:00:00+00:00"), at("2026-11-09T05:00:00+00:00"))


def test_a_rolling_window_starts_at_its_first_spend_and_frees_after_it() -> None:
    cap = Cap.checked(name="five", currency="tokens", amount=1000, per="5h")
    spends = [at("2026-11-01T09:00:00+00:00"), at("2026-11-01T10:00:00+00:00")]
    inside = cap.window(at("2026-11-01T13:59:00+00:00"), spends)
    assert inside == (at("2026-11-01T09:00:00+00:00"), at("2026-11-01T14:00:00+00:00"))
    later = cap.window(at("2026-11-01T14:00:00+00:00"), spends)
    assert later == (at("2026-11-01T14:00:00+00:00"), at("2026-11-01T19:00:00+00:00"))
    # A spend after the first window opens the next one.
    again = [*spends, at("2026-11-01T15:30:00+00:00")]
    assert cap.window(at("2026-11-01T16:00:00+00:00"), again)[0] == at("2026-11-01T15:30:00+00:00")


@given(
    st.datetimes(
        min_value=dt.datetime(2000, 1, 1),  # noqa: DTZ001 - hypothesis takes naive bounds
        max_value=dt.datetime(2090, 1, 1),  # noqa: DTZ001 - as above
    )
)
def test_a_calendar_day_always_holds_now_and_ends_at_a_local_midnight(naive: dt.datetime) -> None:
    now = naive.replace(tzinfo=UTC)
    start, resets = paris_daily().window(now, [])
    assert start <= now < resets
    assert dt.timedelta(hours=23) <= resets - start <= dt.timedelta(hours=25)
    assert window_start("day", "Europe/Paris", resets) == resets


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"name": "a b"}, "cap name 'a b' is not a plain word (letters, digits, _ . -)"),
        ({"name": "../x"}, "cap name '../x' is not a plain word (letters, digits, _ . -)"),
        (
            {"amount": -1},
            "cap c: the amount must be a finite number from 0 (nothing may spend), got -1",
        ),
        (
            {"amount": math.inf},
            "cap c: the amount must be a finite number from 0 (nothing may spend), got inf",
        ),
        (
            {"amount": math.nan},
            "cap c: the amount must be a finite number from 0 (nothing may spend), got nan",
        ),
        ({"amount": "5"}, "cap c: the amount must be a number, got '5'"),
        ({"amount": True}, "cap c: the amount must be a number, got True"),
        ({"currency": "tokens", "amount": 1.5}, "cap c: --tokens must be a whole number, got 1.5"),
        ({"currency": "eur"}, "cap c: the currency must be usd, tokens or runs, got 'eur'"),
        ({"per": "0h"}, "cap c: window '0h' is not a duration (30s, 5h, 7d) or day/week"),
        ({"per": "month"}, "cap c: window 'month' is not a duration (30s, 5h, 7d) or day/week"),
        ({"per": 5}, "cap c: the window and the zone must be text, got 5 and 'UTC'"),
        ({"tz": "Mars/Olympus"}, "cap c: unknown time zone 'Mars/Olympus'"),
        ({"tz": "../../etc/passwd"}, "cap c: unknown time zone '../../etc/passwd'"),
        ({"workflow": ""}, "cap c: workflow must be a name, got ''"),
        ({"agent": 3}, "cap c: agent must be a name, got 3"),
    ],
)
def test_bad_caps_are_refused_with_the_reason(fields: dict[str, object], reason: str) -> None:
    given_fields: dict[str, object] = {"name": "c", "currency": "usd", "amount": 5, "per": "day"}
    given_fields.update(fields)
    with pytest.raises(MalformedError) as refused:
        Cap.checked(**given_fields)
    assert str(refused.value) == reason


def test_a_stored_cap_reads_back_and_nonsense_is_a_named_unreadable_row() -> None:
    cap = Cap.checked(name="c", currency="runs", amount=3, per="day", workflow="fix", agent="codex")
    assert Cap.from_json("c", cap.to_json()) == cap
    with pytest.raises(MalformedError, match=r"^cap c: its journal row is unreadable$"):
        Cap.from_json("c", "{not json")
    with pytest.raises(MalformedError, match=r"^cap c: its journal row is unreadable$"):
        Cap.from_json("c", json.dumps({**json.loads(cap.to_json()), "name": "other"}))
    with pytest.raises(MalformedError, match=r"^cap c: its journal row is unreadable$"):
        Cap.from_json("c", None)
    altered = json.dumps({**json.loads(cap.to_json()), "amount": -5})
    with pytest.raises(MalformedError) as refused:
        Cap.from_json("c", altered)
    assert str(refused.value) == (
        "cap c: its journal row is unreadable (cap c: the amount must be a finite number"
        " from 0 (nothing may spend), got -5)"
    )


def test_windows_read_as_seconds_or_calendar_words() -> None:
    assert [parse_window(w) for w in ("30s", "5m", "5h", "7d", "week")] == [
        30,
        300,
        18000,
        604800,
        "week",
    ]


def test_a_cap_describes_itself() -> None:
    five = Cap.checked(name="f", currency="tokens", amount=2_000_000, per="5h", agent="claude")
    assert five.describe() == "2,000,000 tokens per 5h, agent claude"
    assert paris_daily().describe() == "$20.00 per day (Europe/Paris)"
