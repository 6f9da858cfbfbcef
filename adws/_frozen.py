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

import sys
from collections.abc import Iterator, Mapping
from itertools import islice
from types import MappingProxyType
from typing import Any, Final, final

from adws._exceptions import MissingKeyError

__all__ = ["RECURSION_LIMIT", "FrozenMap", "ensure_recursion_limit", "freeze", "freeze_mapping"]

RECURSION_LIMIT: Final = 4000
"""The Python recursion limit adws makes sure of when it is imported.

The validator lets JSON nest up to 512 levels; freezing it, encoding it for
the journal and printing it walk it recursively, at up to four frames a
level, which is past Python's default limit of 1000. adws only ever raises
the limit, to this value, and never lowers one a program has set higher.
"""


def ensure_recursion_limit(limit: int = RECURSION_LIMIT) -> int:
    """Raise Python's recursion limit to at least `limit`; return the limit in force.

    >>> ensure_recursion_limit(10) >= 10
    True
    """
    sys.setrecursionlimit(max(sys.getrecursionlimit(), limit))
    return sys.getrecursionlimit()


ensure_recursion_limit()

_EMPTY_STORE: dict[str, tuple[int, Any]] = {}
_SCALARS = frozenset({str, int, float, bool, type(None)})


def freeze(value: object) -> object:
    """Return a deeply read-only version of a plain value.

    Dicts (and read-only views of them) become `FrozenMap`s, lists and tuples
    become tuples, sets become frozensets; anything else is kept as it is.

    >>> freeze({"a": [1, {"b": {2}}]})
    FrozenMap({'a': (1, FrozenMap({'b': frozenset({2})}))})
    """
    result: object = value
    if type(value) in _SCALARS:
        pass
    elif isinstance(value, dict | MappingProxyType):
        result = freeze_mapping(value)
    elif type(value) in {list, tuple}:
        result = tuple(freeze(item) for item in value)  # type: ignore[attr-defined] # a list or tuple, per the check above
    elif isinstance(value, set):
        result = frozenset(value)
    return result


def freeze_mapping(mapping: Mapping[str, object] | None) -> FrozenMap:
    """Return `mapping` as a `FrozenMap`, copying and freezing its values."""
    if type(mapping) is FrozenMap:
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
        view = _new(cls)
        _set_store(view, store)
        _set_size(view, size)
        return view

    def __getitem__(self, key: str) -> Any:  # noqa: ANN401 - values are any user data
        """Return the value of `key` if this view holds it."""
        index, value = self._store[key]
        if index >= self._size:
            raise MissingKeyError(key)
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

    def _pairs(self) -> list[tuple[str, Any]]:
        """List this view's entries straight from the store (faster than `items()`)."""
        return [(key, entry[1]) for key, entry in islice(self._store.items(), self._size)]

    def extend(self, mapping: Mapping[str, object]) -> FrozenMap:
        """Return a view with `mapping`'s entries added, each frozen.

        A key already in this view takes the new value in the new view only;
        callers that must not overwrite (promotion) check for clashes first.
        """
        if not mapping:
            return self
        # type() rather than isinstance(): FrozenMap is an ABC, and ABC checks are slow.
        if type(mapping) is FrozenMap:
            pairs = mapping._pairs()  # noqa: SLF001 - same class
        else:
            scalars = _SCALARS
            pairs = [
                (key, value if type(value) in scalars else freeze(value))
                for key, value in mapping.items()
            ]
        if not self._size:
            store = {key: (i, value) for i, (key, value) in enumerate(pairs)}
            return FrozenMap._view(store, len(store))
        if self._clashes(pairs):
            merged = dict(self._pairs())
            merged.update(pairs)
            store = {key: (i, value) for i, (key, value) in enumerate(merged.items())}
            return FrozenMap._view(store, len(store))
        return self._append(pairs)

    def extend_unique(self, other: FrozenMap) -> FrozenMap | list[str]:
        """Return a view with `other`'s entries added, or the keys both hold.

        This is promotion's fast path: no overwrite, nothing frozen twice.
        """
        if not other._size:
            return self
        pairs = other._pairs()
        # Promotion mostly adds new keys: one check in C, the exact one only on a shared key.
        if not self._store.keys().isdisjoint(other._store):
            clashes = self._clashes(pairs)
            if clashes:
                return clashes
        return self._append(pairs)

    def _clashes(self, pairs: list[tuple[str, Any]]) -> list[str]:
        store, size = self._store, self._size
        clashes: list[str] = []
        for key, _ in pairs:
            entry = store.get(key)
            if entry is not None and entry[0] < size:
                clashes.append(key)
        return clashes

    def _append(self, pairs: list[tuple[str, Any]]) -> FrozenMap:
        """Add new, already-frozen entries; grow the store in place if this is its newest view."""
        store = self._store
        if len(store) != self._size or store is _EMPTY_STORE:
            # Another view already grew this store: branch off with a copy.
            store = {key: (i, value) for i, (key, value) in enumerate(self._pairs())}
        for key, value in pairs:
            store[key] = (len(store), value)
        return FrozenMap._view(store, len(store))


_new = object.__new__
# Slot descriptors: the cheapest way to fill a new view.
_set_store = FrozenMap.__dict__["_store"].__set__
_set_size = FrozenMap.__dict__["_size"].__set__
EMPTY = FrozenMap()
