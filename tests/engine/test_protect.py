"""`protect=`'s rules and guard: whole files by glob, TOML tables, exact paths, read from disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from adws.engine.protect import Guard, Rules, check_protect
from tests.engine.bugs import git, seeded

PYPROJECT = '[project]\nname = "words"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'
RULES = Rules.of(("tests/**", "**/pyproject.toml[tool.pytest]"), exact=("notes.txt",))


def test_a_rule_with_a_toml_key_protects_that_table_only() -> None:
    expected = Rules(
        ("tests/**",), (("**/pyproject.toml", "tool.pytest"),), frozenset({"notes.txt"})
    )
    assert expected == RULES
    assert RULES.texts() == ["tests/**", "**/pyproject.toml[tool.pytest]", "notes.txt"]
    assert (RULES.covers("pyproject.toml"), RULES.watches("pyproject.toml")) == (False, True)
    assert Rules.of(("tests/[ab]",)).globs == ("tests/[ab]",)  # a glob's class, not a table
    assert not Rules()


def test_protect_must_be_globs() -> None:
    with pytest.raises(TypeError, match=r"^w: protect must be a tuple of globs"):
        check_protect("w", "tests/**")
    with pytest.raises(TypeError, match=r"^w: protect must hold non-empty glob strings"):
        check_protect("w", ["tests/**", 3])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return seeded(tmp_path / "repo", extra={"pyproject.toml": PYPROJECT, "notes.txt": "n\n"})


@pytest.mark.parametrize("reference", ["disk", "commit"])
def test_the_table_may_not_change_but_the_rest_of_the_file_may(
    project: Path, reference: str
) -> None:
    guard = (
        Guard.on_disk("s", RULES, str(project))
        if reference == "disk"
        else Guard.at_commit("s", RULES, str(project), git(project, "rev-parse", "HEAD"))
    )
    pyproject = project / "pyproject.toml"
    pyproject.write_text(PYPROJECT.replace('name = "words"', 'name = "words"\nversion = "2"'))
    assert guard.check() is None
    pyproject.write_text(PYPROJECT.replace('"-q"', '"-q -p no:randomly --deselect x"'))
    assert guard.changed() == ("pyproject.toml",)
    pyproject.write_text("[tool.pytest\n")
    assert guard.changed() == ("pyproject.toml",)  # unparsable: it may say anything
    pyproject.unlink()
    assert guard.changed() == ("pyproject.toml",)
    (project / "tests" / "pyproject.toml").write_text("[tool.pytest.ini_options]\nx = 1\n")
    (project / "tests" / "other.toml").write_text("[tool.pytest.ini_options]\nx = 1\n")
    assert guard.changed() == ("pyproject.toml", "tests/other.toml", "tests/pyproject.toml")


def test_a_new_toml_file_without_the_table_is_no_change(project: Path) -> None:
    guard = Guard.on_disk("s", Rules.of(("**/pyproject.toml[tool.pytest]",)), str(project))
    (project / "sub").mkdir()
    (project / "sub" / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert guard.check() is None


def test_exact_paths_and_globs_name_the_files_changed_and_what_to_restore(project: Path) -> None:
    guard = Guard.on_disk("s", RULES, str(project))
    (project / "notes.txt").write_text("other\n")
    (project / "tests" / "test_one.py").chmod(0o755)
    error = guard.check()
    assert error is not None
    assert (error.step_name, error.error_type) == ("s", "Tampered")
    assert error.context == {
        "files": ("notes.txt", "tests/test_one.py"),
        "protect": ("tests/**", "**/pyproject.toml[tool.pytest]", "notes.txt"),
    }
    assert error.message == (
        "changed protected files notes.txt, tests/test_one.py: restore notes.txt,"
        " tests/test_one.py; do not change tests/** or **/pyproject.toml[tool.pytest] or"
        " notes.txt (they are how the work is checked)"
    )


def test_a_workspace_that_cannot_be_read_fails_closed(tmp_path: Path, project: Path) -> None:
    never = Guard.on_disk("s", RULES, str(tmp_path / "missing"))
    error = never.check()
    assert error is not None
    assert (error.error_type, error.context["permanent"]) == ("Tampered", True)
    assert error.message.startswith(
        "protect='tests/** or **/pyproject.toml[tool.pytest] or notes.txt' cannot read the"
        f" workspace {tmp_path / 'missing'} to compare: "
    )
    assert never.links == {}
    gone = Guard.on_disk("s", RULES, str(project))
    assert gone.check(str(tmp_path / "missing")) is not None
    outside_git = Guard.at_commit("s", RULES, str(tmp_path), "HEAD")
    assert isinstance(outside_git.reference, OSError)
    assert outside_git.check() is not None


def test_the_links_a_workspace_had_are_kept_for_its_verify_tree(project: Path) -> None:
    (project / "etc").symlink_to("/etc")
    assert Guard.on_disk("s", Rules(), str(project)).links == {"etc": "/etc"}
