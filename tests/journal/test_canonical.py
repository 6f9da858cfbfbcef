"""Canonical descriptions: what changes a description, and what never does."""

from __future__ import annotations

import dataclasses
import decimal
import enum
import functools
import importlib.util
import json
import re
import sys
import threading
import types
import typing
import uuid
from pathlib import Path, PurePosixPath

import attrs
import pytest

from adws import Key
from adws.journal.identity._canonical import Describer, any_value, is_library


def load(folder: Path, name: str, source: str) -> types.ModuleType:
    """Import `source` as module `name` from a file, as discovery imports a workflow."""
    path = folder / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


SCHEMA = """
from __future__ import annotations

import enum
import functools
from typing import Literal

import attrs


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


def positive(instance, attribute, value):
    if value < 0:
        raise ValueError("negative")


@attrs.frozen
class Part:
    name: str
    size: int = attrs.field(default=1, validator=positive)


@attrs.frozen
class Report:
    kind: Literal["bug", "feature"]
    colour: Colour
    parts: tuple[Part, ...]
    labels: frozenset[str] = attrs.field(factory=frozenset, metadata={"description": "tags"})
    LIMIT = 3
    _private = object()

    def title(self) -> str:
        return self.kind

    @property
    def size(self) -> int:
        return len(self.parts)

    @classmethod
    def empty(cls):
        return cls("bug", Colour.RED, ())

    @staticmethod
    def helper():
        return 1

    @functools.cached_property
    def cached(self):
        return 2
"""

EDITS = {
    "a Literal choice": ('Literal["bug", "feature"]', 'Literal["bug", "feature", "question"]'),
    "an enum member": ('BLUE = "blue"', 'BLUE = "navy"'),
    "a nested class's field": (
        "size: int = attrs.field(default=1",
        "size: int = attrs.field(default=2",
    ),
    "a validator's code": ('raise ValueError("negative")', 'raise ValueError("below zero")'),
    "a method": ("return self.kind", "return self.kind.upper()"),
    "a property": ("return len(self.parts)", "return len(self.parts) + 1"),
    "a class method": ('cls("bug"', 'cls("feature"'),
    "a static method": ("return 1", "return 11"),
    "a cached property": ("return 2", "return 22"),
    "a field's metadata": ('{"description": "tags"}', '{"description": "labels"}'),
    "a class constant": ("LIMIT = 3", "LIMIT = 4"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_editing_a_schema_changes_its_description(tmp_path: Path, edit: str) -> None:
    before = load(tmp_path, f"schema_before_{len(edit)}", SCHEMA)
    old, new = EDITS[edit]
    assert old in SCHEMA
    after = load(tmp_path, f"schema_after_{len(edit)}", SCHEMA.replace(old, new))
    assert Describer().cls(before.Report) != Describer().cls(after.Report)


def test_what_attrs_generates_and_private_attributes_are_not_described(tmp_path: Path) -> None:
    first = load(tmp_path, "generated_a", SCHEMA)
    again = load(tmp_path, "generated_b", SCHEMA.replace("_private = object()", "_private = 1"))
    # Same source, two modules: equal, though each class has its own generated __hash__.
    assert Describer().cls(first.Report) == Describer().cls(again.Report)
    assert "__hash__" in vars(first.Report)


def test_a_class_outside_the_users_code_is_named_not_described() -> None:
    assert Describer().cls(Path) == "pathlib:Path"
    assert Describer().value(len) == "builtins:len"
    assert Describer().value(json.dumps) == "json:dumps"
    assert Describer().value(json) == "module json"


DATACLASSES = """
import dataclasses
from typing import TypedDict


@dataclasses.dataclass(frozen=True)
class Weights:
    words: int = 2
    tags: tuple[str, ...] = dataclasses.field(default_factory=tuple)


class Issue(TypedDict, total=False):
    title: str
    body: str


class Model:
    model_fields = {"name": "FieldInfo(annotation=str, required=True)"}
    name: str
"""


def test_dataclasses_typed_dicts_and_models_are_described_by_their_fields(tmp_path: Path) -> None:
    module = load(tmp_path, "fields_a", DATACLASSES)
    describer = Describer()
    assert len(describer.fields(module.Weights)) == 2
    assert describer.fields(module.Issue) == [
        "title: <class 'str'>['builtins:str']",
        "body: <class 'str'>['builtins:str']",
        "{}",
    ]
    assert describer.fields(module.Model) == [
        "name: <class 'str'>['builtins:str']",
        "name: 'FieldInfo(annotation=str, required=True)'",
    ]
    edited = load(tmp_path, "fields_b", DATACLASSES.replace("words: int = 2", "words: int = 3"))
    assert Describer().cls(module.Weights) != Describer().cls(edited.Weights)
    assert Describer().value(module.Weights()) != Describer().value(module.Weights(words=9))


class Shade(enum.IntEnum):
    """An int enum: described by its member's name, not its number."""

    DARK = 1


@attrs.frozen
class Node:
    """A class whose annotation names itself."""

    name: str
    children: tuple[Node, ...] = ()


class Plain:
    """A class of the user's with state of its own."""

    def __init__(self, value: int) -> None:
        self.value = value

    def double(self) -> int:
        return self.value * 2


@pytest.mark.parametrize(
    ("value", "described"),
    [
        (Shade.DARK, "tests.journal.test_canonical:Shade.DARK"),
        (decimal.Decimal("1.5"), "Decimal('1.5')"),
        (PurePosixPath("/a"), "PurePosixPath('/a')"),
        (uuid.UUID(int=1), "UUID('00000000-0000-0000-0000-000000000001')"),
        (re.compile("a+", re.IGNORECASE), "re('a+', 34)"),
        ([1, (2, None)], "[1, (2, None)]"),
        (b"x", "b'x'"),
        (typing.ForwardRef("X"), "ForwardRef('X')[]"),
        (typing.Literal["a", "b"], "typing.Literal['a', 'b'][]"),
    ],
)
def test_values_are_described_by_their_contents(value: object, described: str) -> None:
    assert Describer().value(value) == described


def test_objects_without_a_stable_encoding_count_by_their_type_alone() -> None:
    assert any_value(threading.Lock()) == any_value(threading.Lock()) == "_thread:lock"
    assert any_value(object()) == "builtins:object"


def test_instances_of_the_users_classes_are_described_by_their_state() -> None:
    assert any_value(Plain(1)) == any_value(Plain(1))
    assert any_value(Plain(1)) != any_value(Plain(2))
    assert any_value(Plain(1).double) != any_value(Plain(2).double)
    assert any_value(Key("k", tuple[str, ...])) != any_value(Key("k", tuple[int, ...]))


def test_recursive_classes_and_values_are_described_once() -> None:
    looped: list[object] = []
    looped.append(looped)
    node = Node("a", (Node("b"),))
    assert any_value(node) == any_value(Node("a", (Node("b"),)))
    assert any_value(looped).startswith("[")
    assert Describer().cls(Node) == Describer().cls(Node)


def test_a_partial_is_described_by_its_function_and_arguments() -> None:
    first = functools.partial(Plain, 1)
    assert any_value(first) == any_value(functools.partial(Plain, 1))
    assert any_value(first) != any_value(functools.partial(Plain, 2))


def test_library_code_is_recognised_by_where_it_lives() -> None:
    assert (is_library(None), is_library("adws"), is_library("tests.journal.test_canonical")) == (
        True,
        True,
        False,
    )
    assert is_library("a_module_nobody_imported")


def test_a_module_without_a_file_counts_as_library_code() -> None:
    module = types.ModuleType("no_file_module")
    exec("class Thing:\n    pass\n", vars(module))  # noqa: S102 - the test builds a module by hand
    sys.modules["no_file_module"] = module
    try:
        assert Describer().cls(module.Thing) == "no_file_module:Thing"
    finally:
        del sys.modules["no_file_module"]


CONSTANTS = """
from returns.io import IOSuccess

FACTOR = 2
SEEN = []


def step(ctx):
    SEEN.append(1)
    return IOSuccess(ctx.merge_outputs({"x": FACTOR}))


def make(extra):
    def inner(ctx):
        extra.append(1)
        return IOSuccess(ctx)

    return inner
"""


def test_a_value_is_described_as_the_process_first_saw_it(tmp_path: Path) -> None:
    module = load(tmp_path, "constants_a", CONSTANTS)
    first = Describer().function(module.step)
    module.SEEN.append("mutated while a run ran")
    assert Describer().function(module.step) == first
    inner = module.make([])
    before = Describer().function(inner)
    inner.__closure__[0].cell_contents.append(2)
    assert Describer().function(inner) == before
    edited = load(tmp_path, "constants_b", CONSTANTS.replace("FACTOR = 2", "FACTOR = 3"))
    assert Describer().function(edited.step) != first


@dataclasses.dataclass
class Box:
    """A dataclass holding anything."""

    item: object


def test_dataclass_instances_are_described_by_their_fields() -> None:
    assert any_value(Box(1)) != any_value(Box(2))
    assert any_value(Box({3, 1, 2})) == any_value(Box({2, 3, 1}))


LAZY = """
import functools


class Lazy:
    @functools.cached_property
    def value(self):
        return 1
"""


def test_a_cached_property_of_a_plain_class_is_described(tmp_path: Path) -> None:
    first = load(tmp_path, "lazy_a", LAZY)
    edited = load(tmp_path, "lazy_b", LAZY.replace("return 1", "return 2"))
    assert Describer().cls(first.Lazy) != Describer().cls(edited.Lazy)
    assert Describer().cls(first.Lazy) == Describer().cls(load(tmp_path, "lazy_c", LAZY).Lazy)
