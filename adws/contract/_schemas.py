"""What adws knows about schema classes: attrs, dataclasses, `TypedDict`s and pydantic models.

A contract's `*_JSON` key may name any of the four. This module tells them
apart and lists a schema's fields (name, type, whether it is required, its
description) for the agent's instructions, `adws check`'s reading of
`{key.field}` paths (`path_problem`) and the test kit; and it lists the
fields of a structured value, so a template can read one. pydantic is never imported
here: a model class can only exist once its user imported pydantic.
"""

from __future__ import annotations

import dataclasses
import sys
import typing
from collections.abc import Sequence
from enum import Enum
from types import UnionType
from typing import Final, Literal, TypeAlias, final

import attrs

__all__ = [
    "SchemaField",
    "SchemaKind",
    "instance_fields",
    "is_pydantic_model",
    "path_problem",
    "schema_fields",
    "schema_kind",
]

SchemaKind: TypeAlias = Literal["attrs", "dataclass", "typeddict", "pydantic"]
_DESCRIPTION: Final = "description"


@final
@attrs.frozen
class SchemaField:
    """One field of a schema: its JSON name, type, whether it is required, its description."""

    name: str
    type: object
    required: bool = True
    description: str = ""


def is_pydantic_model(tp: object) -> bool:
    """Tell whether `tp` is a pydantic model class (without importing pydantic).

    >>> is_pydantic_model(int)
    False
    """
    pydantic = sys.modules.get("pydantic")
    base = getattr(pydantic, "BaseModel", None)
    return isinstance(tp, type) and base is not None and issubclass(tp, base) and tp is not base


def schema_kind(tp: object) -> SchemaKind | None:
    """Name the kind of schema class `tp` is, or None when it is not one.

    >>> @attrs.frozen
    ... class Point:
    ...     x: int
    >>> schema_kind(Point), schema_kind(dict), schema_kind(list[int])
    ('attrs', None, None)
    """
    if not isinstance(tp, type):
        return None
    if attrs.has(tp):
        return "attrs"
    if dataclasses.is_dataclass(tp):
        return "dataclass"
    if typing.is_typeddict(tp):
        return "typeddict"
    if is_pydantic_model(tp):
        return "pydantic"
    return None


def _hints(cls: type) -> dict[str, object]:
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError):  # an annotation that cannot be resolved: keep it as written
        return {}


def _described(metadata: typing.Mapping[object, object] | None) -> str:
    found = (metadata or {}).get(_DESCRIPTION, "")
    return found if isinstance(found, str) else ""


def schema_fields(cls: type) -> tuple[SchemaField, ...]:
    """List the fields of a schema class, in declaration order (empty for anything else).

    A field with a default is not required. Descriptions come from
    `attrs.field(metadata={"description": ...})`, the same on a dataclass
    field, or pydantic's `Field(description=...)`.

    >>> @attrs.frozen
    ... class Issue:
    ...     label: str = attrs.field(metadata={"description": "bug or feature"})
    ...     score: int = 0
    >>> [(f.name, f.type, f.required, f.description) for f in schema_fields(Issue)]
    [('label', <class 'str'>, True, 'bug or feature'), ('score', <class 'int'>, False, '')]
    """
    kind = schema_kind(cls)
    if kind == "attrs":
        hints = _hints(cls)
        return tuple(
            SchemaField(
                field.name,
                hints.get(field.name, field.type),
                field.default is attrs.NOTHING,
                _described(field.metadata),
            )
            for field in attrs.fields(cls)
            if field.init
        )
    if kind == "dataclass":
        hints = _hints(cls)
        return tuple(
            SchemaField(
                field.name,
                hints.get(field.name, field.type),
                field.default is dataclasses.MISSING
                and field.default_factory is dataclasses.MISSING,
                _described(field.metadata),
            )
            for field in dataclasses.fields(cls)
            if field.init
        )
    if kind == "typeddict":
        hints = _hints(cls) or dict(getattr(cls, "__annotations__", {}))
        required = getattr(cls, "__required_keys__", frozenset(hints))
        return tuple(SchemaField(name, tp, name in required) for name, tp in hints.items())
    if kind == "pydantic":
        fields: dict[str, typing.Any] = getattr(cls, "model_fields", {})
        return tuple(
            SchemaField(
                info.alias or name, info.annotation, info.is_required(), info.description or ""
            )
            for name, info in fields.items()
        )
    return ()


def instance_fields(value: object) -> tuple[str, ...] | None:
    """List the fields a template may read from a structured value (None: it has none).

    Mappings are read by key, elsewhere; this is for instances of attrs,
    dataclass and pydantic schemas, whose fields are attributes.

    >>> @attrs.frozen
    ... class Point:
    ...     x: int
    >>> instance_fields(Point(1)), instance_fields("text")
    (('x',), None)
    """
    cls = type(value)
    if attrs.has(cls):
        return tuple(field.name for field in attrs.fields(cls))
    if dataclasses.is_dataclass(cls):
        return tuple(field.name for field in dataclasses.fields(cls))
    if is_pydantic_model(cls):
        return tuple(getattr(cls, "model_fields", {}))
    return None


_SCALARS: Final[dict[object, str]] = {
    str: "text",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
}


def _scalar(tp: object) -> str | None:
    """Name a type that holds no fields (text, a number, a choice), or None."""
    if typing.get_origin(tp) is Literal or (isinstance(tp, type) and issubclass(tp, Enum)):
        return "a choice"
    return _SCALARS.get(tp)


def _optional(tp: object) -> object:
    """Strip `None` from `X | None`; leave every other type as it is."""
    args = [arg for arg in typing.get_args(tp) if arg is not type(None)]
    is_union = typing.get_origin(tp) in {typing.Union, UnionType}
    return args[0] if is_union and len(args) == 1 else tp


def path_problem(tp: object, key: str, path: tuple[str | int, ...]) -> str | None:
    """Walk a placeholder's path through the type its key holds; say where it breaks.

    None when the path holds, or leads into a type adws cannot see into
    (a dict, a union, `Any`): the run will tell.

    >>> @attrs.frozen
    ... class Issue:
    ...     labels: tuple[str, ...]
    >>> path_problem(Issue, "issue", ("lables",))
    "issue (Issue) has no field 'lables' (it has: labels)"
    >>> path_problem(Issue, "issue", ("labels", 0, "name"))
    'issue.labels[0] is text, which has no fields'
    """
    walked = key
    for part in path:
        tp = _optional(tp)
        schema = tp if isinstance(tp, type) and schema_kind(tp) is not None else None
        is_list = typing.get_origin(tp) in {list, tuple, Sequence}
        what = _scalar(tp) or ("a list" if is_list else None)
        if schema is not None:
            what = f"a {schema.__name__} object"
        if isinstance(part, int) and is_list:
            tp = (typing.get_args(tp) or (object,))[0]
        elif isinstance(part, int):
            return None if what is None else f"{walked} is {what}, not a list"
        elif schema is not None:
            fields = {field.name: field.type for field in schema_fields(schema)}
            if part not in fields:
                names = ", ".join(fields)
                return f"{walked} ({schema.__name__}) has no field {part!r} (it has: {names})"
            tp = fields[part]
        else:
            return None if what is None else f"{walked} is {what}, which has no fields"
        walked += f"[{part}]" if isinstance(part, int) else f".{part}"
    return None
