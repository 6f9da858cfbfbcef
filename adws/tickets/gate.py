"""Who may start work from a ticket: a permitted author, never the token's own user or a bot.

An author starts work when their permission on the repository is
`write`, `maintain` or `admin`, or when the watcher names them with
`--allow`; never the login of the watcher's own token (its replies must
not start anything) and never a `[bot]` account, whatever their
permission. How often is the journal's to say (`adws.journal.store.tickets`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, final

import attrs

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["PERMITTED", "Gate"]

PERMITTED: Final = frozenset({"write", "maintain", "admin"})


@final
@attrs.frozen
class Gate:
    """Decide who may start work: `own` is the token's login; `allow` the logins let in by name."""

    own: str
    allow: frozenset[str] = frozenset()

    def why_not(self, author: str, permission: Callable[[str], str]) -> str | None:
        """Say why `author` may not start work (None: they may); ask `permission` only if needed.

        >>> gate = Gate("adws-bot", frozenset({"zed"}))
        >>> gate.why_not("adws-bot", str), gate.why_not("zed", str)
        ('adws-bot is the login of the token adws runs as; its own comments start nothing', None)
        >>> gate.why_not("dependabot[bot]", str)
        'dependabot[bot] is a bot; bots start nothing'
        >>> gate.why_not("ana", lambda _user: "read")
        "ana's permission on the repository is read (write, maintain or admin, or --allow ana)"
        """
        if author.casefold() == self.own.casefold():
            return (
                f"{author} is the login of the token adws runs as; its own comments start nothing"
            )
        if author.endswith("[bot]"):
            return f"{author} is a bot; bots start nothing"
        if author in self.allow:
            return None
        level = permission(author)
        if level in PERMITTED:
            return None
        return (
            f"{author}'s permission on the repository is {level} "
            f"(write, maintain or admin, or --allow {author})"
        )
