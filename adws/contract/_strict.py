"""Strict JSON for the validator: `parse_strict_json`.

It refuses NaN/Infinity (however spelled: `1e999` too), nesting deeper
than 512, duplicate keys and anything but one surrounding fenced block.
Structuring into schemas is `adws.contract._structure`; the schema's description
for the agent is `adws.contract._describe`.
"""

from __future__ import annotations

import json
import math
import re
from typing import Final

from returns.result import Failure, Result, Success

from adws._exceptions import MalformedError

__all__ = ["MAX_DEPTH", "loads_strict", "parse_strict_json"]

_FENCE_LINE: Final = re.compile(r"^[ \t]*```", re.MULTILINE)
_FENCED: Final = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\n(.*)\n[ \t]*```", re.DOTALL)


# -- strict JSON ---------------------------------------------------------------


def _no_constants(name: str) -> object:
    msg = f"{name} is not allowed in strict JSON"
    raise MalformedError(msg)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        msg = f"number {text} is not finite (it overflows to {value})"
        raise MalformedError(msg)
    return value


MAX_DEPTH: Final = 512
"""How deeply JSON may nest; deeper answers are refused before anything recurses into them."""


def _depth(value: object) -> int:
    """Measure how deeply `value` nests, without recursion.

    >>> _depth([1, {"a": [2]}]), _depth(3)
    (3, 0)
    """
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level + 1)
        stack.extend((child, level + 1) for child in children)
    return deepest


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            msg = f"duplicate key {key!r}"
            raise MalformedError(msg)
        result[key] = value
    return result


def _unfence(text: str) -> Result[str, str]:
    """Unwrap exactly one surrounding fenced block; refuse anything else with fences."""
    stripped = text.strip()
    if not stripped.startswith("```"):
        # Backticks inside JSON strings are data; text after the JSON fails to parse.
        return Success(stripped)
    match = _FENCED.fullmatch(stripped)
    if match is None or _FENCE_LINE.search(match.group(1)):
        return Failure("expected bare JSON or exactly one fenced block around it, nothing else")
    return Success(match.group(1))


def loads_strict(text: str) -> object:
    """Parse strict JSON (as `parse_strict_json`, with no fence), or raise `ValueError` why not.

    >>> loads_strict('{"a": [1, 2.5]}')
    {'a': [1, 2.5]}
    >>> loads_strict('{"a": 1e999}')
    Traceback (most recent call last):
    ...
    adws._exceptions.MalformedError: number 1e999 is not finite (it overflows to inf)
    """
    try:
        parsed = json.loads(
            text,
            parse_constant=_no_constants,
            parse_float=_finite,
            object_pairs_hook=_unique_keys,
        )
    except RecursionError as exc:
        msg = f"JSON nests deeper than {MAX_DEPTH} levels"
        raise MalformedError(msg) from exc
    depth = _depth(parsed)
    if depth > MAX_DEPTH:
        msg = f"JSON nests {depth} levels deep; at most {MAX_DEPTH} are allowed"
        raise MalformedError(msg)
    return parsed


def parse_strict_json(text: str) -> Result[object, str]:
    r"""Parse strict JSON: no NaN/Infinity, no duplicate keys, one optional fence.

    Numbers must be finite however they are spelled (`1e999` overflows to
    infinity and is refused), and nesting is limited to `MAX_DEPTH` levels, so
    nothing downstream (structuring, freezing, the journal) recurses too deep.

    >>> parse_strict_json('```json\n{"a": 1}\n```')
    <Success: {'a': 1}>
    >>> parse_strict_json('{"a": NaN}')
    <Failure: not valid JSON: NaN is not allowed in strict JSON>
    """
    unfenced = _unfence(text)
    if isinstance(unfenced, Failure):
        return unfenced
    try:
        return Success(loads_strict(unfenced.unwrap()))
    except json.JSONDecodeError as exc:
        return Failure(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
    except ValueError as exc:
        if str(exc).startswith("JSON nests"):
            return Failure(str(exc))
        return Failure(f"not valid JSON: {exc}")
