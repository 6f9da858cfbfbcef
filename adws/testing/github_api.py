"""A stateful fake of the GitHub REST endpoints adws calls, on 127.0.0.1, for tests and users.

    with FakeGitHub() as github:
        github.add_repo("octo/app", permissions={"ana": "write"})
        github.add_issue("octo/app", "Crash on empty input", "Steps...", author="ana",
                         labels=("adws",))
        env = {"ADWS_GITHUB_API_URL": github.url, "GITHUB_TOKEN": github.token}

It serves the endpoints DESIGN's "Work that arrives as tickets" lists
(the token's user, a repository, issues by label with `Link: rel="next"`
pages, issue and review comments since a time, permissions, comments
created and edited, labels added and removed, pull requests looked up by
head, created, and replied to), plus what a person does (open an issue,
comment on an issue or a line of a pull request), each authenticated by a
token (`tokens`: token to login). Pull requests are issues too, as on
GitHub. Every request is recorded (`requests`: method, path, query, the
login that made it); `fail` injects answers (a 502, a 403 with a rate
limit, a permission's 403) and `delay` a slow answer, each for the next
`times` requests that match. `state` is plain JSON; with `--state FILE`
the program reads it from FILE at start and writes it back after every
change, so another process reads what happened.
"""

from __future__ import annotations

import json
import re
import threading
import time
from typing import TYPE_CHECKING, Any, Final, TypeAlias, final
from urllib.parse import parse_qs, unquote, urlsplit

from adws.testing._server import LocalServer, QuietHandler, serving, until_signalled

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

__all__ = ["FAKE_TOKEN", "FakeGitHub", "main"]

FAKE_TOKEN: Final = "ghp_adwsFakeTokenNeverReal0123456789"  # noqa: S105 - a fake's, no secret
"""The token of the bot a watcher runs as (`adws-bot`), unless the state says otherwise."""
BOT: Final = "adws-bot"
_PAGE: Final = 30


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def empty_state() -> dict[str, Any]:
    """Return the state of a fake with no repository: the bot's token only."""
    return {"tokens": {FAKE_TOKEN: BOT}, "repos": {}, "next_id": 1, "faults": []}


@final
class FakeGitHub(LocalServer):
    """Serve the fake on 127.0.0.1 (an ephemeral port, unless given) until closed."""

    def __init__(
        self, port: int = 0, state: Mapping[str, Any] | None = None, save: Path | None = None
    ) -> None:
        """Bind `port`, start from `state` (default: empty), writing it to `save` on changes."""
        self.lock = threading.RLock()
        self.state: dict[str, Any] = json.loads(json.dumps(state or empty_state()))
        self.requests: list[dict[str, Any]] = []
        """Every request: `method`, `path`, `query`, `login` (None: no valid token)."""
        self.save = save
        super().__init__(_Handler, port)

    @property
    def token(self) -> str:
        """Return the bot's token (the first token the state names)."""
        return str(next(iter(self.state["tokens"])))

    # -- arranging a test ----------------------------------------------------------

    def add_repo(self, repo: str, permissions: Mapping[str, str] | None = None) -> None:
        """Create `repo` (default branch `main`) with collaborators' permissions (login: level)."""
        with self.lock:
            self.state["repos"][repo] = {
                "default_branch": "main",
                "issues": [],
                "comments": [],
                "review_comments": [],
                "permissions": dict(permissions or {}),
            }
            self._saved()

    def add_token(self, token: str, login: str) -> None:
        """Let `token` sign in as `login` (a person who opens issues and comments)."""
        with self.lock:
            self.state["tokens"][token] = login
            self._saved()

    def add_issue(
        self, repo: str, title: str, body: str | None, *, author: str, labels: Sequence[str] = ()
    ) -> dict[str, Any]:
        """Open an issue as `author`; return it."""
        with self.lock:
            return self.open_issue(repo, author, {"title": title, "body": body, "labels": labels})

    def add_review_comment(  # noqa: PLR0913 - a review comment is all of these
        self, repo: str, number: int, body: str, *, author: str, path: str, line: int
    ) -> dict[str, Any]:
        """Comment as `author` on `line` of `path` in pull request `number`; return the comment."""
        with self.lock:
            return self.review_comment(
                repo, number, author, {"body": body, "path": path, "line": line}
            )

    def fail(  # noqa: PLR0913 - which requests, and how they are answered
        self,
        method: str,
        path: str,
        status: int,
        *,
        times: int = 1,
        headers: Mapping[str, str] | None = None,
        body: object = None,
        raw: bool = False,
        lost: bool = False,
    ) -> None:
        """Answer the next `times` requests `method path...` with `status` (and `headers`).

        `body` is sent as JSON (default: an injected message), or, `raw`, as the text it is.
        `lost`: the request is done first, then its answer replaced (a 502 after the fact).
        """
        fault = {"method": method, "path": path, "status": status, "times": times, "raw": raw}
        fault["lost"] = lost
        with self.lock:
            self.state["faults"].append(
                {**fault, "headers": dict(headers or {}), "body": body, "delay": 0}
            )

    def delay(self, method: str, path: str, seconds: float, *, times: int = 1) -> None:
        """Answer the next `times` requests `method path...` only after `seconds` (a timeout)."""
        fault = {"method": method, "path": path, "status": 0, "times": times, "delay": seconds}
        with self.lock:
            self.state["faults"].append({**fault, "headers": {}, "body": None})

    def count(self, method: str, path: str) -> int:
        """Count the requests made with `method` whose path starts with `path`."""
        with self.lock:
            return sum(
                1 for r in self.requests if r["method"] == method and r["path"].startswith(path)
            )

    def issue(self, repo: str, number: int) -> dict[str, Any]:
        """Return issue (or pull request) `number` of `repo` as the fake holds it."""
        with self.lock:
            return next(i for i in self.state["repos"][repo]["issues"] if i["number"] == number)

    def comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        """Return the comments on issue (or pull request) `number`, oldest first."""
        url = f"/repos/{repo}/issues/{number}"
        with self.lock:
            return [c for c in self.state["repos"][repo]["comments"] if c["issue_url"] == url]

    # -- what the handler calls (under the lock) -----------------------------------

    def _saved(self) -> None:
        if self.save is not None:
            self.save.write_text(json.dumps(self.state, indent=1))

    def next_id(self) -> int:
        """Return a new id for a comment (unique across the fake)."""
        found = int(self.state["next_id"])
        self.state["next_id"] = found + 1
        return found

    def open_issue(self, repo: str, author: str, data: Mapping[str, Any]) -> dict[str, Any]:
        """Open an issue (or, with `head`, a pull request) as `author`; return it."""
        issues = self.state["repos"][repo]["issues"]
        number = len(issues) + 1
        kind = "pull" if "head" in data else "issues"
        issue: dict[str, Any] = {
            "number": number,
            "title": str(data.get("title", "")),
            "body": data.get("body"),
            "state": "open",
            "labels": [{"name": str(name)} for name in data.get("labels") or ()],
            "user": {"login": author},
            "html_url": f"https://github.example/{repo}/{kind}/{number}",
            "created_at": _now(),
            "updated_at": _now(),
        }
        if kind == "pull":
            issue["pull_request"] = {"url": f"/repos/{repo}/pulls/{number}"}
            owner = repo.split("/", maxsplit=1)[0]
            issue["head"] = {"ref": data["head"], "label": f"{owner}:{data['head']}"}
            issue["base"] = {"ref": data.get("base", "main")}
            issue["draft"] = bool(data.get("draft", False))
        issues.append(issue)
        self._saved()
        return issue

    def comment(self, repo: str, number: int, author: str, body: str) -> dict[str, Any]:
        """Comment on issue (or pull request) `number` as `author`; return the comment."""
        where = {
            "body": body,
            "issue_url": f"/repos/{repo}/issues/{number}",
            "html_url": f"https://github.example/{repo}/issues/{number}#comment",
        }
        return self._kept(repo, "comments", author, where)

    def _kept(
        self, repo: str, kind: str, author: str, fields: Mapping[str, object]
    ) -> dict[str, Any]:
        """Keep a new comment of `kind` (`comments`, `review_comments`) by `author`; return it."""
        found = {"id": self.next_id(), **fields, "user": {"login": author}}
        found["created_at"] = found["updated_at"] = _now()
        self.state["repos"][repo][kind].append(found)
        self._saved()
        return found

    def review_comment(
        self, repo: str, number: int, author: str, data: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Comment on a line of pull request `number` (or reply, `in_reply_to`); return it."""
        where = {
            "body": str(data.get("body", "")),
            "path": data.get("path"),
            "line": data.get("line"),
            "in_reply_to_id": data.get("in_reply_to"),
            "pull_request_url": f"/repos/{repo}/pulls/{number}",
            "html_url": f"https://github.example/{repo}/pull/{number}#discussion",
        }
        return self._kept(repo, "review_comments", author, where)

    def fault_for(self, method: str, path: str) -> dict[str, Any] | None:
        """Take the first injected fault that matches this request (one of its `times`)."""
        for fault in self.state["faults"]:
            if fault["method"] == method and path.startswith(fault["path"]) and fault["times"] > 0:
                fault["times"] -= 1
                return dict(fault)
        return None


_Answer: TypeAlias = tuple[int, object, dict[str, str]]
_Json: TypeAlias = dict[str, Any]
_Match: TypeAlias = dict[str, str]
_Query: TypeAlias = dict[str, str]
_REPO: Final = r"/repos/(?P<repo>[^/]+/[^/]+)"
_ROUTES: Final = (
    ("GET", r"/user", "get_user"),
    ("GET", _REPO, "get_repo"),
    ("GET", _REPO + r"/issues", "get_issues"),
    ("POST", _REPO + r"/issues", "post_issues"),
    ("GET", _REPO + r"/issues/comments", "get_comments"),
    ("GET", _REPO + r"/pulls/comments", "get_pull_comments"),
    ("GET", _REPO + r"/collaborators/(?P<user>[^/]+)/permission", "get_permission"),
    ("POST", _REPO + r"/issues/(?P<number>\d+)/comments", "post_comment"),
    ("PATCH", _REPO + r"/issues/comments/(?P<id>\d+)", "patch_comment"),
    ("POST", _REPO + r"/issues/(?P<number>\d+)/labels", "post_labels"),
    ("DELETE", _REPO + r"/issues/(?P<number>\d+)/labels/(?P<name>[^/]+)", "delete_label"),
    ("GET", _REPO + r"/pulls", "get_pulls"),
    ("POST", _REPO + r"/pulls", "post_pulls"),
    ("POST", _REPO + r"/pulls/(?P<number>\d+)/comments", "post_review_comment"),
    ("POST", _REPO + r"/pulls/(?P<number>\d+)/comments/(?P<id>\d+)/replies", "post_reply"),
)
"""Each endpoint: its method, its path, and the handler's method that answers it."""


def _not_found(path: str) -> _Answer:
    return 404, {"message": "Not Found", "path": path}, {}


class _Handler(QuietHandler):
    """Answer one request from the fake's state."""

    server_version = "adws-fake-github/1"

    @property
    def github(self) -> FakeGitHub:
        return self.server.owner  # type: ignore[attr-defined, no-any-return] # set by LocalServer

    def do_GET(self) -> None:  # noqa: N802 - BaseHTTPRequestHandler names it
        """Answer a read."""
        self._answer("GET")

    def do_POST(self) -> None:  # noqa: N802 - BaseHTTPRequestHandler names it
        """Answer a creation."""
        self._answer("POST")

    def do_PATCH(self) -> None:  # noqa: N802 - BaseHTTPRequestHandler names it
        """Answer an edit."""
        self._answer("PATCH")

    def do_DELETE(self) -> None:  # noqa: N802 - BaseHTTPRequestHandler names it
        """Answer a removal."""
        self._answer("DELETE")

    def _answer(self, method: str) -> None:
        parts = urlsplit(self.path)
        path, query = unquote(parts.path), {k: v[-1] for k, v in parse_qs(parts.query).items()}
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        github = self.github
        token = (self.headers.get("authorization") or "").removeprefix("Bearer ").strip()
        with github.lock:
            login = github.state["tokens"].get(token)
            github.requests.append({"method": method, "path": path, "query": query, "login": login})
            fault = github.fault_for(method, path)
        if fault is not None and fault["delay"]:
            if github.closing.wait(fault["delay"]):
                return
            fault = None
        if fault is not None and not fault.get("lost"):
            body = fault["body"] or {"message": "injected"}
            data = str(body).encode() if fault.get("raw") else json.dumps(body).encode()
            self._send(fault["status"], data, fault["headers"])
            return
        if login is None:
            self._send(401, b'{"message": "Bad credentials"}', {})
            return
        try:
            data = json.loads(raw or b"{}")
        except ValueError:
            self._send(400, b'{"message": "Problems parsing JSON"}', {})
            return
        with github.lock:
            status, payload, headers = self._route(method, path, query, login, data)
        if fault is not None:  # lost: done, and answered as if not
            status, payload, headers = fault["status"], {"message": "injected"}, {}
        self._send(status, json.dumps(payload).encode(), headers)

    def _send(self, status: int, data: bytes, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _route(
        self, method: str, path: str, query: Mapping[str, str], login: str, data: _Json
    ) -> _Answer:
        for verb, pattern, name in _ROUTES:
            matched = re.fullmatch(pattern, path) if verb == method else None
            if matched is None:
                continue
            found = matched.groupdict()
            repo = self.github.state["repos"].get(found.get("repo"))
            if "repo" in found and repo is None:
                return _not_found(path)
            answer: _Answer = getattr(self, "_" + name)(found, repo, query, login, data)
            return answer
        return _not_found(path)

    # -- the endpoints: (match, repo, query, login, data) -> (status, payload, headers)

    def _get_user(self, _m: _Match, _r: _Json, _q: _Query, login: str, _d: _Json) -> _Answer:
        return 200, {"login": login, "type": "Bot" if login.endswith("[bot]") else "User"}, {}

    def _get_repo(self, m: _Match, r: _Json, _q: _Query, _l: str, _d: _Json) -> _Answer:
        return 200, {"full_name": m["repo"], "default_branch": r["default_branch"]}, {}

    def _get_issues(self, m: _Match, r: _Json, q: _Query, _l: str, _d: _Json) -> _Answer:
        wanted = {name for name in q.get("labels", "").split(",") if name}
        state = q.get("state", "open")
        listed = [
            issue
            for issue in r["issues"]
            if (state == "all" or issue["state"] == state)
            and wanted <= {label["name"] for label in issue["labels"]}
        ]
        per_page = min(int(q.get("per_page", _PAGE)), 100)
        page = int(q.get("page", "1"))
        chunk = listed[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(listed):
            nxt = f"{self.github.url}/repos/{m['repo']}/issues?labels={q.get('labels', '')}"
            headers["link"] = (
                f'<{nxt}&state={state}&per_page={per_page}&page={page + 1}>; rel="next"'
            )
        return 200, chunk, headers

    def _post_issues(self, m: _Match, _r: _Json, _q: _Query, login: str, d: _Json) -> _Answer:
        return 201, self.github.open_issue(m["repo"], login, d), {}

    def _get_comments(self, _m: _Match, r: _Json, q: _Query, _l: str, _d: _Json) -> _Answer:
        since = q.get("since", "")
        return 200, [c for c in r["comments"] if c["updated_at"] >= since], {}

    def _get_pull_comments(self, _m: _Match, r: _Json, q: _Query, _l: str, _d: _Json) -> _Answer:
        since = q.get("since", "")
        return 200, [c for c in r["review_comments"] if c["updated_at"] >= since], {}

    def _get_permission(self, m: _Match, r: _Json, _q: _Query, _l: str, _d: _Json) -> _Answer:
        permission = r["permissions"].get(m["user"])
        if permission is None:
            return 404, {"message": f"{m['user']} is not a user"}, {}
        return 200, {"permission": permission, "user": {"login": m["user"]}}, {}

    def _post_comment(self, m: _Match, _r: _Json, _q: _Query, login: str, d: _Json) -> _Answer:
        if not self._exists(m):
            return _not_found(m["repo"])
        return 201, self.github.comment(m["repo"], int(m["number"]), login, str(d.get("body"))), {}

    def _patch_comment(self, m: _Match, r: _Json, _q: _Query, _l: str, d: _Json) -> _Answer:
        for found in r["comments"]:
            if found["id"] == int(m["id"]):
                found["body"], found["updated_at"] = str(d.get("body")), _now()
                self.github._saved()  # noqa: SLF001 - the fake's own
                return 200, found, {}
        return _not_found(m["id"])

    def _post_labels(self, m: _Match, _r: _Json, _q: _Query, _l: str, d: _Json) -> _Answer:
        if not self._exists(m):
            return _not_found(m["repo"])
        issue = self.github.issue(m["repo"], int(m["number"]))
        names = [label["name"] for label in issue["labels"]]
        issue["labels"] += [{"name": str(n)} for n in d.get("labels", []) if n not in names]
        self.github._saved()  # noqa: SLF001 - the fake's own
        return 200, issue["labels"], {}

    def _delete_label(self, m: _Match, _r: _Json, _q: _Query, _l: str, _d: _Json) -> _Answer:
        if not self._exists(m):
            return _not_found(m["repo"])
        issue = self.github.issue(m["repo"], int(m["number"]))
        kept = [label for label in issue["labels"] if label["name"] != m["name"]]
        if len(kept) == len(issue["labels"]):
            return 404, {"message": "Label does not exist"}, {}
        issue["labels"] = kept
        self.github._saved()  # noqa: SLF001 - the fake's own
        return 200, kept, {}

    def _get_pulls(self, _m: _Match, r: _Json, q: _Query, _l: str, _d: _Json) -> _Answer:
        head, state = q.get("head"), q.get("state", "open")
        return (
            200,
            [
                _pull(issue)
                for issue in r["issues"]
                if "head" in issue
                and (head is None or issue["head"]["label"] == head)
                and (state == "all" or issue["state"] == state)
            ],
            {},
        )

    def _post_pulls(self, m: _Match, r: _Json, _q: _Query, login: str, d: _Json) -> _Answer:
        head = str(d.get("head", ""))
        if not head or not d.get("title"):
            return 422, {"message": "Validation Failed", "errors": [{"field": "head"}]}, {}
        label = head if ":" in head else f"{m['repo'].split('/')[0]}:{head}"
        if any(
            i.get("head", {}).get("label") == label and i["state"] == "open" for i in r["issues"]
        ):
            return 422, {"message": f"A pull request already exists for {label}."}, {}
        made = self.github.open_issue(m["repo"], login, {**d, "head": label.partition(":")[2]})
        return 201, _pull(made), {}

    def _post_review_comment(
        self, m: _Match, _r: _Json, _q: _Query, login: str, d: _Json
    ) -> _Answer:
        if not self._exists(m):
            return _not_found(m["repo"])
        return 201, self.github.review_comment(m["repo"], int(m["number"]), login, d), {}

    def _post_reply(self, m: _Match, r: _Json, _q: _Query, login: str, d: _Json) -> _Answer:
        if not any(c["id"] == int(m["id"]) for c in r["review_comments"]):
            return _not_found(m["id"])
        data = {"body": d.get("body"), "in_reply_to": int(m["id"])}
        return 201, self.github.review_comment(m["repo"], int(m["number"]), login, data), {}

    def _exists(self, m: Mapping[str, str]) -> bool:
        issues = self.github.state["repos"][m["repo"]]["issues"]
        return any(issue["number"] == int(m["number"]) for issue in issues)


def _pull(issue: Mapping[str, Any]) -> dict[str, Any]:
    """Return an issue that is a pull request as `/pulls` shows it."""
    keys = ("number", "title", "body", "state", "user", "html_url", "head", "base", "draft")
    return {key: issue[key] for key in keys}


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the fake until SIGTERM or Ctrl-C: `python -m adws.testing.github_api`.

    `--state FILE` starts from the JSON in FILE (when it exists) and writes
    the state back after every change; `--port` picks the port (default:
    any free one). The first line on stdout is the base URL, then the
    bot's token, so a script reads both before it goes on.
    """
    import argparse  # noqa: PLC0415 - only the command line needs it
    import sys  # noqa: PLC0415 - as above
    from pathlib import Path  # noqa: PLC0415 - as above

    parser = argparse.ArgumentParser(prog="python -m adws.testing.github_api")
    parser.add_argument("--port", type=int, default=0, help="the port (default: any free one)")
    parser.add_argument("--state", metavar="FILE", help="read the state here, and write it back")
    args = parser.parse_args(argv)
    save = None if args.state is None else Path(args.state)
    state = None
    if save is not None and save.exists():
        try:
            state = json.loads(save.read_text())
        except ValueError as exc:
            parser.exit(2, f"adws.testing.github_api: {save}: not JSON: {exc}\n")
    github = serving(
        "adws.testing.github_api", args.port, lambda: FakeGitHub(args.port, state, save)
    )
    with github:
        stop = until_signalled()
        github._saved()  # noqa: SLF001 - the fake's own: the file exists once it serves
        sys.stdout.write(f"{github.url}\n{github.token}\n")
        sys.stdout.flush()
        stop.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
