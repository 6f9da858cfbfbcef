"""The agents' own quota windows in the journal: kept per account, parking past `--park-at`.

On both backends (`journal_at`: a SQLite file, a real PostgreSQL server),
with the clock passed in (Unix seconds), never waited for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from adws.engine.caps import CapFull, QuotaReport
from adws.journal import Journal
from adws.journal.store.quotas import QuotaWindow, book, forget_full, parked, record, windows

if TYPE_CHECKING:
    from pathlib import Path

NOW = 1_800_000_000.0


@pytest.mark.parametrize("journal_at", ["sqlite", "postgres"], indirect=True)
def test_a_window_past_park_at_parks_its_account_until_it_resets(journal_at: str) -> None:
    journal = Journal(journal_at)
    record(journal, "claude /h", (QuotaReport("five_hour", 0.96, NOW + 600),), NOW)
    record(journal, "codex /c", (QuotaReport("300m", 0.2, NOW + 60),), NOW)
    assert parked(journal, "claude /h", 0.95, NOW) == CapFull(
        "agent account claude /h: window five_hour 96% used (parks at 95%)", NOW + 600
    )
    assert parked(journal, "claude /h", 0.97, NOW) is None  # a higher --park-at
    assert parked(journal, "codex /c", 0.95, NOW) is None
    assert parked(journal, "claude /h", 0.95, NOW + 600) is None  # reset: counts no more
    assert parked(journal, "nobody", 0.95, NOW) is None


@pytest.mark.parametrize("journal_at", ["sqlite", "postgres"], indirect=True)
def test_a_newer_report_replaces_the_window_and_one_without_a_share_keeps_the_last(
    journal_at: str,
) -> None:
    journal = Journal(journal_at)
    record(journal, "a", (QuotaReport("w", 0.5, NOW + 100),), NOW)
    record(journal, "a", (QuotaReport("w", None, None),), NOW + 10)
    assert windows(journal) == [QuotaWindow("a", "w", 0.5, NOW + 100, "2027-01-15T08:00:10+00:00")]
    record(journal, "a", (QuotaReport("w", 0.97, NOW + 200),), NOW + 20)
    record(journal, "a", (), NOW + 30)  # nothing said: nothing changes
    [window] = windows(journal, "a")
    assert (window.used, window.resets_at) == (0.97, NOW + 200)
    # Past its reset a window without a share forgets the share it had.
    record(journal, "a", (QuotaReport("w", None, NOW + 900),), NOW + 300)
    assert windows(journal)[0].to_dict() == {
        "account": "a",
        "window": "w",
        "used": None,
        "resets_at": NOW + 900,
        "updated": "2027-01-15T08:05:00+00:00",
    }


@pytest.mark.parametrize("journal_at", ["sqlite"], indirect=True)
def test_of_several_full_windows_the_last_to_reset_decides(journal_at: str) -> None:
    journal = Journal(journal_at)
    reports = (
        QuotaReport("five_hour", 1.0, NOW + 100),
        QuotaReport("seven_day", 0.99, NOW + 5000),
        QuotaReport("unknown reset", 1.0, None),
    )
    record(journal, "a", reports, NOW)
    found = parked(journal, "a", 0.95, NOW)
    assert found == CapFull("agent account a: window seven_day 99% used (parks at 95%)", NOW + 5000)


@pytest.mark.parametrize("journal_at", ["sqlite"], indirect=True)
def test_the_book_a_run_holds_records_and_parks_by_its_clock_and_resume_now_forgets(
    journal_at: str,
) -> None:
    journal = Journal(journal_at)
    quotas = book(journal, 0.5, lambda: NOW)
    quotas.record("a", (QuotaReport("w", 0.6, NOW + 10), QuotaReport("old", 1.0, NOW - 1)))
    assert quotas.parked("a") == CapFull(
        "agent account a: window w 60% used (parks at 50%)", NOW + 10
    )
    forget_full(journal, NOW)
    assert [window.window for window in windows(journal)] == ["old"]
    assert quotas.parked("a") is None


def test_a_journal_from_before_quota_windows_knows_none(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs.db")
    with journal.transaction() as db:
        db.execute("DROP TABLE agent_quotas")
    assert windows(journal) == []
