"""Where `adws serve` listens, who may reach it, and the uvicorn server that runs the app.

Loopback by default (`127.0.0.1`, `::1`, `localhost`): the pages hold
what agents wrote and the decisions change runs. Another host is refused
unless the server speaks TLS (`--tls-cert` and `--tls-key`) or the person
says plainly that it may not (`--insecure-http`: a session cookie then
crosses the network in clear). A server on loopback answers only to the
loopback names in `Host` (a page of another site renamed to 127.0.0.1,
DNS rebinding, reaches nothing).
"""

from __future__ import annotations

import contextlib
import ipaddress
from typing import TYPE_CHECKING, Final, final

import attrs
import uvicorn

from adws.serve.access import Sessions, read_or_make_token
from adws.serve.app import build_app

if TYPE_CHECKING:
    from collections.abc import Callable

    from adws.journal import Journal
    from adws.runs import Runs

__all__ = ["LOOPBACK", "Listening", "is_loopback", "listening", "serve"]

LOOPBACK: Final = frozenset({"127.0.0.1", "::1", "localhost"})
"""The names a server on loopback answers to."""


def is_loopback(host: str) -> bool:
    """Tell whether `host` is this machine only.

    >>> is_loopback("127.0.0.2"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, False)
    >>> is_loopback("box.example")
    False
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@final
@attrs.frozen
class Listening:
    """Where the server listens and how: host, port, TLS files (both, or neither)."""

    host: str
    port: int
    tls: tuple[str, str] | None = None

    @property
    def scheme(self) -> str:
        """Return `https` with TLS, else `http`."""
        return "http" if self.tls is None else "https"

    @property
    def url(self) -> str:
        """Return the address a person opens."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}/"


def listening(
    host: str,
    port: int,
    tls: tuple[str | None, str | None],
    *,
    insecure_http: bool,
) -> Listening | str:
    """Check where to listen; else say what is missing."""
    cert, key = tls
    if (cert is None) != (key is None):
        return "--tls-cert and --tls-key go together: give both, or neither"
    if not 0 < port < 65_536:  # noqa: PLR2004 - the ports TCP has
        return f"--port {port} is not a TCP port (1 to 65535)"
    if cert is None and not insecure_http and not is_loopback(host):
        return (
            f"--host {host} is reachable from other machines: give --tls-cert and --tls-key, "
            "or --insecure-http to send the session in clear"
        )
    return Listening(host, port, None if cert is None or key is None else (cert, key))


def serve(runs: Runs, journal: Journal, where: Listening, say: Callable[[str], None]) -> str | None:
    """Make (or read) the token, say how to log in, and serve until Ctrl-C; else say why not."""
    found = read_or_make_token(runs.home)
    if isinstance(found, str):
        return found
    path, token, made = found
    say(
        f"adws serve: {where.url} over the journal {journal.path}; log in at {where.url}login "
        f"with the token in {path}{' (made now, mode 0600)' if made else ''}"
    )
    hosts = (LOOPBACK | {where.host}) if is_loopback(where.host) else None
    app = build_app(journal, Sessions(token), scheme=where.scheme, hosts=hosts)
    cert, key = where.tls or (None, None)
    config = uvicorn.Config(
        app,
        host=where.host,
        port=where.port,
        ssl_certfile=cert,
        ssl_keyfile=key,
        log_level="warning",
        access_log=False,
        lifespan="off",
    )
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends the server: exit 0
        uvicorn.Server(config).run()
    return None
