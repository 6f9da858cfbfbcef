"""Immutable mappings: the representation behind `WorkflowContext`.

`FrozenMap` is a read-only view of the first `size` entries of a private,
append-only store. Promotion only ever adds keys (a clash is an error), so
the newest view can extend the store in place and hand out a longer view in
time proportional to what was added, while every older view still sees
exactly the entries it was made with. Only a view that is not the newest
copies the store before extending it (a retry or a verification round
branching from an earlier context).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import islice
from types import MappingProxyType
from typing import Any, final

__all__ = ["FrozenMap", "freeze", "freeze_mapping"]

_EMPTY_STORE: dict[str, tuple[int, Any]] = {}


def freeze(value: object) -> object:
    """Return a deeply read-only version of a plain value.

    Dicts (and read-only views of them) become `FrozenMap`s, lists and tuples
    become tuples, sets become frozensets; anything else is kept as it is.

    >>> freeze({"a": [1, {"b": {2}}]})
    FrozenMap({'a': (1, FrozenMap({'b': frozenset({2})}))})
    """
    result: object = value
    if isinstance(value, dict | MappingProxyType):
        result = freeze_mapping(value)
    elif type(value) in {list, tuple}:
        result = tuple(freeze(item) for item in value)  # type: ignore[attr-defined] # a list or tuple, per the check above
    elif isinstance(value, set):
        result = frozenset(value)
    return result


def freeze_mapping(mapping: Mapping[str, object] | None) -> FrozenMap:
    """Return `mapping` as a `FrozenMap`, copying and freezing its values."""
    if isinstance(mapping, FrozenMap):
        return mapping
    if not mapping:
        return EMPTY
    return EMPTY.extend(mapping)


@final
class FrozenMap(Mapping[str, Any]):
    """Read-only mapping that extends cheaply; see the module docstring.

    >>> base = FrozenMap().extend({"a": 1})
    >>> longer = base.extend({"b": 2})
    >>> dict(base), dict(longer)
    ({'a': 1}, {'a': 1, 'b': 2})
    """

    __slots__ = ("_size", "_store")

    def __init__(self) -> None:
        """Make an empty map; build bigger ones with `extend`."""
        self._store = _EMPTY_STORE
        self._size = 0

    @classmethod
    def _view(cls, store: dict[str, tuple[int, Any]], size: int) -> FrozenMap:
        view = cls.__new__(cls)
        view._store = store  # noqa: SLF001
        view._size = size  # noqa: SLF001
        return view

    def __getitem__(self, key: str) -> Any:  # noqa: ANN401 - values are any user data
        """Return the value of `key` if this view holds it."""
        index, value = self._store[key]
        if index >= self._size:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        """Tell whether this view holds `key`."""
        entry = self._store.get(key)  # type: ignore[call-overload] # any key may be asked
        return entry is not None and entry[0] < self._size

    def __iter__(self) -> Iterator[str]:
        """Iterate keys in insertion order."""
        return islice(self._store, self._size)

    def __len__(self) -> int:
        """Count the keys this view holds."""
        return self._size

    def __repr__(self) -> str:
        """Show the entries like a dict."""
        return f"FrozenMap({dict(self.items())!r})"

    def __eq__(self, other: object) -> bool:
        """Compare equal to any mapping with the same items."""
        if isinstance(other, Mapping):
            return len(self) == len(other) and dict(self.items()) == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment] # equal to dicts, so unhashable like them

    def extend(self, mapping: Mapping[str, object]) -> FrozenMap:
        """Return a view with `mapping`'s entries added, each frozen.

        A key already in this view takes the new value in the new view only;
        callers that must not overwrite (promotion) check for clashes first.
        """
        if not mapping:
            return self
        if any(key in self for key in mapping):
            merged = dict(self.items())
            merged.update((key, freeze(value)) for key, value in mapping.items())
            store = {key: (i, value) for i, (key, value) in enumerate(merged.items())}
            return FrozenMap._view(store, len(store))
        store = self._store
        if store is _EMPTY_STORE or len(store) != self._size:
            # Another view already grew this store: branch off with a copy.
            store = {key: (i, value) for i, (key, value) in enumerate(self.items())}
        for key, value in mapping.items():
            store[key] = (len(store), freeze(value))
        return FrozenMap._view(store, len(store))


EMPTY = FrozenMap()
