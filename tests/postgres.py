"""A real PostgreSQL server for the tests: started in a temporary folder, stopped by its PID.

Debian's `postgresql` (`make check` installs it as root). The server listens
on 127.0.0.1 only, with a socket folder of its own (`-k`), `fsync=off`. It
refuses to run as root, so as root it runs as the `postgres` system user.
`postgres` itself is started (not `pg_ctl`) so its PID is ours to stop, with
`PR_SET_PDEATHSIG`: a pytest that is killed leaves no server behind.
Host connections need a password (`scram-sha-256` in `pg_hba.conf`).
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Final

import attrs

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

BIN: Final = Path("/usr/lib/postgresql/15/bin")
_PR_SET_PDEATHSIG: Final = 1
_NAMES: Final = itertools.count(1)


def missing() -> str | None:
    """Say why no server can be started here (None: one can)."""
    if not (BIN / "postgres").exists():
        return f"no PostgreSQL server at {BIN} (Debian's postgresql; `make check` installs it)"
    try:
        import psycopg  # noqa: F401, PLC0415 - only to ask whether it is installed
    except ImportError:
        return "psycopg is not installed (pip install -e '.[postgres]')"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root with no `postgres` user to run the server as"
    return None


@attrs.frozen
class Server:
    """A running server: where it listens and the superuser's password."""

    port: int
    password: str
    process: subprocess.Popen[bytes]
    folder: Path

    def url(self, database: str = "postgres", *, password: str | None = None) -> str:
        """Name a database of this server as a `postgresql://` URL (with the password)."""
        secret = self.password if password is None else password
        return f"postgresql://postgres:{secret}@127.0.0.1:{self.port}/{database}"


def _as(user: pwd.struct_passwd | None) -> Callable[[], None]:
    """Become `user` (None: stay), then die with the process that started us."""

    def become() -> None:
        if user is not None:
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
        # After the change of user: a change of credentials clears the parent-death signal.
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return become


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def running_server() -> Iterator[Server]:
    """Start a server in a temporary folder; stop it by its PID and remove the folder."""
    import psycopg  # noqa: PLC0415 - only with psycopg installed

    user = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="adws-pg-"))
    process: subprocess.Popen[bytes] | None = None
    try:
        password = secrets.token_hex(12)
        (folder / "pw").write_text(password)
        (folder / "sockets").mkdir()
        if user is not None:
            for path in (folder, folder / "pw", folder / "sockets"):
                os.chown(path, user.pw_uid, user.pw_gid)
        data = folder / "data"
        subprocess.run(
            [
                *(BIN / "initdb", "-D", data, "-U", "postgres", f"--pwfile={folder / 'pw'}"),
                *("--auth-host=scram-sha-256", "--auth-local=trust", "-N", "-E", "UTF8"),
                "--locale=C",
            ],
            preexec_fn=_as(user),  # the user change and the death signal
            check=True,
            capture_output=True,
        )
        port = _free_port()
        options = ["fsync=off", "full_page_writes=off", "synchronous_commit=off"]
        options += ["max_connections=200", "listen_addresses=127.0.0.1"]
        with (folder / "log").open("wb") as log:
            process = subprocess.Popen(
                [
                    *(BIN / "postgres", "-D", data, "-p", str(port), "-k", folder / "sockets"),
                    *(word for option in options for word in ("-c", option)),
                ],
                preexec_fn=_as(user),  # noqa: PLW1509 - the user change and the death signal
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        server = Server(port, password, process, folder)
        deadline = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(server.url(), connect_timeout=5).close()
                break
            except psycopg.OperationalError:
                if process.poll() is not None or time.monotonic() > deadline:
                    text = (folder / "log").read_text(errors="replace")
                    msg = f"PostgreSQL did not start:\n{text}"
                    raise RuntimeError(msg) from None
                time.sleep(0.05)
        yield server
    finally:
        if process is not None:
            process.send_signal(signal.SIGINT)  # a fast shutdown
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(folder, ignore_errors=True)


class Databases:
    """Make a fresh database per test on one server; drop each when its test ends."""

    def __init__(self, server: Server) -> None:
        """Keep the server."""
        self.server = server

    def fresh(self) -> str:
        """Create an empty database and return its URL."""
        import psycopg  # noqa: PLC0415 - only with psycopg installed

        name = f"t{os.getpid()}_{next(_NAMES)}"  # unique, even where a drop failed
        with psycopg.connect(self.server.url(), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        return self.server.url(name)

    def drop(self, url: str) -> None:
        """Drop a database made by `fresh`, whoever is still connected to it."""
        import psycopg  # noqa: PLC0415 - only with psycopg installed

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.server.url(), autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
