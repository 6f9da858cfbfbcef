"""Finding workflows in a folder of modules."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import pytest

from adws._optional import import_optional
from adws.discovery import discover_workflows, workflows_dir
from adws.testing import FakeModelAPI, Reply
from tests.conftest import start_adws

if TYPE_CHECKING:
    from pathlib import Path

GOOD = """
from returns.io import IOSuccess
from adws import Step, Workflow
flow = Workflow("good", (Step("a", lambda ctx: IOSuccess(ctx)),), description="A good one.")
alias = flow
"""


def test_workflows_are_found_by_name_and_broken_modules_are_named(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "broken.py").write_text("import nowhere_to_be_found\n")
    (tmp_path / "_helper.py").write_text("raise SystemExit('never imported')\n")
    (tmp_path / "exits.py").write_text("raise SystemExit(3)\n")
    catalog = discover_workflows(tmp_path)
    assert list(catalog.workflows) == ["good"]
    assert catalog.sources["good"] == tmp_path / "good.py"
    assert [str(error) for error in catalog.errors] == [
        "broken.py: ModuleNotFoundError: No module named 'nowhere_to_be_found' (line 1)",
        "exits.py: SystemExit: 3 (line 1)",
    ]


def test_a_workflow_name_defined_twice_is_an_error_for_the_second_file(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(GOOD)
    (tmp_path / "b.py").write_text(GOOD)
    catalog = discover_workflows(tmp_path)
    assert [str(error) for error in catalog.errors] == [
        "b.py: workflow 'good' is already defined in a.py"
    ]


def test_a_missing_folder_is_reported(tmp_path: Path) -> None:
    catalog = discover_workflows(tmp_path / "nope")
    assert (dict(catalog.workflows), [e.message for e in catalog.errors]) == (
        {},
        ["no such folder of workflow modules"],
    )


def test_a_file_that_is_not_a_module_is_reported(tmp_path: Path) -> None:
    (tmp_path / "data.py").mkdir()
    catalog = discover_workflows(tmp_path)
    assert len(catalog.errors) == 1
    assert catalog.errors[0].path.name == "data.py"


def test_the_folder_comes_from_the_flag_then_the_environment_then_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ADWS_WORKFLOWS", raising=False)
    assert workflows_dir(None, tmp_path) == tmp_path / "workflows"
    monkeypatch.setenv("ADWS_WORKFLOWS", "env_flows")
    assert workflows_dir(None, tmp_path) == tmp_path / "env_flows"
    assert workflows_dir("given", tmp_path) == tmp_path / "given"


def test_a_workflow_imported_from_another_module_is_listed_once(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(GOOD)
    (tmp_path / "b.py").write_text("from adws_workflows.a import flow\n")
    catalog = discover_workflows(tmp_path)
    assert (list(catalog.workflows), catalog.errors) == (["good"], ())
    assert catalog.sources["good"].name == "a.py"


def test_a_workflow_file_named_like_a_standard_module_shadows_nothing(tmp_path: Path) -> None:
    """`uuid.py` in the workflows folder must not replace the `uuid` run ids are made with."""
    import sys  # noqa: PLC0415 - the test looks at the interpreter's module table

    (tmp_path / "uuid.py").write_text(GOOD.replace('"good"', '"shadow"'))
    (tmp_path / "socket.py").write_text(
        "raise SystemExit('a workflow file was imported as socket')\n"
    )
    catalog = discover_workflows(tmp_path)
    assert list(catalog.workflows) == ["shadow"]
    import importlib  # noqa: PLC0415 - as above

    assert importlib.import_module("uuid").__file__ != str(tmp_path / "uuid.py")
    assert str(tmp_path.resolve()) == sys.path[-1]


def test_a_discovered_module_has_its_file_set(tmp_path: Path) -> None:
    (tmp_path / "where.py").write_text(
        GOOD + "from pathlib import Path\nHERE = Path(__file__).parent\n"
    )
    catalog = discover_workflows(tmp_path)
    assert not catalog.errors
    module = __import__("sys").modules["adws_workflows.where"]
    assert tmp_path == module.HERE


def test_a_fifo_named_like_a_module_is_reported_not_read(tmp_path: Path) -> None:
    """`adws list` in its own process: reading a FIFO would block it for ever."""
    folder = tmp_path / "workflows"
    folder.mkdir()
    (folder / "good.py").write_text(GOOD)
    os.mkfifo(folder / "pipe.py")
    (folder / "gone.py").symlink_to(tmp_path / "nowhere.py")
    process = start_adws(tmp_path, "list")
    out, err = process.communicate(timeout=60)
    assert (process.returncode, out) == (0, "good  A good one.\n")
    assert err.splitlines() == [
        "warning: could not load gone.py: not a regular file",
        "warning: could not load pipe.py: not a regular file",
    ]


SHADOW = """
from adws import OutputContract, Workflow, agent_step
from adws.testing import ScriptedAgent

flow = Workflow("shadowed", (agent_step("ask", prompt="p", agent=ScriptedAgent([]), contract=OutputContract(("A",))),))
"""


@pytest.mark.agent_process  # ClaudeAgent's session child runs, against the fake model API
def test_a_workflow_file_named_like_an_extra_is_not_taken_for_it(
    tmp_path: Path, fake_model_api: FakeModelAPI
) -> None:
    """ClaudeAgent imports the SDK in its own child (`python -P`): the workflow file is not it."""
    folder = tmp_path / "workflows"
    folder.mkdir()
    (folder / "claude_agent_sdk.py").write_text(SHADOW)
    (tmp_path / "claude_agent_sdk.py").write_text(SHADOW)  # in the working folder too
    fake_model_api.script(Reply.text("STATUS: done\nA: the real SDK answered"))
    env = fake_model_api.claude_env(tmp_path / "home")
    process = start_adws(tmp_path, "run", "shadowed", "--agent", "claude-sdk", "--json", env=env)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert json.loads(out)["inputs"]["a"] == "the real SDK answered"


def test_an_optional_extra_is_never_a_workflows_folder_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """import_optional refuses a module that discovery's folder holds under the extra's name."""
    (tmp_path / "adws_missing_extra.py").write_text(SHADOW)
    discover_workflows(tmp_path)
    monkeypatch.delitem(__import__("sys").modules, "adws_missing_extra", raising=False)
    with pytest.raises(ImportError) as caught:
        import_optional("adws_missing_extra")
    assert str(caught.value).startswith("No module named 'adws_missing_extra' is installed (")
    assert str(caught.value).endswith("adws_missing_extra.py in the workflows folder has its name)")
