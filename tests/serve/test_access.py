"""The token file, sessions and one-use form tokens, bounded."""

from __future__ import annotations

import stat
from typing import TYPE_CHECKING

from adws.serve import access
from adws.serve.access import Sessions, read_or_make_token, same_site

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def test_the_token_file_is_made_once_mode_0600_and_read_after(tmp_path: Path) -> None:
    made = read_or_make_token(tmp_path / ".adws")
    again = read_or_make_token(tmp_path / ".adws")
    assert not isinstance(made, str)
    assert not isinstance(again, str)
    path, token, new = made
    assert (path, new, again) == (tmp_path / ".adws" / "serve-token", True, (path, token, False))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(token) == 43


def test_a_token_file_others_may_read_is_refused(tmp_path: Path) -> None:
    (tmp_path / "serve-token").write_text("leaked\n")
    (tmp_path / "serve-token").chmod(0o644)
    assert read_or_make_token(tmp_path) == (
        f"{tmp_path / 'serve-token'} may be read by others (mode 0o44): "
        f"chmod 600 {tmp_path / 'serve-token'}"
    )


def test_a_form_token_is_good_once_and_for_its_session_only() -> None:
    sessions = Sessions("t")
    ada, bob = sessions.login("t", "ada"), sessions.login("t", "bob")
    assert ada is not None
    assert bob is not None
    token = sessions.form(ada)
    assert (sessions.spend(bob, token), sessions.spend(ada, token)) == (False, True)
    assert sessions.spend(ada, token) is False
    assert sessions.spend("gone", token) is False
    assert sessions.login("not it", "eve") is None


def test_open_forms_and_sessions_are_bounded_the_oldest_forgotten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(access, "MOST_SESSIONS", 2)
    monkeypatch.setattr(access, "MOST_FORMS", 2)
    sessions = Sessions("t")
    first = sessions.login("t", "a")
    forms = [sessions.form(first) for _ in range(3)]
    assert [sessions.spend(first, form) for form in forms] == [False, True, True]
    sessions.login("t", "b")
    sessions.login("t", "c")
    assert sessions.who(first) is None
    anonymous = [sessions.form(None) for _ in range(3)]
    assert [sessions.spend(None, form) for form in anonymous] == [False, True, True]


def test_logging_out_forgets_the_session_and_its_forms() -> None:
    sessions = Sessions("t")
    ada = sessions.login("t", "ada")
    assert ada is not None
    form = sessions.form(ada)
    sessions.logout(ada)
    assert (sessions.who(ada), sessions.who(None), sessions.spend(ada, form)) == (None, None, False)


def test_same_site_reads_origin_first_then_referer() -> None:
    site = "https://adws.example:8443"
    assert same_site(None, "https://adws.example:8443/runs/ab", site)
    assert not same_site("https://adws.example:8443.evil", None, site)
    assert not same_site(None, None, site)
