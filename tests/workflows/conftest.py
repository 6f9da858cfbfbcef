"""Load the shipped workflows once, the way the CLI does."""

from __future__ import annotations

import pytest

from adws import Workflow
from adws.discovery import discover_workflows
from tests.conftest import REPO

SHIPPED = REPO / "workflows"
NOTHING_PROVED = (
    "no target had to pass: the change was only checked to break nothing (name tests in"
    " must_pass, or reproduce the problem first)\nnew failures: none\n"
    "pre-existing failures left: none\nflaky: none"
)
"""What the checks proved with neither `must_pass` nor `reproduce`: only that nothing broke."""


@pytest.fixture(scope="session")
def shipped() -> dict[str, Workflow]:
    catalog = discover_workflows(SHIPPED)
    assert catalog.errors == ()
    return dict(catalog.workflows)
