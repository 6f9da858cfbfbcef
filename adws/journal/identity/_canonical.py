"""Describe code and values canonically: the same text in every process, for fingerprints.

A description never depends on `PYTHONHASHSEED`, memory addresses, set
order or the order modules were imported in:

- code is described by its bytecode, names and constants, never its line
  numbers; a `frozenset` constant (`x in {"a", "b"}` compiles to one) by
  its sorted elements;
- a function written in the user's code by its code, defaults, closure
  values and, transitively, what it reads from its module's globals: the
  functions and classes defined there and every other module-level value
  (`FACTOR = 2`, `CONFIG = {...}`), canonically encoded. A value (not
  code) is encoded as this process first saw it, and so is an object's
  state: a list a step appends to, or a recorder object a test's steps
  share, does not change a fingerprint for the rest of the process, as it
  would not in a new process either, where the module starts again from
  its source;
- a class written in the user's code by its bases, its fields (names,
  annotations, defaults, validators, converters and metadata, for attrs
  classes, dataclasses, `TypedDict`s and pydantic models; the classes
  those annotations name, when they are the user's too), its enum members,
  its public class attributes and the methods written in its body. What
  attrs or dataclasses generate (`__init__`, `__eq__`, and `__hash__`,
  whose constants hold `hash(<str>)`, different in every process) is left
  out: it follows from the fields;
- code outside the user's (the standard library, installed packages, adws
  itself) by its qualified name only, so upgrading a library never makes a
  finished step "changed";
- values by their contents: scalars, text, bytes, containers (mappings
  and sets sorted), attrs and dataclass instances, enum members, paths,
  compiled patterns, decimals, fractions, dates and UUIDs. Any other
  object cannot be encoded stably (its `repr` may hold an address or a
  time), so only its type counts: changing such a value is not seen.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import fractions
import functools
import hashlib
import re
import sys
import sysconfig
import threading
import types
import typing
import uuid
import weakref
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any, Final

import attrs

from adws.journal.identity._homes import first_home, first_homes_in

__all__ = ["Describer", "digest", "is_library"]

DIGEST_CHARS: Final = 20
"""Fingerprints are 20 hex characters; the 16 of older adws versions are not compared."""

_PLAIN: Final = (str, bytes, int, float, complex, bool, type(None), type(Ellipsis), range)
_BY_REPR: Final = (
    PurePath,
    decimal.Decimal,
    fractions.Fraction,
    dt.date,
    dt.time,
    dt.timedelta,
    uuid.UUID,
)
_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_FIRST_SEEN: Final[weakref.WeakKeyDictionary[object, dict[object, str]]] = (
    weakref.WeakKeyDictionary()
)
"""How this process first described each module's global values and each closure's cells."""
_FIRST_SEEN_LOCK: Final = threading.Lock()


def digest(text: str) -> str:
    """Hash text to a short hex digest (lone surrogates included).

    >>> digest("a")
    'ca978112ca1bbdcafac2'
    """
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:DIGEST_CHARS]


@functools.cache
def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    roots.update(paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib"))
    return tuple(sorted(str(Path(root).resolve()) for root in roots))


@functools.cache
def _library_file(file: str | None) -> bool:
    if file is None:
        return True
    resolved = str(Path(file).resolve())
    return any(resolved.startswith(root + "/") or resolved == root for root in _library_roots())


def is_library(module_name: str | None) -> bool:
    """Tell whether a module is library code (adws, the standard library, installed packages).

    >>> is_library("json"), is_library("adws.engine.step"), is_library("builtins")
    (True, True, True)
    """
    if not module_name or module_name == "adws" or module_name.startswith("adws."):
        return True
    module = sys.modules.get(module_name)
    return _library_file(getattr(module, "__file__", None))


def _qualified(obj: object) -> str:
    module = first_home(getattr(obj, "__module__", None) or "?")
    return f"{module}:{getattr(obj, '__qualname__', type(obj).__qualname__)}"


def _written_in(function: types.FunctionType, cls: type) -> bool:
    """Tell whether a class's function was written in the class's own module file.

    attrs and dataclasses compile what they generate from text (`<attrs
    generated ...>`, `<string>`) or take it from their own modules.
    """
    file = getattr(sys.modules.get(cls.__module__), "__file__", None)
    return file is not None and _same_file(function.__code__.co_filename, file)


@functools.cache
def _same_file(first: str, second: str) -> bool:
    return first == second or Path(first).resolve() == Path(second).resolve()


def _cached_properties(cls: type) -> list[tuple[str, object]]:
    """Find the `cached_property` functions attrs moved into a slotted class's `__getattr__`."""
    generated = vars(cls).get("__getattr__")
    found = getattr(generated, "__globals__", {}).get("cached_properties")
    return list(found.items()) if attrs.has(cls) and isinstance(found, dict) else []


def _unwrap(member: object) -> list[types.FunctionType]:
    """Return the functions behind a class member (a method, property, static or class method)."""
    if isinstance(member, staticmethod | classmethod):
        member = member.__func__
    if isinstance(member, property):
        found = (member.fget, member.fset, member.fdel)
        return [f for f in found if isinstance(f, types.FunctionType)]
    if isinstance(member, functools.cached_property):
        member = member.func
    return [member] if isinstance(member, types.FunctionType) else []


class Describer:
    """Describe callables, classes and values canonically; memoised for one computation."""

    def __init__(self) -> None:
        """Start with empty memos: one describer per fingerprint computation."""
        self._seen: dict[int, str] = {}
        self._codes: dict[int, str] = {}
        self._names: dict[int, list[str]] = {}
        self._keep: list[object] = []
        """What the memos are keyed on, alive until the describer goes (ids stay unique)."""
        self._open: set[int] = set()
        """Containers being described: one that holds itself is described as `...` inside."""

    # -- code ------------------------------------------------------------------

    def code(self, code: types.CodeType) -> str:
        """Describe a code object without its line numbers or file name, once per object."""
        found = self._codes.get(id(code))
        if found is None:
            self._keep.append(code)
            parts = [
                code.co_name,
                code.co_code.hex(),
                repr(code.co_names),
                repr(code.co_varnames),
                repr(code.co_freevars),
                repr(code.co_cellvars),
                repr((code.co_argcount, code.co_kwonlyargcount, code.co_flags)),
            ]
            parts.extend(self._constant(const) for const in code.co_consts)
            found = self._codes[id(code)] = digest("\n".join(parts))
        return found

    def _constant(self, const: object) -> str:
        if isinstance(const, types.CodeType):
            return self.code(const)
        if isinstance(const, frozenset):
            return "frozenset{" + ", ".join(sorted(self._constant(item) for item in const)) + "}"
        if isinstance(const, tuple):
            return "(" + ", ".join(self._constant(item) for item in const) + ")"
        return repr(const)

    def global_names(self, code: types.CodeType) -> list[str]:
        """List the names a code object (and code nested in it) uses, sorted, once per object."""
        found = self._names.get(id(code))
        if found is None:
            names = set(code.co_names)
            for const in code.co_consts:
                if isinstance(const, types.CodeType):
                    names.update(self.global_names(const))
            found = self._names[id(code)] = sorted(names)
        return found

    # -- functions and classes ----------------------------------------------------

    def _memo(self, obj: object, describe: typing.Callable[[], str]) -> str:
        key = id(obj)
        if key in self._seen:
            return self._seen[key]
        self._keep.append(obj)
        self._seen[key] = f"(recursive {_qualified(obj)})"
        described = self._seen[key] = describe()
        return described

    def function(self, function: types.FunctionType) -> str:
        """Describe a function: its code, defaults, closure, and what it reads from its module."""
        if is_library(function.__module__):
            return _qualified(function)
        return self._memo(function, lambda: self._function(function))

    def _function(self, function: types.FunctionType) -> str:
        parts = [function.__qualname__, self.code(function.__code__)]
        parts.append(self.value(function.__defaults__))
        parts.append(self.value(function.__kwdefaults__))
        for index, cell in enumerate(function.__closure__ or ()):
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell: the variable was never bound
                contents = None
            parts.append(self._first_seen(function, index, contents))
        namespace = function.__globals__
        module = sys.modules.get(function.__module__)
        owner = module if module is not None and vars(module) is namespace else None
        parts.extend(
            f"{name}={self._first_seen(owner, name, namespace[name])}"
            for name in self.global_names(function.__code__)
            if name in namespace
        )
        return digest("\n".join(parts))

    def _first_seen(self, owner: object, key: object, value: object) -> str:
        """Describe a global, closure value or object's state as this process first saw it.

        Code is described as it is; an owner that cannot be weakly
        referenced (a list, a dict) keeps nothing and is described as it is.
        """
        if owner is None or isinstance(value, types.FunctionType | type):
            return self.value(value)
        try:
            with _FIRST_SEEN_LOCK:
                seen = _FIRST_SEEN.setdefault(owner, {})
                found = seen.get(key)
        except TypeError:  # no weak reference to it: nothing to remember it by
            return self.value(value)
        if found is None:
            found = self.value(value)
            with _FIRST_SEEN_LOCK:
                found = seen.setdefault(key, found)
        return found

    def cls(self, cls: type) -> str:
        """Describe a class: the user's in full (see the module docstring), a library's by name."""
        if is_library(cls.__module__):
            return _qualified(cls)
        return self._memo(cls, lambda: self._cls(cls))

    def _cls(self, cls: type) -> str:
        parts = [cls.__qualname__, repr([_qualified(base) for base in cls.__bases__])]
        parts.extend(self.fields(cls))
        if issubclass(cls, enum.Enum):
            parts.extend(f"{m.name}={self.value(m.value)}" for m in cls.__members__.values())
        members = [*vars(cls).items(), *_cached_properties(cls)]
        for name, member in sorted(members, key=lambda item: item[0]):
            functions = [f for f in _unwrap(member) if _written_in(f, cls)]
            if functions:
                parts.append(f"{name}={[self.function(f) for f in functions]}")
            elif not name.startswith("_") and not isinstance(member, enum.Enum):
                parts.append(f"{name}={self.value(member)}")
        return digest("\n".join(parts))

    def fields(self, cls: type) -> list[str]:
        """Describe a class's declared fields, whatever declared them, in declaration order."""
        if attrs.has(cls):
            return [
                self.value(
                    (
                        field.name,
                        self.annotation(field.type, cls),
                        field.default,
                        field.validator,
                        field.converter,
                        field.kw_only,
                        field.metadata,
                    )
                )
                for field in attrs.fields(cls)
            ]
        if dataclasses.is_dataclass(cls):
            return [
                self.value(
                    (
                        field.name,
                        self.annotation(field.type, cls),
                        _missing_as_none(field.default),
                        _missing_as_none(field.default_factory),
                        field.metadata,
                    )
                )
                for field in dataclasses.fields(cls)
            ]
        described = [
            f"{name}: {self.annotation(annotation, cls)}"
            for name, annotation in vars(cls).get("__annotations__", {}).items()
        ]
        model_fields = vars(cls).get("model_fields")  # a pydantic model's, with defaults
        if isinstance(model_fields, Mapping):
            described.extend(
                first_homes_in(f"{name}: {info!r}") for name, info in model_fields.items()
            )
        if typing.is_typeddict(cls):
            described.append(self.value(cls.__required_keys__))  # type: ignore[attr-defined] # a TypedDict has them
        return described

    def annotation(self, annotation: object, owner: type) -> str:
        """Describe a type annotation and the user's classes it names (nested schemas)."""
        if isinstance(annotation, str):
            module = sys.modules.get(owner.__module__)
            namespace = vars(module) if module is not None else {}
            named = [namespace.get(name) for name in _IDENTIFIER.findall(annotation)]
            nested = [self.cls(found) for found in named if isinstance(found, type)]
            return annotation + repr(nested)
        nested = [self.cls(found) for found in _classes_in(annotation)]
        return first_homes_in(repr(annotation)) + repr(nested)

    # -- values ------------------------------------------------------------------

    def value(self, value: object) -> str:  # noqa: C901, PLR0911 - one case per kind of value
        """Describe any value stably across processes (never by its memory address)."""
        if isinstance(value, enum.Enum):
            return f"{_qualified(type(value))}.{value.name}"
        if isinstance(value, _PLAIN):
            return repr(value)
        if isinstance(value, types.FunctionType):
            return self.function(value)
        if _is_annotation(value):
            return self.annotation(value, object)
        if isinstance(value, type):
            return self.cls(value)
        if isinstance(value, functools.partial):
            arguments = f"{self.value(value.args)}, {self.value(value.keywords)}"
            return f"partial({self.value(value.func)}, {arguments})"
        if isinstance(value, types.MethodType):
            return f"method({self.value(value.__func__)}, {self.value(value.__self__)})"
        if isinstance(value, types.BuiltinFunctionType):
            return _qualified(value)
        if isinstance(value, list | tuple | Mapping | set | frozenset):
            return self._container(value)
        if isinstance(value, _BY_REPR):
            return repr(value)
        if isinstance(value, re.Pattern):
            return f"re({value.pattern!r}, {value.flags})"
        return self._instance(value)

    def _container(
        self,
        value: list[object]
        | tuple[object, ...]
        | Mapping[object, object]
        | set[object]
        | frozenset[object],
    ) -> str:
        """Describe a list, tuple, mapping or set (mappings and sets in sorted order)."""
        if id(value) in self._open:
            return "..."
        self._open.add(id(value))
        try:
            if isinstance(value, Mapping):
                items = sorted(f"{self.value(k)}: {self.value(v)}" for k, v in value.items())
                return "{" + ", ".join(items) + "}"
            if isinstance(value, set | frozenset):
                return "{" + ", ".join(sorted(self.value(item) for item in value)) + "}"
            inner = ", ".join(self.value(item) for item in value)
            return f"[{inner}]" if isinstance(value, list) else f"({inner})"
        finally:
            self._open.discard(id(value))

    def _instance(self, value: object) -> str:
        """Describe an object by its class and its state, where that state can be encoded.

        attrs and dataclass instances, and instances of the user's own
        classes, are described by their fields; anything else (a lock, a
        logger, a client) by its type alone (see the module docstring).
        """
        cls = type(value)
        if attrs.has(cls):
            state = [(f.name, getattr(value, f.name, None)) for f in attrs.fields(cls)]
        elif dataclasses.is_dataclass(cls):
            state = [(f.name, getattr(value, f.name, None)) for f in dataclasses.fields(cls)]
        elif isinstance(value, types.ModuleType):
            return f"module {value.__name__}"
        elif not is_library(cls.__module__) and isinstance(getattr(value, "__dict__", None), dict):
            state = sorted(vars(value).items())
        else:
            return self.cls(cls)
        return self._memo(value, lambda: self.cls(cls) + self._first_seen(value, "", state))


def _is_annotation(value: object) -> bool:
    """Tell a typing construct (`Literal['a']`, `tuple[str, ...]`, `int | None`) from a value."""
    return typing.get_origin(value) is not None or isinstance(
        value, typing.TypeVar | typing.ForwardRef
    )


def _missing_as_none(value: object) -> object:
    return None if value is dataclasses.MISSING else value


def _classes_in(annotation: object) -> list[type]:
    """List the classes an annotation object names (`tuple[Source, ...]` names Source)."""
    if isinstance(annotation, type) and typing.get_origin(annotation) is None:
        return [annotation]
    found: list[type] = []
    origin = typing.get_origin(annotation)
    if isinstance(origin, type):
        found.append(origin)
    for argument in typing.get_args(annotation):
        found.extend(_classes_in(argument))
    return found


def any_value(value: Any) -> str:  # noqa: ANN401 - any value at all
    """Describe one value with a fresh `Describer`.

    >>> any_value({"b": {2, 1}, "a": (1.5, None)}) == any_value({"a": (1.5, None), "b": {1, 2}})
    True
    """
    return Describer().value(value)
