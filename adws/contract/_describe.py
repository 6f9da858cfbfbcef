"""Describe a schema to an agent: each field with its type, choices and description, and an example.

Used by `OutputContract.instructions`; `example_of` also gives `SchemaAgent`
its starting values.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping, Sequence
from enum import Enum
from types import NoneType, UnionType
from typing import Final, Literal

from adws.contract._schemas import schema_fields, schema_kind

__all__ = ["describe_type", "example_of", "field_lines"]

_DEPTH: Final = 8
"""How deep a recursive schema is described before it stops."""
_SEQUENCES: Final = frozenset({list, tuple, Sequence, set, frozenset})


def _choices(tp: object) -> list[object] | None:
    """The values a `Literal` or an `Enum` allows, as they appear in JSON (None: not a choice)."""
    if typing.get_origin(tp) is Literal:
        return [arg.value if isinstance(arg, Enum) else arg for arg in typing.get_args(tp)]
    if isinstance(tp, type) and issubclass(tp, Enum):
        return [member.value for member in tp]
    return None


def _members(tp: object) -> tuple[object, ...]:
    """The types of a union (`X | None` included), or `tp` alone."""
    if typing.get_origin(tp) in {typing.Union, UnionType}:
        return typing.get_args(tp)
    return (tp,)


def example_of(tp: object, depth: int = 0) -> object:  # noqa: PLR0911 - one return per kind of type
    """Build a JSON example of type `tp`: the first choice, the first member of a union.

    >>> example_of(tuple[int, ...]), example_of(str | None), example_of(Literal["pass", "fail"])
    ([0], 'text', 'pass')
    """
    if depth > _DEPTH:
        return None
    choices = _choices(tp)
    if choices is not None:
        return choices[0] if choices else None
    if isinstance(tp, type) and schema_kind(tp) is not None:
        return {field.name: example_of(field.type, depth + 1) for field in schema_fields(tp)}
    members = _members(tp)
    if len(members) > 1:
        return example_of(next(arg for arg in members if arg is not NoneType), depth)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in _SEQUENCES or tp in {list, tuple}:
        return [example_of(args[0], depth + 1)] if args else []
    if origin in {dict, Mapping} or tp is dict:
        return {}
    scalars: dict[object, object] = {str: "text", int: 0, float: 0.0, bool: True}
    return scalars.get(tp)


def describe_type(tp: object, depth: int = 0) -> str:
    """Say in JSON's words what a field holds.

    >>> describe_type(list[int] | None), describe_type(Literal["a", "b"]), describe_type(dict)
    ('array of integer, or null', 'one of "a", "b"', 'object')
    """
    choices = _choices(tp)
    if choices is not None:
        return "one of " + ", ".join(json.dumps(choice) for choice in choices)
    if isinstance(tp, type) and schema_kind(tp) is not None:
        return f"object ({tp.__name__})"
    members = _members(tp)
    if len(members) > 1:
        named = [describe_type(arg, depth) for arg in members if arg is not NoneType]
        nullable = ", or null" if NoneType in members else ""
        return " or ".join(named) + nullable
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in _SEQUENCES or tp in {list, tuple}:
        return f"array of {describe_type(args[0], depth + 1)}" if args else "array"
    if origin in {dict, Mapping} or tp is dict:
        return "object"
    names: dict[object, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
    return names.get(tp, "any JSON value")


def _element(tp: object) -> object:
    """The schema class a field holds, directly, in a list, or beside null (else None)."""
    for member in _members(tp):
        origin = typing.get_origin(member)
        inner = (
            typing.get_args(member)[0]
            if origin in _SEQUENCES and typing.get_args(member)
            else member
        )
        if isinstance(inner, type) and schema_kind(inner) is not None:
            return inner
    return None


def field_lines(schema: type, prefix: str = "", depth: int = 0) -> list[str]:
    r"""List every field of `schema`, nested schemas' fields under their path, one line each.

    >>> import attrs
    >>> @attrs.frozen
    ... class Issue:
    ...     label: Literal["bug", "feature"] = attrs.field(metadata={"description": "its kind"})
    ...     notes: str | None = None
    >>> print("\n".join(field_lines(Issue)))
    - label (required): one of "bug", "feature" — its kind
    - notes (optional): string, or null
    """
    if depth > _DEPTH:
        return []
    lines = []
    for field in schema_fields(schema):
        path = f"{prefix}{field.name}"
        needed = "required" if field.required else "optional"
        about = f" — {field.description}" if field.description else ""
        lines.append(f"- {path} ({needed}): {describe_type(field.type)}{about}")
        inner = _element(field.type)
        if isinstance(inner, type):
            is_list = describe_type(field.type).startswith("array")
            lines.extend(field_lines(inner, f"{path}{'[]' if is_list else ''}.", depth + 1))
    return lines
