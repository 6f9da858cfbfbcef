"""`adws serve` on the command line: what it refuses before listening, and the extra it needs."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

from adws.journal import Journal
from tests.conftest import REPO

if TYPE_CHECKING:
    from pathlib import Path


def serve(project: Path, *argv: str, code: str | None = None) -> tuple[int, str]:
    line = [sys.executable, "-m", "adws", "serve", *argv]
    if code is not None:
        line = [sys.executable, "-c", code, *argv]
    env = {**os.environ, "PYTHONPATH": str(REPO), "ADWS_JOURNAL": str(project / "runs.db")}
    done = subprocess.run(
        line, cwd=project, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    return done.returncode, done.stderr


def test_another_host_without_tls_is_refused_before_listening(tmp_path: Path) -> None:
    assert serve(tmp_path, "--host", "0.0.0.0") == (  # noqa: S104
        2,
        (
            "adws: error: --host 0.0.0.0 is reachable from other machines: give --tls-cert and "
            "--tls-key, or --insecure-http to send the session in clear\n"
        ),
    )


def test_a_token_file_others_may_read_is_refused(tmp_path: Path) -> None:
    Journal(tmp_path / "runs.db").close()
    (tmp_path / "serve-token").write_text("t\n")
    (tmp_path / "serve-token").chmod(0o640)
    code, said = serve(tmp_path)
    assert (code, said) == (
        2,
        (
            f"adws: error: {tmp_path / 'serve-token'} may be read by others (mode 0o40): "
            f"chmod 600 {tmp_path / 'serve-token'}\n"
        ),
    )


def test_without_the_extra_it_says_how_to_install_it(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['uvicorn'] = None; from adws.cli import main; "
        "sys.exit(main(['serve']))"
    )
    found, said = serve(tmp_path, code=code)
    assert found == 2
    assert said.startswith(
        "adws: error: adws serve needs Starlette and uvicorn: pip install 'adws[serve]'"
    )
