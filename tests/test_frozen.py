"""The recursion limit adws needs for JSON nested as deep as the validator allows."""

from __future__ import annotations

import sys

from adws._frozen import RECURSION_LIMIT, ensure_recursion_limit


def test_the_limit_is_raised_to_what_adws_needs_and_never_lowered() -> None:
    before = sys.getrecursionlimit()
    try:
        assert before >= RECURSION_LIMIT
        sys.setrecursionlimit(RECURSION_LIMIT + 500)
        assert ensure_recursion_limit() == RECURSION_LIMIT + 500
        sys.setrecursionlimit(1000)
        assert ensure_recursion_limit() == RECURSION_LIMIT
    finally:
        sys.setrecursionlimit(before)
