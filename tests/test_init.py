"""The public API: every name in __all__ resolves, lazily."""

from __future__ import annotations

import subprocess
import sys

import pytest

import adws


def test_every_public_name_resolves_and_all_is_sorted() -> None:
    assert adws.__all__ == sorted(adws.__all__)
    for name in adws.__all__:
        assert getattr(adws, name) is not None
    assert dir(adws) == sorted(adws.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="module 'adws' has no attribute 'nope'"):
        _ = adws.nope


def test_importing_adws_loads_no_engine_module_until_asked() -> None:
    code = "import sys, adws; print(sorted(m for m in sys.modules if m.startswith('adws')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # The loader of the lazy names and the error it raises for an unknown one, nothing else.
    assert done.stdout == "['adws', 'adws._exceptions', 'adws._lazy']\n"


def test_adws_error_is_the_root_of_what_adws_raises_and_each_refines_a_builtin() -> None:
    from adws.cli._args import UsageError  # noqa: PLC0415 - the command line's own error

    with pytest.raises(adws.AdwsError) as raised:
        _ = adws.nope
    assert isinstance(raised.value, AttributeError)
    assert issubclass(UsageError, adws.AdwsError)
    assert issubclass(UsageError, ValueError)


def test_the_testing_kit_loads_its_names_lazily_too() -> None:
    import adws.testing  # noqa: PLC0415 - the import under test

    assert dir(adws.testing) == sorted(adws.testing.__all__)
    for name in adws.testing.__all__:
        assert getattr(adws.testing, name) is not None
    with pytest.raises(AttributeError, match=r"module 'adws\.testing' has no attribute 'nope'"):
        _ = adws.testing.nope
