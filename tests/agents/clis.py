"""Where the tests find the real agent CLIs: `make check` installs them from npm, pinned."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest

from adws.agents import ClaudeAgent
from adws.agents.presets import PRESETS
from tests.conftest import REPO

if TYPE_CHECKING:
    from adws.agents import AgentBackend
    from adws.testing import FakeModelAPI

BIN: Final = REPO / ".cache" / "agent-clis" / "node_modules" / ".bin"
PINNED: Final = {"claude": "2.1.330", "codex": "0.169.0"}
KINDS: Final = ("claude", "codex", "claude-sdk")


def _missing(name: str) -> str | None:
    if (BIN / name).exists():
        return None
    if shutil.which("npm") is None:
        return (
            f"the {name} CLI is not installed and npm is absent: `make clis` installs it from npm"
        )
    return f"the {name} CLI is not in {BIN}: run `make clis` (make check does)"


def _sdk_missing() -> str | None:
    try:
        import claude_agent_sdk  # noqa: F401, PLC0415 - only asked whether it is there
    except ImportError:
        return "the Claude Agent SDK is not installed: pip install -e '.[claude]' (make check does)"
    return None


def needs(kind: str) -> pytest.MarkDecorator:
    """Skip, saying why, when the CLI this kind of agent runs is not installed."""
    reason = _sdk_missing() if kind == "claude-sdk" else _missing(kind)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def kinds() -> list[object]:
    """Parametrise over every preset and ClaudeAgent, each skipped when absent."""
    return [pytest.param(kind, marks=needs(kind)) for kind in KINDS]


def on_path() -> str:
    """Return PATH with the installed CLIs first."""
    return f"{BIN}{os.pathsep}{os.environ['PATH']}"


def environment(kind: str, api: FakeModelAPI, home: Path) -> dict[str, str]:
    """Return the environment that points `kind`'s CLI at the fake model API."""
    if kind == "codex":
        return api.codex_env(home)
    return api.claude_env(home)


def backend(kind: str, api: FakeModelAPI, home: Path, **limits: object) -> AgentBackend:
    """Build the backend `adws run --agent kind` builds, pointed at the fake API."""
    env = environment(kind, api, home)
    if kind == "claude-sdk":
        return ClaudeAgent(env=env, **limits)  # type: ignore[arg-type] # limits: timeout, cwd
    return PRESETS[kind].agent(env=env, **limits)  # type: ignore[arg-type] # as above


def git_repo(path: Path) -> Path:
    """Make `path` a git repository (codex works only inside one)."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path
