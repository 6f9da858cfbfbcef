"""Helpers shared by the shipped workflows (files starting with _ are not scanned)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from adws.agents import CommandAgent

DEMO_AGENT = CommandAgent(
    [sys.executable, str(Path(__file__).resolve().parent.parent / "demo" / "demo_agent.py")]
)
"""The offline demo agent: the default until `adws run --agent CMD` picks a real one."""


def slug(text: str) -> str:
    """Make a short file-name-safe slug.

    >>> slug("Railway-oriented programming!")
    'railway-oriented-programming'
    """
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "run"
