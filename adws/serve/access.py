"""Who may look and who may change: the token file, sessions, one-use form tokens, same site.

A token made on first start (`.adws/serve-token`, mode 0600) is the one
secret: a person who can read it logs in with it and a name, and gets a
session (a random id in an HttpOnly, SameSite=Strict cookie; the server
keeps the name). Every form carries a token of its own, good once: a
change needs the session, a form token it was given and not yet used, and
an `Origin` (else `Referer`) of this very site. What the server keeps is
bounded: `MOST_SESSIONS` sessions and `MOST_FORMS` open forms each, the
oldest forgotten first; sessions live in memory, so a restart logs
everyone out.
"""

from __future__ import annotations

import hmac
import os
import secrets
from collections import OrderedDict
from typing import TYPE_CHECKING, Final, final
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "MOST_FORMS",
    "MOST_SESSIONS",
    "TOKEN_NAME",
    "Sessions",
    "read_or_make_token",
    "same_site",
    "valid_name",
]

TOKEN_NAME: Final = "serve-token"  # noqa: S105 - the file's name, not its token
"""The token file's name, in the folder of this host's run state (`.adws`)."""
MOST_SESSIONS: Final = 1_000
"""Sessions kept at most; past it the oldest is logged out."""
MOST_FORMS: Final = 256
"""Open form tokens kept per session at most; past it the oldest form is refused."""
_NAME_CHARS: Final = 64


def read_or_make_token(home: Path) -> tuple[Path, str, bool] | str:
    """Return the token file, its token, and whether it was made now (mode 0600, never shared).

    A file that others may read is refused rather than used (its token may
    have leaked): the answer is then why.
    """
    path = home / TOKEN_NAME
    home.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        mode = path.stat().st_mode & 0o077
        if mode:
            return f"{path} may be read by others (mode {oct(mode)}): chmod 600 {path}"
        return path, path.read_text(encoding="ascii").strip(), False
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(token + "\n")
    return path, token, True


def valid_name(name: str) -> str | None:
    r"""Return the name a person gave, trimmed, or None when it is empty, too long or not text.

    >>> valid_name("  ada  ")
    'ada'
    >>> valid_name("a" * 65) is None, valid_name("a\tb") is None
    (True, True)
    """
    trimmed = name.strip()
    if not trimmed or len(trimmed) > _NAME_CHARS or not trimmed.isprintable():
        return None
    return trimmed


def same_site(origin: str | None, referer: str | None, site: str) -> bool:
    """Tell whether a change comes from this site: its `Origin`, else its `Referer`.

    `site` is `scheme://host[:port]` as this server is reached. Without
    either header the change is refused too (every browser sends `Origin`
    with a form's POST).

    >>> same_site("http://127.0.0.1:8765", None, "http://127.0.0.1:8765")
    True
    >>> same_site(None, "http://evil.example/x", "http://127.0.0.1:8765")
    False
    >>> same_site("null", "http://127.0.0.1:8765/", "http://127.0.0.1:8765")
    False
    """
    if origin is not None:
        return origin == site
    if referer is None:
        return False
    parts = urlsplit(referer)
    return f"{parts.scheme}://{parts.netloc}" == site


@final
class Sessions:
    """The sessions this server gave, with who each is and its open form tokens.

    Form tokens not tied to a session (the login form's) are kept apart,
    bounded the same way.
    """

    def __init__(self, token: str) -> None:
        """Keep the server's token; no session yet."""
        self._token = token
        self._names: OrderedDict[str, str] = OrderedDict()
        self._forms: dict[str, OrderedDict[str, None]] = {}
        self._anonymous: OrderedDict[str, None] = OrderedDict()

    def login(self, token: str, name: str) -> str | None:
        """Return a new session id for `name` when `token` is the server's; None otherwise."""
        if not hmac.compare_digest(token.encode(), self._token.encode()):
            return None
        session = secrets.token_urlsafe(32)
        self._names[session] = name
        self._forms[session] = OrderedDict()
        while len(self._names) > MOST_SESSIONS:
            gone, _ = self._names.popitem(last=False)
            del self._forms[gone]
        return session

    def logout(self, session: str) -> None:
        """Forget a session and its forms."""
        self._names.pop(session, None)
        self._forms.pop(session, None)

    def who(self, session: str | None) -> str | None:
        """Return the name of a live session, else None."""
        return None if session is None else self._names.get(session)

    def form(self, session: str | None) -> str:
        """Make a form token for `session` (None: the login form), good once."""
        forms = self._anonymous if session is None else self._forms[session]
        made = secrets.token_urlsafe(24)
        forms[made] = None
        while len(forms) > MOST_FORMS:
            forms.popitem(last=False)
        return made

    def spend(self, session: str | None, token: str) -> bool:
        """Use a form token: True once for a token this session was given, then never again."""
        forms = self._anonymous if session is None else self._forms.get(session)
        if forms is None or token not in forms:
            return False
        del forms[token]
        return True
