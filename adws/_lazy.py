"""Lazy public names: a package imports a name's module the first time it is asked for."""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

from adws._exceptions import NoSuchNameError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["lazy_names"]


def lazy_names(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """Return the module `__getattr__` and `__dir__` that load `homes[name]` on first use."""

    def getattr_(name: str) -> object:
        home = homes.get(name)
        if home is None:
            msg = f"module {package!r} has no attribute {name!r}"
            raise NoSuchNameError(msg)
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)
        return value

    def dir_() -> list[str]:
        return sorted(homes)

    return getattr_, dir_
