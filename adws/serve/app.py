r"""The Starlette application of `adws serve`: its routes, and the rules every request meets.

Before any route: a query string longer than `MOST_QUERY` characters is
414, a body longer than `MOST_BODY` bytes 413, a path with a `..`, `\\`,
`%` or a control character in it 400, a `Host` this server is not 400,
and every answer carries the headers that keep a page to itself (its
`Content-Security-Policy` allows scripts, styles and connections from
this site only; no framing; no sniffing; nothing cached).

A page without a session shows nothing but the way to the login page
(303); an event stream without one is 401. A change (`POST`) needs the
session, an `Origin` (else `Referer`) of this site and a form token it was
given and not yet used: else 403, and nothing changes. Run ids are the
journal's (hex, 4 to 64 characters); anything else is 404.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import TYPE_CHECKING, Final
from urllib.parse import parse_qs, quote

from anyio import to_thread
from starlette.applications import Starlette
from starlette.responses import (
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from adws.render._page import STYLE
from adws.render.words import RUN_WORDS
from adws.serve import pages, reading
from adws.serve.access import same_site, valid_name
from adws.serve.deciding import Decided, decide
from adws.serve.live import Poller

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

    from starlette.requests import Request
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from adws.journal import Journal
    from adws.serve.access import Sessions

__all__ = ["COOKIE", "MOST_BODY", "MOST_QUERY", "POLICY", "build_app"]

COOKIE: Final = "adws_session"
MOST_QUERY: Final = 2_048
"""Characters of a query string at most (the filters need far fewer)."""
MOST_BODY: Final = 16_384
"""Bytes of a form at most (a note or a reason is a few lines)."""
_MOST_FILTER: Final = 200
"""Characters of a workflow's or a ticket's name in a filter at most."""
_MOST_FIELD: Final = 4_000
"""Characters of a note, a reason or a filter at most."""
POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""Only this site's own script, stylesheet and connections; forms post only here."""
_HEADERS: Final = (
    (b"content-security-policy", POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)
_RUN_ID: Final = re.compile(r"[0-9a-f]{4,64}")
_BAD_PATH: Final = re.compile(r"(^|/)\.\.?(/|$)|[\\%\x00-\x1f\x7f]")
_STATIC: Final = {
    "serve.css": ("text/css", STYLE + pages.SERVE_STYLE),
    "serve.js": ("text/javascript", pages.SCRIPT),
}


def _plain(status: int, text: str) -> PlainTextResponse:
    return PlainTextResponse(text + "\n", status_code=status)


class _Guard:
    """The rules every request meets before a route sees it (see the module's docstring)."""

    def __init__(self, app: ASGIApp, hosts: Collection[str] | None) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = self._refused(scope)

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_HEADERS]
            await send(message)

        if refused is not None:
            await refused(scope, receive, secured)
            return
        await self.app(scope, receive, secured)

    def _refused(self, scope: Scope) -> Response | None:
        raw = scope.get("raw_path") or scope["path"].encode()
        path = raw.decode("latin-1").partition("?")[0]
        if len(scope.get("query_string", b"")) > MOST_QUERY:
            return _plain(414, f"a query string holds at most {MOST_QUERY:,} characters")
        if _BAD_PATH.search(path) or _BAD_PATH.search(scope["path"]):
            return _plain(400, "no such path here")
        headers = dict(scope["headers"])
        host = headers.get(b"host", b"").decode("latin-1")
        if self.hosts is not None and _hostname(host) not in self.hosts:
            return _plain(400, f"this server is not {host!r}")
        length = headers.get(b"content-length", b"0")
        if not length.isdigit() or int(length) > MOST_BODY:
            return _plain(413, f"a form holds at most {MOST_BODY:,} bytes")
        return None


def _hostname(host: str) -> str:
    """Return the name in a `Host` header, without its port (an IPv6 address without brackets).

    >>> _hostname("127.0.0.1:8765"), _hostname("[::1]:80"), _hostname("box")
    ('127.0.0.1', '::1', 'box')
    """
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if ":" in host else host


def _fields(body: bytes) -> dict[str, str] | Response:
    """Read a form's fields, each given once and short; else answer 400."""
    try:
        fields = parse_qs(body.decode("utf-8"), max_num_fields=8, errors="strict")
    except (UnicodeDecodeError, ValueError):
        return _plain(400, "the form cannot be read")
    values = {key: found[0] for key, found in fields.items() if len(found) == 1}
    if len(values) != len(fields) or any(len(v) > _MOST_FIELD for v in values.values()):
        return _plain(400, f"each field once, of at most {_MOST_FIELD:,} characters")
    return values


def build_app(  # noqa: C901, PLR0913, PLR0915 - the routes share the journal, the sessions and the checks
    journal: Journal,
    sessions: Sessions,
    *,
    scheme: str = "http",
    hosts: Collection[str] | None = None,
    interval: float = 0.5,
    today: Callable[[], dt.date] = lambda: dt.datetime.now(dt.UTC).date(),
) -> ASGIApp:
    """Build the application over an open journal: the pages, the changes, the event stream.

    `hosts` are the names it answers to (None: any); `interval` is how
    often the journal is read while event streams are open.
    """
    poller = Poller(lambda: reading.stamp(journal), interval)

    def session(request: Request) -> tuple[str | None, str | None]:
        cookie = request.cookies.get(COOKIE)
        return cookie, sessions.who(cookie)

    def shown(
        request: Request, title: str, body: str, status: int = 200, *, live: bool = True
    ) -> Response:
        cookie, who = session(request)
        html = pages.document(title, body, who, lambda: sessions.form(cookie), live=live)
        return HTMLResponse(html, status_code=status)

    def signed_in(request: Request) -> bool:
        return session(request)[1] is not None

    async def form(request: Request, cookie: str | None) -> dict[str, str] | Response:
        """Read a change's form, or answer why it is refused (nothing changed)."""
        site = f"{scheme}://{request.headers.get('host', '')}"
        if not same_site(request.headers.get("origin"), request.headers.get("referer"), site):
            return _plain(403, "refused: this change comes from another site")
        if request.headers.get("content-type", "").split(";")[0] != (
            "application/x-www-form-urlencoded"
        ):
            return _plain(415, "a change is a form (application/x-www-form-urlencoded)")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MOST_BODY:
                return _plain(413, f"a form holds at most {MOST_BODY:,} bytes")
        values = _fields(body)
        if isinstance(values, Response):
            return values
        if not sessions.spend(cookie, values.get("csrf", "")):
            return _plain(403, "refused: this form's token is not one this page gave, or was used")
        return values

    async def login_get(_request: Request) -> Response:
        return HTMLResponse(pages.login_page(sessions.form(None)))

    async def login_post(request: Request) -> Response:
        values = await form(request, None)
        if isinstance(values, Response):
            return values
        name = valid_name(values.get("name", ""))
        if name is None:
            said = "give your name: 1 to 64 characters, printable"
            return HTMLResponse(pages.login_page(sessions.form(None), said), status_code=400)
        made = sessions.login(values.get("token", ""), name)
        if made is None:
            said = "that is not this server's token"
            return HTMLResponse(pages.login_page(sessions.form(None), said), status_code=403)
        answer = RedirectResponse("/", status_code=303)
        answer.set_cookie(
            COOKIE, made, httponly=True, samesite="strict", secure=scheme == "https", path="/"
        )
        return answer

    async def logout(request: Request) -> Response:
        cookie, who = session(request)
        if who is None:
            return _plain(403, "refused: not signed in")
        values = await form(request, cookie)
        if isinstance(values, Response):
            return values
        sessions.logout(cookie or "")
        answer = RedirectResponse("/login", status_code=303)
        answer.delete_cookie(COOKIE, path="/")
        return answer

    def runs_get(request: Request) -> Response:
        if not signed_in(request):
            return RedirectResponse("/login", status_code=303)
        query = request.query_params
        status = query.get("status") or None
        workflow = query.get("workflow") or None
        ticket = query.get("ticket") or None
        if status is not None and status not in RUN_WORDS:
            return _plain(400, f"no status {status[:40]!r}; one of {', '.join(sorted(RUN_WORDS))}")
        if any(len(value or "") > _MOST_FILTER for value in (workflow, ticket)):
            return _plain(400, f"a workflow or a ticket is at most {_MOST_FILTER} characters")
        found = reading.runs_of(journal, status=status, workflow=workflow, ticket=ticket)
        return shown(request, "adws · runs", pages.runs_page(found, (status, workflow, ticket)))

    def run_get(request: Request) -> Response:
        if not signed_in(request):
            return RedirectResponse("/login", status_code=303)
        run_id = request.path_params["run_id"]
        view = reading.view_of(journal, run_id) if _RUN_ID.fullmatch(run_id) else None
        if view is None:
            return _plain(404, "no such run")
        cookie = request.cookies.get(COOKIE)
        budget = reading.asks_budget(view.record)
        title, body = pages.run_page(view, lambda: sessions.form(cookie), budget=budget)
        return shown(request, title, body)

    async def change(request: Request) -> Response:
        cookie, who = session(request)
        if who is None:
            return _plain(403, "refused: not signed in")
        run_id, action = request.path_params["run_id"], request.path_params["action"]
        if not _RUN_ID.fullmatch(run_id) or action not in {"approve", "reject", "cancel"}:
            return _plain(404, "no such run or action")
        values = await form(request, cookie)
        if isinstance(values, Response):
            return values
        max_cost = None
        if values.get("max_cost"):
            try:
                max_cost = float(values["max_cost"])
            except ValueError:
                max_cost = math.nan
            if not math.isfinite(max_cost) or max_cost <= 0:
                return _plain(400, "a budget is a positive number of dollars")
        text = values.get("note" if action == "approve" else "reason", "")
        if action == "reject" and not text.strip():
            return _plain(400, "a rejection says why (reason)")
        done: Decided = await to_thread.run_sync(
            lambda: decide(journal.path, action, run_id, who, text=text, max_cost=max_cost)
        )
        back = f"/runs/{quote(run_id)}"
        said = done.said or f"{action}: done"
        body = pages.said_page(f"{action} {run_id}", said, refused=done.refused, back=back)
        return shown(request, f"adws · {action}", body, 409 if done.refused else 200, live=False)

    def approvals_get(request: Request) -> Response:
        if not signed_in(request):
            return RedirectResponse("/login", status_code=303)
        cookie = request.cookies.get(COOKIE)
        body = pages.approvals_page(reading.waiting_runs(journal), lambda: sessions.form(cookie))
        return shown(request, "adws · approvals", body)

    def cost_get(request: Request) -> Response:
        if not signed_in(request):
            return RedirectResponse("/login", status_code=303)
        return shown(request, "adws · cost", pages.cost_page(reading.spend(journal, today())))

    def workers_get(request: Request) -> Response:
        if not signed_in(request):
            return RedirectResponse("/login", status_code=303)
        return shown(request, "adws · workers", pages.workers_page(reading.live_workers(journal)))

    def caps_get(request: Request) -> Response:
        if not signed_in(request):
            return RedirectResponse("/login", status_code=303)
        return shown(request, "adws · caps", pages.caps_page(reading.cap_states(journal)))

    async def events(request: Request) -> Response:
        if not signed_in(request):
            return _plain(401, "not signed in")
        if poller.full():
            return _plain(503, "too many live pages open; try again")
        return StreamingResponse(poller.stream(), media_type="text/event-stream")

    async def no_icon(_request: Request) -> Response:
        return Response(status_code=204)

    async def static(request: Request) -> Response:
        found = _STATIC.get(request.path_params["name"])
        if found is None:
            return _plain(404, "no such file")
        kind, text = found
        return Response(text, media_type=kind)

    routes = [
        Route("/login", login_get, methods=["GET"]),
        Route("/login", login_post, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/", runs_get, methods=["GET"]),
        Route("/runs/{run_id}", run_get, methods=["GET"]),
        Route("/runs/{run_id}/{action}", change, methods=["POST"]),
        Route("/approvals", approvals_get, methods=["GET"]),
        Route("/cost", cost_get, methods=["GET"]),
        Route("/workers", workers_get, methods=["GET"]),
        Route("/caps", caps_get, methods=["GET"]),
        Route("/events", events, methods=["GET"]),
        Route("/static/{name}", static, methods=["GET"]),
        Route("/favicon.ico", no_icon, methods=["GET"]),
    ]
    return _Guard(Starlette(routes=routes), hosts)
