"""Load the shipped workflows once, the way the CLI does."""

from __future__ import annotations

import pytest

from adws import Workflow
from adws.discovery import discover_workflows
from tests.conftest import REPO

SHIPPED = REPO / "workflows"


@pytest.fixture(scope="session")
def shipped() -> dict[str, Workflow]:
    catalog = discover_workflows(SHIPPED)
    assert catalog.errors == ()
    return dict(catalog.workflows)
