"""Helpers shared by the shipped workflows (files starting with _ are not scanned)."""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

from adws.agents import CommandAgent
from adws.agents.parsers import claude_json

DEMO_AGENT = CommandAgent(
    [sys.executable, str(Path(__file__).resolve().parent.parent / "demo" / "demo_agent.py")],
    parse=claude_json,
)
"""The offline demo agent: the default until `adws run --agent CMD` picks a real one.

It prints Claude Code's JSON result with a made-up usage, so `adws cost` has
figures to show offline.
"""


def slug(text: str) -> str:
    """Make a short file-name-safe slug, unique per text.

    The readable part alone would collide (`C++` and `C#` both give `c`; every
    topic in another script gives nothing), so a short hash of the exact
    text follows it.

    >>> slug("Railway-oriented programming!")
    'railway-oriented-programming-b469b5e3'
    >>> slug("Программирование")
    '43881bae'
    """
    readable = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60].strip("-")
    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{readable}-{digest}" if readable else digest
