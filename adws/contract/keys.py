"""`Key`: a typed name for a value in the context, for mypy and for `adws check`."""

from __future__ import annotations

import typing
from typing import Any, Generic, TypeVar, final

import attrs

from adws._checks import is_input_name
from adws._exceptions import DefinitionError, DefinitionTypeError, MissingKeyError

__all__ = ["Key", "key_name"]

T_co = TypeVar("T_co", covariant=True)


def _check_name(_instance: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    if not is_input_name(value):
        msg = f"Key name {value!r} is not an identifier: use lower-case letters, digits and _"
        raise DefinitionError(msg)


_FROZEN_AS = {list: "tuple[...]", dict: "Mapping[...]", set: "frozenset[...]"}


def _check_type(instance: Key[Any], _attribute: attrs.Attribute[Any], value: object) -> None:
    kind = typing.get_origin(value) or value
    if kind in _FROZEN_AS:
        msg = (
            f"Key {instance.name!r}: a context freezes every value, so it never holds a"
            f" {kind.__name__}; declare {_FROZEN_AS[kind]} instead"
        )
        raise DefinitionError(msg)


@final
@attrs.frozen
class Key(Generic[T_co]):
    """Name a context value and its type: `ctx.get(KEY)` is typed for mypy.

    A key is accepted wherever a name is (`merge_outputs({KEY: value})`,
    `Step(reads=..., writes=...)`). Reading checks the value's type at run
    time too, shallowly (the class, not its parameters), so a step given a
    string where it expects a tuple fails at the read, naming the key. A
    context freezes what it holds (lists become tuples, dicts read-only
    mappings, sets frozensets), so a key declaring `list` is refused here.

    >>> CLAIMS = Key("claims", tuple)
    >>> CLAIMS.read({"claims": ("a",)})
    ('a',)
    >>> CLAIMS.read({"claims": "a"})
    Traceback (most recent call last):
    ...
    adws._exceptions.DefinitionTypeError: 'claims' holds a str, not the tuple its Key declares
    """

    name: str = attrs.field(validator=_check_name)
    type: type[T_co] = attrs.field(validator=_check_type)  # noqa: A003 - DESIGN names it: Key(name, type)

    def __str__(self) -> str:
        """Return the name."""
        return self.name

    def read(self, values: typing.Mapping[str, object]) -> T_co:
        """Return this key's value from `values`, checked against the declared type."""
        if self.name not in values:
            msg = f"no value named {self.name!r} (have {', '.join(sorted(values)) or 'none'})"
            raise MissingKeyError(msg)
        value = values[self.name]
        runtime = typing.get_origin(self.type) or self.type
        if isinstance(runtime, type) and not isinstance(value, runtime):
            msg = (
                f"{self.name!r} holds a {type(value).__name__}, not the"
                f" {runtime.__name__} its Key declares"
            )
            raise DefinitionTypeError(msg)
        return typing.cast("T_co", value)


def key_name(key: str | Key[Any]) -> str:
    """Return the name a key or a plain name stands for.

    >>> key_name(Key("topic", str)), key_name("topic")
    ('topic', 'topic')
    """
    return key.name if isinstance(key, Key) else key
