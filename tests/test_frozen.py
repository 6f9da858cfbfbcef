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


def test_a_view_extended_by_another_view_holds_both_and_leaves_each_as_it_was() -> None:
    from adws._frozen import freeze_mapping  # noqa: PLC0415 - only this test

    first = freeze_mapping({"a": 1, "b": [1, 2]})
    second = freeze_mapping({"b": 3, "c": {"d": 4}})
    both = first.extend(second)
    assert dict(both) == {"a": 1, "b": 3, "c": second["c"]}
    assert (dict(first), dict(second)) == ({"a": 1, "b": (1, 2)}, {"b": 3, "c": second["c"]})
