"""The Makefile, the front door: `make check` says what it installs before it does, once.

Each test runs the real `make` on the repository's Makefile, pointing the
places it looks at (`CHROMIUM`, `POSTGRES_BIN`, `CLIS`, `VENV`) at what is
missing, so nothing is installed: `-n` prints the commands, and a stand-in
`id` makes the one real `system` run a user's, not root's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import TYPE_CHECKING

import pytest

from tests.conftest import REPO

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")

CLAUDE_CODE = "@anthropic-ai/claude-code@2.1.330"
CODEX = "@openai/codex@0.169.0"


def make(*argv: str, path: str | None = None) -> str:
    env = {**os.environ, "PATH": path or os.environ["PATH"]}
    done = subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO), *argv],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return done.stdout


def as_user(tmp_path: Path, uid: int) -> str:
    """Return a PATH on which `id -u` says `uid` and `apt-get` is there (and does nothing)."""
    bin_dir = tmp_path / f"bin-{uid}"
    bin_dir.mkdir()
    for name, said in (("id", uid), ("apt-get", "apt-get was run")):
        (bin_dir / name).write_text(f"#!/bin/sh\necho {said}\n")
        (bin_dir / name).chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


def nothing_there(tmp_path: Path) -> list[str]:
    return [
        "CHROMIUM=no-such-browser",
        f"POSTGRES_BIN={tmp_path / 'no-postgres'}",
        f"CLIS={tmp_path / 'clis'}",
        f"VENV={tmp_path / 'venv'}",
    ]


def test_make_check_says_what_it_installs_before_it_installs_anything(tmp_path: Path) -> None:
    commands = make("-n", "check", *nothing_there(tmp_path)).splitlines()
    said = commands.index('echo "make check installs what is missing, then runs the checks:"')
    installing = [
        index
        for index, line in enumerate(commands)
        if "apt-get install" in line or "npm install" in line or "pip install" in line
    ]
    assert installing
    assert said < min(installing)


def test_installs_names_only_what_is_missing(tmp_path: Path) -> None:
    root = as_user(tmp_path, 0)
    assert make("-s", "installs", *nothing_there(tmp_path), path=root).splitlines()[1:] == [
        "  system packages, with apt-get as root: chromium postgresql (with their dependencies and",
        "    the CLIs below, about 1.5 GB on a fresh Debian; the browser and PostgreSQL tests)",
        f"  agent CLIs, from npm into {tmp_path / 'clis'} (never global): {CLAUDE_CODE} {CODEX}",
        (
            f"  Python tools, with pip into {tmp_path / 'venv'}: adws with its extras dev, dask,"
            " claude,"
        ),
        "    pydantic, otel, postgres, serve and mcp",
    ]
    clis = tmp_path / "clis"
    clis.mkdir()
    (clis / ".installed-2.1.330-0.169.0").touch()
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / ".installed-dev").touch()
    postgres = tmp_path / "postgres"
    postgres.touch()
    there = [
        f"CHROMIUM={shutil.which('sh')}",
        f"POSTGRES_BIN={postgres}",
        f"CLIS={clis}",
        f"VENV={tmp_path / 'venv'}",
    ]
    assert make("-s", "installs", *there).splitlines()[1:] == [
        "  system packages: chromium and postgresql are there",
        f"  agent CLIs: {CLAUDE_CODE} and {CODEX} are in {clis}",
        f"  Python tools: {tmp_path / 'venv'} has them",
    ]


def test_the_missing_system_packages_are_one_apt_get_and_none_when_there(
    tmp_path: Path,
) -> None:
    [command] = make("-n", "system", *nothing_there(tmp_path)).splitlines()
    assert command.count("apt-get install") == 1
    assert "apt-get install -y -qq chromium postgresql >/dev/null" in command
    postgres = tmp_path / "postgres"
    postgres.touch()
    there = [f"CHROMIUM={shutil.which('sh')}", f"POSTGRES_BIN={postgres}"]
    assert make("-s", "system", *there) == ""  # nothing missing: nothing said, nothing run


def test_a_user_who_is_not_root_is_told_what_is_skipped_and_nothing_is_installed(
    tmp_path: Path,
) -> None:
    path = as_user(tmp_path, 1000)
    said = make("-s", "system", *nothing_there(tmp_path), path=path)
    assert said == (
        "note: chromium postgresql missing and not root: the tests that use it are skipped\n"
    )
    shown = make("-s", "installs", *nothing_there(tmp_path), path=path).splitlines()
    assert shown[1] == (
        "  system packages: chromium postgresql missing and not root: their tests will be skipped"
    )
