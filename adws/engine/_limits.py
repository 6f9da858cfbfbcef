"""The bounds on what a usage or a budget may hold; here apart so the parser reads them fast."""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_COST_USD", "MAX_COUNT"]

MAX_COST_USD: Final = 1e9
"""The most one usage may hold in dollars: more than any call costs, far less than a float holds."""
MAX_COUNT: Final = 10**12
"""The most one usage may count (tokens, turns): millions still sum inside SQLite's integers."""
