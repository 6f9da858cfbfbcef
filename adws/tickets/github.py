"""The GitHub REST client a watcher and a publish step use: the endpoints DESIGN lists, typed.

The base URL is `ADWS_GITHUB_API_URL` (default `https://api.github.com`, so
GitHub Enterprise and `adws.testing.github_api` both work); the token is
`GITHUB_TOKEN`, else `GH_TOKEN`, else what `gh auth token` prints. An
answer that is not JSON, or not the shape GitHub sends, is a `TicketError`
naming what is wrong. 401, 403 and 422 are typed failures, never retried;
a 5xx or a timeout is `GitHubUnavailableError` (the caller decides: a watcher
tries again at its next poll, a pull request is looked up before it is
created again). A 403 or 429 that says the rate limit is spent
(`x-ratelimit-remaining: 0`, or `retry-after`) is waited out, until
`x-ratelimit-reset`, then asked again: the client never hammers an API
that said stop.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any, Final, final
from urllib.parse import quote, urlencode, urlsplit

from adws import io_ops
from adws._exceptions import AdwsError
from adws.tickets.values import TicketError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = [
    "API_VAR",
    "DEFAULT_API",
    "GitHub",
    "GitHubAuthError",
    "GitHubError",
    "GitHubForbiddenError",
    "GitHubInvalidError",
    "GitHubUnavailableError",
    "token_from",
]

API_VAR: Final = "ADWS_GITHUB_API_URL"
DEFAULT_API: Final = "https://api.github.com"
MAX_PAGES: Final = 50
"""Pages followed by `Link: rel="next"` at most (5,000 issues at 100 a page)."""
MAX_WAIT: Final = 3_600.0
"""The longest a rate limit is waited out at once (GitHub's window is an hour)."""
_NEXT: Final = re.compile(r'<([^>]+)>;\s*rel="next"')


class GitHubError(AdwsError, RuntimeError):
    """GitHub answered a request with a failure (`status`: its HTTP status, 0: no answer)."""

    def __init__(self, message: str, status: int) -> None:
        """Keep the status with the message."""
        super().__init__(message)
        self.status = status


class GitHubAuthError(GitHubError):
    """401: the token is not valid (never retried)."""


class GitHubForbiddenError(GitHubError):
    """403: the token may not do this (never retried; a spent rate limit is waited out)."""


class GitHubInvalidError(GitHubError):
    """422: GitHub refused what was sent (a pull request that exists, a branch it cannot find)."""


class GitHubUnavailableError(GitHubError):
    """A 5xx, a timeout or no connection: the request may or may not have been done."""


_TYPED: Final = {401: GitHubAuthError, 403: GitHubForbiddenError, 422: GitHubInvalidError}


def token_from(env: Mapping[str, str]) -> str | None:
    """Find the token: `GITHUB_TOKEN`, `GH_TOKEN`, else `gh auth token` (None: none).

    >>> token_from({"GH_TOKEN": "b", "GITHUB_TOKEN": "a"})
    'a'
    """
    for name in ("GITHUB_TOKEN", "GH_TOKEN"):
        if env.get(name):
            return env[name]
    done = io_ops.run_process(["gh", "auth", "token"], timeout=20)
    text = done.stdout.strip()
    return text if done.returncode == 0 and text else None


def wait_for(headers: Mapping[str, str], now: float) -> float | None:
    """Say how long a 403/429 asks to wait (None: it is not a rate limit).

    >>> wait_for({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "160"}, 100.0)
    61.0
    >>> wait_for({"retry-after": "5"}, 0.0), wait_for({}, 0.0)
    (5.0, None)
    """
    try:
        if headers.get("retry-after"):
            return min(max(float(headers["retry-after"]), 1.0), MAX_WAIT)
        if headers.get("x-ratelimit-remaining") == "0":
            reset = float(headers.get("x-ratelimit-reset") or now + 60.0)
            return min(max(reset - now + 1.0, 1.0), MAX_WAIT)
    except ValueError:
        return 60.0
    return None


@final
class GitHub:
    """Call GitHub's REST API at `base` with `token`; wait out rate limits with `sleep`.

    `said` hears what the client does on its own (a rate limit waited out),
    so a watcher can print it.
    """

    def __init__(  # noqa: PLR0913 - where, who, and how long to wait
        self,
        base: str,
        token: str,
        *,
        timeout: float = 20.0,
        sleep: Callable[[float], None] = io_ops.sleep,
        clock: Callable[[], float] = io_ops.wall_clock,
        said: Callable[[str], None] = lambda _line: None,
    ) -> None:
        """Keep where and how to call; connect nowhere yet."""
        parts = urlsplit(base)
        if parts.scheme not in {"http", "https"} or not parts.netloc:
            msg = f"{API_VAR}: {base!r} is not an http(s) URL"
            raise TicketError(msg)
        self.base = base.rstrip("/")
        self._token = token
        self.timeout = timeout
        self.sleep = sleep
        self.clock = clock
        self.said = said

    def __repr__(self) -> str:
        """Name the API, never the token."""
        return f"GitHub({self.base!r})"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **how: Any) -> GitHub:  # noqa: ANN401 - GitHub's keywords
        """Call the API `ADWS_GITHUB_API_URL` names with the token the environment gives."""
        env = os.environ if env is None else env
        token = token_from(env)
        if token is None:
            msg = "no GitHub token: set GITHUB_TOKEN or GH_TOKEN, or sign in with `gh auth login`"
            raise GitHubAuthError(msg, 401)
        return cls(env.get(API_VAR) or DEFAULT_API, token, **how)

    def call(
        self, method: str, path: str, body: object = None, query: Mapping[str, object] | None = None
    ) -> tuple[Any, Mapping[str, str]]:
        """Make one request (a rate limit waited out); return its JSON and its headers."""
        url = path if path.startswith(self.base) else self.base + path
        if query:
            url += "?" + urlencode({k: str(v) for k, v in query.items()})
        while True:
            try:
                return self._once(method, url, body)
            except _RateLimitedError as limited:
                self.said(
                    f"GitHub's rate limit is spent ({method} {path}: {limited.status}); "
                    f"waiting {limited.seconds:.0f}s for x-ratelimit-reset"
                )
                self.sleep(limited.seconds)

    def _once(self, method: str, url: str, body: object) -> tuple[Any, Mapping[str, str]]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - http(s), checked
        request.add_header("Authorization", f"Bearer {self._token}")
        request.add_header("Accept", "application/vnd.github+json")
        request.add_header("X-GitHub-Api-Version", "2022-11-28")
        request.add_header("User-Agent", "adws")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        where = f"{method} {urlsplit(url).path}"
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:  # noqa: S310 - as above
                raw, headers = answer.read(), {k.lower(): v for k, v in answer.headers.items()}
        except urllib.error.HTTPError as failed:
            headers = {k.lower(): v for k, v in failed.headers.items()}
            raise self._failure(where, failed.code, failed.read(), headers) from None
        except (OSError, TimeoutError) as exc:  # URLError is an OSError; so is a reset
            msg = f"GitHub did not answer {where}: {exc}"
            raise GitHubUnavailableError(msg, 0) from None
        try:
            return json.loads(raw), headers
        except ValueError:
            msg = f"GitHub's answer to {where} is not JSON"
            raise TicketError(msg) from None

    def _failure(
        self, where: str, status: int, raw: bytes, headers: Mapping[str, str]
    ) -> Exception:
        if status in {403, 429}:
            seconds = wait_for(headers, self.clock())
            if seconds is not None:
                return _RateLimitedError(status, seconds)
        try:
            message = str(json.loads(raw).get("message", ""))[:300]
        except (ValueError, AttributeError):
            message = ""
        kind = _TYPED.get(status, GitHubUnavailableError if status >= 500 else GitHubError)  # noqa: PLR2004 - a server's error
        return kind(f"GitHub answered {where} with {status}: {message}".rstrip(": "), status)

    def pages(self, path: str, query: Mapping[str, object]) -> list[Any]:
        """Read every page of a list (`Link: rel="next"`), at most `MAX_PAGES`."""
        found: list[Any] = []
        url: str | None = None
        for _ in range(MAX_PAGES):
            page, headers = self.call("GET", url or path, query=None if url else query)
            if not isinstance(page, list):
                msg = f"GitHub's answer to GET {path} is {type(page).__name__}, not a list"
                raise TicketError(msg)
            found += page
            nxt = _NEXT.search(headers.get("link", ""))
            if nxt is None:
                break
            url = nxt.group(1)
        return found

    # -- the endpoints -------------------------------------------------------------

    def login(self) -> str:
        """Return the login of the token's own user (whose events never start anything)."""
        user, _ = self.call("GET", "/user")
        if not isinstance(user, dict) or not isinstance(user.get("login"), str):
            msg = "GitHub's answer to GET /user has no field 'login'"
            raise TicketError(msg)
        return str(user["login"])

    def permission(self, repo: str, user: str) -> str:
        """Return `user`'s permission on `repo` (`admin`, `write`, ...; `none` if not one)."""
        path = f"/repos/{repo}/collaborators/{quote(user, safe='')}/permission"
        try:
            found, _ = self.call("GET", path)
        except GitHubError as exc:
            if exc.status == 404:  # noqa: PLR2004 - not a collaborator
                return "none"
            raise
        permission = found.get("permission") if isinstance(found, dict) else None
        return permission if isinstance(permission, str) else "none"

    def labelled(self, repo: str, label: str) -> list[Any]:
        """List the open issues (and pull requests) of `repo` labelled `label`."""
        query = {"labels": label, "state": "open", "per_page": 100}
        return self.pages(f"/repos/{repo}/issues", query)

    def comments_since(self, repo: str, since: str, *, review: bool) -> list[Any]:
        """List the comments on `repo`'s issues (or, `review`, pull requests' lines) since then."""
        kind = "pulls" if review else "issues"
        return self.pages(f"/repos/{repo}/{kind}/comments", {"since": since, "per_page": 100})

    def comment(self, repo: str, number: int, body: str) -> int:
        """Comment on issue `number`; return the comment's id."""
        made, _ = self.call("POST", f"/repos/{repo}/issues/{number}/comments", {"body": body})
        return _id(made, "POST comments")

    def edit_comment(self, repo: str, comment_id: int, body: str) -> None:
        """Edit a comment this token made (a run's status comment)."""
        self.call("PATCH", f"/repos/{repo}/issues/comments/{comment_id}", {"body": body})

    def add_labels(self, repo: str, number: int, labels: list[str]) -> None:
        """Add `labels` to issue `number`."""
        self.call("POST", f"/repos/{repo}/issues/{number}/labels", {"labels": labels})

    def remove_label(self, repo: str, number: int, label: str) -> None:
        """Remove `label` from issue `number` (one it does not have is not a failure)."""
        path = f"/repos/{repo}/issues/{number}/labels/{quote(label, safe='')}"
        try:
            self.call("DELETE", path)
        except GitHubError as exc:
            if exc.status != 404:  # noqa: PLR2004 - not there: nothing to remove
                raise

    def pulls(self, repo: str) -> list[Any]:
        """List the open pull requests of `repo`."""
        return self.pages(f"/repos/{repo}/pulls", {"state": "open", "per_page": 100})

    def open_pulls(self, repo: str, head: str) -> list[Any]:
        """List the open pull requests of `repo` whose head is `OWNER:branch`."""
        found, _ = self.call("GET", f"/repos/{repo}/pulls", query={"head": head, "state": "open"})
        if not isinstance(found, list):
            msg = f"GitHub's answer to GET /repos/{repo}/pulls is not a list"
            raise TicketError(msg)
        return found

    def create_pull(self, repo: str, fields: Mapping[str, object]) -> Any:  # noqa: ANN401 - GitHub's JSON
        """Open a pull request; return it."""
        made, _ = self.call("POST", f"/repos/{repo}/pulls", dict(fields))
        return made

    def reply(self, repo: str, number: int, comment_id: int, body: str) -> None:
        """Reply to review comment `comment_id` on pull request `number`."""
        path = f"/repos/{repo}/pulls/{number}/comments/{comment_id}/replies"
        self.call("POST", path, {"body": body})


class _RateLimitedError(AdwsError):
    """A 403/429 that asks to wait `seconds` before asking again."""

    def __init__(self, status: int, seconds: float) -> None:
        super().__init__(status, seconds)
        self.status = status
        self.seconds = seconds


def _id(made: object, where: str) -> int:
    """Return the `id` GitHub gave what it made, or raise `TicketError`."""
    found = made.get("id") if isinstance(made, dict) else None
    if not isinstance(found, int) or isinstance(found, bool):
        msg = f"GitHub's answer to {where} has no integer field 'id'"
        raise TicketError(msg)
    return found
