"""The documentation site: built strictly from docs/, the README and adws's own parser."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from adws.cli._parser import build_parser

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def build(config: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """Run `mkdocs build --strict` as `make check` does, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", config, "-d", out],
        cwd=config.parent,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"},
    )


def hooks() -> ModuleType:
    """Load docs/hooks.py by path, as mkdocs does."""
    spec = importlib.util.spec_from_file_location("hooks", REPO / "docs" / "hooks.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def commands() -> list[str]:
    return [name for name, _, _ in hooks().commands(build_parser())]


def test_the_site_builds_strictly_with_every_command_in_the_cli_reference(tmp_path: Path) -> None:
    done = build(REPO / "mkdocs.yml", tmp_path / "site")

    assert done.returncode == 0, done.stderr
    page = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    for name in commands():
        assert f'id="adws-{name}"' in page
        assert f"usage: adws {name}" in page
    api = (tmp_path / "site" / "reference" / "api" / "index.html").read_text()
    for name in ("adws.Workflow", "adws.testing.approve", "adws.journal.Journal", "adws.runs.Runs"):
        assert f'id="{name}"' in api
    front = (tmp_path / "site" / "index.html").read_text()
    assert 'href="getting-started/"' in front


def test_the_cli_reference_names_every_command_adws_help_lists_by_group() -> None:
    shown = build_parser().format_help()
    groups: dict[str, list[str]] = {}
    for line in shown.splitlines():
        if line.endswith(":") and not line.startswith(" "):
            group = groups.setdefault(line[:-1], [])
        elif line.startswith("  ") and line[2] != " " and groups:
            group.append(line.split("  ")[1].strip())
    assert groups == {
        "run and author": [
            "new", "list", "show", "check", "validate", "run", "resume", "batch", "eval",
        ],
        "see": ["runs", "status", "report", "cost", "worktrees", "seeds", "caps"],
        "decide": ["approvals", "approve", "reject", "serve", "cancel"],
        "team": ["submit", "worker", "workers", "watch", "trigger", "mcp"],
        "maintain": ["runs --prune", "worktrees gc", "resume --due"],
        "options": ["-h, --help", "--version"],
    }  # fmt: skip
    listed = [
        name for names in groups.values() for name in names if name[0] != "-" and " " not in name
    ]
    assert listed == commands()
    assert "held-run" not in commands()  # the internal command `adws --help` hides


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "docs", copy / "docs")
    shutil.copy2(REPO / "mkdocs.yml", copy / "mkdocs.yml")
    shutil.copy2(REPO / "README.md", copy / "README.md")
    (copy / "adws").symlink_to(REPO / "adws")
    recipes = copy / "docs" / "recipes.md"
    recipes.write_text(recipes.read_text() + "\nSee [the missing page](missing.md).\n")

    done = build(copy / "mkdocs.yml", tmp_path / "site")

    assert done.returncode == 1
    assert "'missing.md'" in done.stderr
    assert "Doc file 'recipes.md' contains a link 'missing.md'" in done.stderr


def test_a_cli_page_without_its_marker_is_refused() -> None:
    page = SimpleNamespace(file=SimpleNamespace(src_uri="reference/cli.md"))
    with pytest.raises(ValueError, match="lost its marker") as raised:
        hooks().on_page_markdown("# Command line reference\n", page)
    assert str(raised.value) == (
        "docs/reference/cli.md lost its marker '<!-- the commands, rendered from the parser by"
        " docs/hooks.py -->': put it back where the commands go"
    )


def test_other_pages_pass_through_unchanged() -> None:
    page = SimpleNamespace(file=SimpleNamespace(src_uri="recipes.md"))
    assert hooks().on_page_markdown("# Recipes\n", page) == "# Recipes\n"


def test_the_readme_is_a_front_page_under_250_lines() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) < 250
    assert "make demo" in readme
    assert "make check" in readme
    assert "](docs/" not in hooks().front_page()


def test_the_readme_says_each_paragraph_once_and_names_every_extra_a_user_installs() -> None:
    readme = (REPO / "README.md").read_text()
    prose = [
        block.strip()
        for index, part in enumerate(readme.split("```"))
        if index % 2 == 0  # outside the code blocks
        for block in part.split("\n\n")
        if block.strip()
    ]
    assert [block for block in prose if prose.count(block) > 1] == []
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for extra in sorted(set(extras) - {"dev", "bench"}):  # adws's own tools, not a user's
        assert f"`{extra}`" in readme, extra


def test_the_cost_guide_says_how_the_claude_preset_reads_its_output() -> None:
    from adws.agents.presets import PRESETS  # noqa: PLC0415 - the preset the guide describes

    guide = (REPO / "docs" / "guides" / "cost.md").read_text()
    assert f"`--agent claude` runs `{' '.join(PRESETS['claude'].argv)}`" in guide.replace("\n", " ")
    assert "--output-format json`" not in guide


RECIPE_MARKER = "<!-- the bug-fix recipe: tests/test_docs.py runs this block with pytest -->"


def recipe() -> str:
    """Read the verification guide's bug-fix recipe: the Python block after its marker."""
    guide = (REPO / "docs" / "guides" / "verification.md").read_text()
    after = guide.split(RECIPE_MARKER, 1)[1]
    return after.split("```python\n", 1)[1].split("\n```\n", 1)[0]


def test_the_bug_fix_recipe_is_a_test_that_passes(tmp_path: Path) -> None:
    module = tmp_path / "test_fix_bug.py"
    module.write_text(recipe() + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(module)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
