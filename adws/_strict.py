"""Strict JSON and strict structuring into attrs schemas, for the validator.

`parse_strict_json` refuses NaN/Infinity (however spelled: `1e999` too),
nesting deeper than 512, duplicate keys and anything but one surrounding
fenced block. `structure` builds a schema instance with a
cattrs converter of its own that coerces nothing (no `"1"` -> 1, no bool ->
int) and forbids extra keys, reporting each problem with its JSON path.
`example_of` draws a JSON example of a schema for the agent's instructions.
"""

from __future__ import annotations

import json
import math
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from types import NoneType, UnionType
from typing import Any, Final, Literal

import attrs
import cattrs
from cattrs.cols import homogenous_tuple_structure_factory, is_sequence, list_structure_factory
from cattrs.gen import make_dict_structure_fn
from returns.result import Failure, Result, Success

__all__ = ["example_of", "loads_strict", "parse_strict_json", "structure"]

_FENCE_LINE: Final = re.compile(r"^[ \t]*```", re.MULTILINE)
_FENCED: Final = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\n(.*)\n[ \t]*```", re.DOTALL)


def example_of(tp: object, depth: int = 0) -> object:  # noqa: PLR0911 - one return per kind of type
    """Build a JSON example of type `tp`, for the agent's instructions.

    >>> example_of(tuple[int, ...]), example_of(str | None), example_of(Literal["pass", "fail"])
    ([0], 'text', 'pass')
    """
    if depth > 8:  # noqa: PLR2004 - recursive schemas stop somewhere readable
        return None
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if isinstance(tp, type) and attrs.has(tp):
        try:
            hints = typing.get_type_hints(tp)
        except (NameError, TypeError):
            hints = {}
        return {
            field.name: example_of(hints.get(field.name, field.type), depth + 1)
            for field in attrs.fields(tp)
        }
    if origin is Literal:
        return args[0]
    if origin in {typing.Union, UnionType}:
        return example_of(next(arg for arg in args if arg is not NoneType), depth)
    if origin in {list, tuple, Sequence, set, frozenset} or tp in {list, tuple}:
        return [example_of(args[0], depth + 1)] if args else []
    if origin in {dict, Mapping} or tp is dict:
        return {}
    return {str: "text", int: 0, float: 0.0, bool: True}.get(tp)  # type: ignore[call-overload] # any type may be asked


# -- strict JSON ---------------------------------------------------------------


def _no_constants(name: str) -> object:
    msg = f"{name} is not allowed in strict JSON"
    raise ValueError(msg)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        msg = f"number {text} is not finite (it overflows to {value})"
        raise ValueError(msg)
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
            raise ValueError(msg)
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
    ValueError: number 1e999 is not finite (it overflows to inf)
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
        raise ValueError(msg) from exc
    depth = _depth(parsed)
    if depth > MAX_DEPTH:
        msg = f"JSON nests {depth} levels deep; at most {MAX_DEPTH} are allowed"
        raise ValueError(msg)
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


# -- strict structuring --------------------------------------------------------


def _strict_primitive(tp: type) -> Callable[[object, type], object]:
    def structure(value: object, _: type) -> object:
        ok = type(value) is tp or (tp is float and type(value) is int)
        if not ok:
            msg = f"expected {_json_name(tp)}, got {_json_name(type(value))}"
            raise TypeError(msg)
        return float(value) if tp is float else value  # type: ignore[arg-type] # an int or float, checked above

    return structure


def _json_name(tp: type) -> str:
    names: dict[type, str] = {
        str: "string",
        int: "integer",
        float: "number",
        bool: "boolean",
        dict: "object",
        list: "array",
        NoneType: "null",
    }
    return names.get(tp, tp.__name__)


def _require(
    json_type: type, inner: Callable[[Any, Any], object]
) -> Callable[[object, type], object]:
    """Wrap a structuring hook so it refuses values of any other JSON type."""

    def structure(value: object, tp: type) -> object:
        if not isinstance(value, json_type):
            msg = f"expected {_json_name(json_type)}, got {_json_name(type(value))}"
            raise TypeError(msg)
        return inner(value, tp)

    return structure


def _structure_attrs(cls: type, converter: cattrs.Converter) -> Callable[[object, type], object]:
    return _require(
        dict,
        make_dict_structure_fn(
            cls, converter, _cattrs_forbid_extra_keys=True, _cattrs_detailed_validation=True
        ),
    )


def _structure_sequence(tp: Any, converter: cattrs.Converter) -> Callable[[object, type], object]:  # noqa: ANN401 - any generic alias
    if typing.get_origin(tp) is tuple:
        return _require(list, homogenous_tuple_structure_factory(tp, converter))
    return _require(list, list_structure_factory(tp, converter))


def _strict_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for tp in (str, int, float, bool):
        converter.register_structure_hook(tp, _strict_primitive(tp))
    converter.register_structure_hook_factory(attrs.has, _structure_attrs)
    converter.register_structure_hook_factory(
        lambda tp: is_sequence(tp) and typing.get_args(tp) != () and tp is not str,
        _structure_sequence,
    )
    return converter


_CONVERTER: Final = _strict_converter()


def _format_exception(exc: BaseException, tp: type | None) -> str:
    if isinstance(exc, TypeError) and str(exc).startswith("expected "):
        return f"invalid type ({exc})"
    return cattrs.v.format_exception(exc, tp)


def structure(key: str, value: object, schema: type) -> Result[object, list[str]]:
    try:
        return Success(_CONVERTER.structure(value, schema))
    except Exception as exc:  # noqa: BLE001 - the validator reports, it never raises
        messages = cattrs.transform_error(exc, path="$", format_exception=_format_exception)
        return Failure([f"{key} does not match {schema.__name__}: {m}" for m in messages])
