"""`adws new NAME [--agent]`: a workflow module and its test, ready for strict CI.

What it writes passes ruff's default rules and `ruff format` (line length
88, the default) in an empty project, and, with the configuration it adds
to `pyproject.toml` for each tool that has none (ruff: `select = ["ALL"]`,
the few ignores every such project needs and the test ignores adws's own
tests use; mypy: strict, with the returns plugin; printed instead for a tool
configured already), every rule; `mypy --strict` and 100% line and branch
coverage too. It says how to install the test tools (`adws[test]`).
`tests/cli/test_cli_new.py` proves it on a fresh project, against adws
installed from its wheel. It never overwrites a file, and never writes
through a link: a symbolic link on the way to what it writes (a linked
`tests/` or `workflows/` folder) refuses the command before anything is
written, and a `pyproject.toml` that is a symbolic link or has other hard
links (rewriting it in place would change the file behind every name) is
left alone, its configuration printed instead. `pyproject.toml` is read
first: one that is not UTF-8 (TOML never is) refuses the command before
anything is written.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Final

from adws._checks import is_input_name
from adws.cli._args import UsageError
from adws.cli._options import add_workflows
from adws.cli._output import err
from adws.discovery import workflows_dir

if TYPE_CHECKING:
    import argparse

__all__ = [
    "LONGEST_NAME",
    "add_new",
    "cmd_new",
    "mypy_config",
    "render_module",
    "render_test",
    "ruff_config",
]

LONGEST_NAME: Final = 57
"""The longest workflow name `adws new` takes: its longest line with the name then has 88
columns (`    adws run NAME -i question="..."`), ruff's default line length."""

_PLAIN: Final = '''"""Greet a subject (replace this with what the workflow does).

Run it, and check it, with:

    adws run {name} -i subject=world
    adws check {name}
"""

from __future__ import annotations

from adws import Key, PipelineError, Step, Workflow, WorkflowContext
from returns.io import IOResult, IOSuccess

SUBJECT = Key("subject", str)
GREETING = Key("greeting", str)


def greet(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """Write a greeting for the subject."""
    greeting = f"Hello, {{ctx.get(SUBJECT)}}!"
    return IOSuccess(ctx.merge_outputs({{GREETING: greeting}}))


workflow = Workflow(
    "{name}",
    (Step("greet", greet, reads=(SUBJECT,), writes=(GREETING,)),),
    description="Greet a subject.",
    inputs=(SUBJECT.name,),
)
'''

_AGENT: Final = '''"""Ask an agent, then keep its checked answer (make it your own).

Claude Code is the default agent. Run it with:

    adws run {name} -i question="..."
"""

from __future__ import annotations

from adws import (
    Key,
    OutputContract,
    PipelineError,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
)
from adws.agents import CommandAgent
from adws.agents.parsers import claude_json
from returns.io import IOResult, IOSuccess

AGENT = CommandAgent("claude -p --output-format json", parse=claude_json, timeout=600)
"""Claude Code in print mode; the workflow's test module replaces it."""

QUESTION = Key("question", str)
ANSWER = Key("answer", str)
RESULT = Key("result", str)

PROMPT = "Answer this question in one paragraph: {{question}}"


def finish(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """Turn the agent's checked answer into the run's result."""
    return IOSuccess(ctx.merge_outputs({{RESULT: ctx.get(ANSWER).strip()}}))


workflow = Workflow(
    "{name}",
    (
        agent_step(
            "ask", prompt=PROMPT, agent=AGENT, contract=OutputContract(("ANSWER",))
        ),
        Step("finish", finish, reads=(ANSWER,), writes=(RESULT,)),
    ),
    description="Ask an agent a question and keep its checked answer.",
    inputs=(QUESTION.name,),
)
'''

_HEAD: Final = '''"""A workflow, end to end through the real executor, offline.

The workflow: {name}.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from adws.check import check_workflow
from adws.discovery import discover_workflows
from adws.testing import {imports}

if TYPE_CHECKING:
    from adws import Workflow

WORKFLOWS = Path(__file__).resolve().parents[1] / {workflows}
NAME = "{name}"


def load() -> Workflow:
    """Load the workflow the way `adws run` does."""
    return discover_workflows(WORKFLOWS).workflows[NAME]


def test_its_dataflow_has_no_errors() -> None:
    """Every step reads only what an earlier step wrote or the inputs declare."""
    assert [p for p in check_workflow(load()) if p.severity == "error"] == []
'''

_PLAIN_TEST: Final = '''

def test_it_greets_the_subject() -> None:
    """The greeting names the subject it was given."""
    report = run(load(), {{"subject": "world"}})
    assert report.status == "succeeded"
    assert report.inputs["greeting"] == "Hello, world!"
'''

_AGENT_TEST: Final = '''

def test_a_rejected_answer_is_retried_and_the_checked_one_kept() -> None:
    """A first answer without its report block is refused; the second one is kept."""
    answers = ["I think it is 42.", "STATUS: done\\nANSWER: It is 42.\\n"]
    agent = ScriptedAgent.by_step({{"ask": answers}})
    report = run(load(), {{"question": "What is the answer?"}}, agent=agent)
    assert report.status == "succeeded"
    assert report.inputs["result"] == "It is 42."
    assert [r.attempt for r in report["ask"].requests] == [1, 2]
'''


_RUFF: Final = """
[tool.ruff.lint]
select = ["ALL"]
ignore = [
    "COM812",  # the formatter puts trailing commas its own way
    "CPY001",  # the licence belongs in the project's metadata, not atop every file
    "ISC001",  # so it does implicit string concatenation
    "D203",    # D211 instead: no blank line before a class docstring
    "D213",    # D212 instead: a docstring's summary on its first line
]

[tool.ruff.lint.per-file-ignores]
# Workflows are loaded and tests collected by path: neither folder is a package.
{workflows} = ["INP001"]
# The ignores adws's own tests use.
"tests/**" = [
    "INP001",   # as above
    "S101",     # pytest's asserts are how tests check
    "ARG001",   # fixtures are requested for their side effects (a folder, a cwd)
    "D103",     # a test's name says what it tests; a docstring is optional
    "PLR2004",  # exact values in assertions are the point of a test
    "SLF001",   # tests may look at private state they own
    "S603",     # tests start `adws` as a subprocess on purpose
    "S607",     # and find it, and `python`, on PATH
]
"""

_MYPY: Final = """
[tool.mypy]
strict = true
plugins = ["returns.contrib.mypy.returns_plugin"]
files = [{workflows}, "tests"]
"""

_TOOLS: Final = "pip install 'adws[test]'"
"""The line that installs the test tools: pytest, mypy, ruff and hypothesis."""

_HEADER: Final = f"""\
# Written by `adws new`. The test tools (pytest, mypy, ruff, hypothesis):
#     {_TOOLS}
"""


def ruff_config(workflows: str = "workflows") -> str | None:
    """Return the ruff configuration (every rule) that `adws new` adds to pyproject.toml.

    None when the folder's name cannot be written in TOML.
    """
    pattern = toml_string(f"{workflows}/**")
    return None if pattern is None else _RUFF.format(workflows=pattern)


def mypy_config(workflows: str = "workflows") -> str | None:
    """Return the mypy configuration (strict, the returns plugin) `adws new` adds.

    None when the folder's name cannot be written in TOML.
    """
    folder = toml_string(workflows)
    return None if folder is None else _MYPY.format(workflows=folder)


def _configured(here: Path, text: str, tool: str) -> list[str]:
    """Name the files that configure `tool` already (pyproject.toml's text is `text`)."""
    if tool == "ruff":
        files = [name for name in ("ruff.toml", ".ruff.toml") if (here / name).exists()]
    else:
        files = [name for name in ("mypy.ini", ".mypy.ini") if (here / name).exists()]
        setup = here / "setup.cfg"
        if setup.is_file() and "[mypy" in setup.read_text(encoding="utf-8", errors="replace"):
            files.append("setup.cfg")
    return files + (["pyproject.toml"] if f"[tool.{tool}" in text else [])


_PURPOSE: Final = {
    "ruff": "to hold these files to every rule",
    "mypy": "to check these files strictly, with the returns plugin",
}


def _pyproject(here: Path) -> tuple[str, str | None]:
    """Read pyproject.toml before anything is written: its text, and why it is left alone.

    A symbolic link or a file with other hard links is not written through
    (its configuration is printed instead); one that cannot be read, or is
    not UTF-8, refuses the command (`UsageError`), nothing written.
    """
    pyproject = here / "pyproject.toml"
    if pyproject.is_symlink():  # writing through it could land outside the project
        return "", "pyproject.toml is a symbolic link"
    try:
        links = pyproject.stat().st_nlink if pyproject.exists() else 1
        data = pyproject.read_bytes() if pyproject.exists() else b""
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = (
            f"pyproject.toml is not UTF-8 (byte {data[exc.start]:#04x} at offset {exc.start});"
            " TOML is UTF-8: fix it, then run adws new again (nothing was written)"
        )
        raise UsageError(msg) from exc
    except OSError as exc:
        msg = f"cannot read pyproject.toml ({exc.strerror}); nothing was written"
        raise UsageError(msg) from exc
    if links > 1:
        return text, f"pyproject.toml has {links} hard links (writing it would change them all)"
    return text, None


def _configure(here: Path, workflows: str, text: str, unwritable: str | None) -> list[str]:
    """Add ruff's and mypy's configuration to pyproject.toml where none is; say what happened.

    `text` is pyproject.toml as read before anything was written; when
    `unwritable` says why it is left alone, the configuration is printed.
    """
    pyproject = here / "pyproject.toml"
    ruff, mypy = ruff_config(workflows), mypy_config(workflows)
    if ruff is None or mypy is None:
        return [
            "the workflows folder's name cannot be written in TOML; set up ruff and mypy yourself"
        ]
    configs = {"ruff": ruff, "mypy": mypy}
    if unwritable is not None:
        shown = "\n".join(config.strip() for config in configs.values())
        return [f"{unwritable}; {_PURPOSE['ruff']} and checked:\n{shown}"]
    said: list[str] = []
    added: dict[str, str] = {}
    for tool, config in configs.items():
        if config.strip() in text:
            continue  # an earlier `adws new` added it
        configured = _configured(here, text, tool)
        if configured:
            said.append(
                f"{tool} is configured in {configured[0]} already; {_PURPOSE[tool]},"
                f" use:\n{config.strip()}"
            )
        else:
            added[tool] = config
    if added:
        header = "" if _HEADER in text else _HEADER
        body = header + "".join(added.values())
        joined = text + ("\n" if text and not text.endswith("\n") else "") + body
        pyproject.write_text(joined if text else body.lstrip("\n"), encoding="utf-8")
        names = " and ".join(f"{tool}'s" for tool in added)
        said.insert(0, f"added {names} configuration to pyproject.toml")
    return said


def render_module(name: str, *, agent: bool) -> str:
    """Return the workflow module `adws new` writes."""
    return (_AGENT if agent else _PLAIN).format(name=name)


_ESCAPES: Final = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_SURROGATES: Final = range(0xD800, 0xE000)
_BYTE: Final = 0x100
_BMP: Final = 0x10000


def _escaped(char: str, quote: str) -> str:
    if char in _ESCAPES or char == quote:
        return _ESCAPES.get(char, "\\" + char)
    code = ord(char)
    if char.isprintable() and code not in _SURROGATES:
        return char
    if code < _BYTE:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < _BMP else f"\\U{code:08x}"


def python_literal(text: str) -> str:
    r"""Write `text` as a Python string literal, quoted as ruff's formatter would quote it.

    The text (a folder the user named) is data in the generated source,
    whatever it holds: quotes, backslashes, line breaks or a closing paren.

    >>> print(python_literal("workflows"), python_literal('a"b'), python_literal("c\\d\n\u2028"))
    "workflows" 'a"b' "c\\d\n\u2028"
    """
    quote = "'" if text.count('"') > text.count("'") else '"'
    return quote + "".join(_escaped(char, quote) for char in text) + quote


def toml_string(text: str) -> str | None:
    r"""Write `text` as a TOML basic string, or None when TOML cannot hold it (a lone surrogate).

    >>> toml_string('a"b'), toml_string(chr(0xD800))
    ('"a\\"b"', None)
    """
    if any(ord(char) in _SURROGATES for char in text):
        return None
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def render_test(name: str, *, agent: bool, workflows: str = "workflows") -> str:
    """Return the test module `adws new` writes next to it."""
    imports = "ScriptedAgent, run" if agent else "run"
    head = _HEAD.format(name=name, imports=imports, workflows=python_literal(workflows))
    return head + (_AGENT_TEST if agent else _PLAIN_TEST).format(name=name)


def _create(path: Path, text: str) -> None:
    """Create a new file; refuse one that exists, a symbolic link included (O_EXCL)."""
    try:
        with path.open("x", encoding="utf-8") as created:
            created.write(text)
    except FileExistsError as exc:
        msg = f"{path} appeared meanwhile; adws new never overwrites a file"
        raise UsageError(msg) from exc


def add_new(parser: argparse.ArgumentParser) -> None:
    """Declare `adws new NAME [--agent]`."""
    parser.description = (
        "Write WORKFLOWS/NAME.py and tests/test_workflow_NAME.py: a workflow and "
        "its offline test that pass ruff (every rule), mypy --strict and 100% branch "
        "coverage as generated."
    )
    add_workflows(parser)
    parser.add_argument("name", help="the workflow's name (lower_snake_case)")
    parser.add_argument(
        "--agent", action="store_true", help="start from an agent step and its checked answer"
    )


def _linked(base: Path, path: Path) -> Path | None:
    """Return the first symbolic link on the way from `base` to `path`, or None.

    `path` is read as written (not resolved): each of its parts below `base`
    (all of them when it lies elsewhere) is looked at in turn.
    """
    start = base if path.is_relative_to(base) else Path(path.anchor)
    at = start
    for part in path.relative_to(start).parts:
        at /= part
        if at.is_symlink():
            return at
    return None


def _refuse_links(base: Path, *folders: Path) -> None:
    """Refuse to write through a symbolic link on the way to, or at, any of `folders`."""
    for folder in folders:
        link = _linked(base, folder)
        if link is not None:
            shown = link.relative_to(base) if link.is_relative_to(base) else link
            msg = (
                f"{shown} is a symbolic link; adws new never writes through one (the files"
                f" would land where it points): write into a real folder (--workflows DIR)"
            )
            raise UsageError(msg)


def cmd_new(args: argparse.Namespace) -> int:
    """Write workflows/NAME.py and tests/test_workflow_NAME.py; never overwrite."""
    name = args.name
    if not is_input_name(name):
        msg = f"workflow name {name!r} is not an identifier: use lower-case letters, digits and _"
        raise UsageError(msg)
    if len(name) > LONGEST_NAME:
        msg = (
            f"workflow name {name!r} has {len(name)} characters; adws new takes at most"
            f" {LONGEST_NAME}, so that no line it writes passes 88 columns"
        )
        raise UsageError(msg)
    cwd = Path.cwd()
    given = workflows_dir(args.workflows, cwd)
    _refuse_links(cwd, given, cwd / "tests")  # the files themselves: never overwritten (below)
    here, folder = cwd.resolve(), given.resolve()
    where = folder.relative_to(here) if folder.is_relative_to(here) else folder
    module = where / f"{name}.py"
    test = Path("tests") / f"test_workflow_{name}.py"
    # lexists: a dangling symbolic link is there too, and writing through it would land elsewhere.
    existing = [str(path) for path in (module, test) if os.path.lexists(path)]
    if existing:
        verb = "exists" if len(existing) == 1 else "exist"
        msg = f"{' and '.join(existing)} {verb} already; adws new never overwrites a file"
        raise UsageError(msg)
    text, unwritable = _pyproject(here)  # read first: a broken one refuses before any write
    folder.mkdir(parents=True, exist_ok=True)
    test.parent.mkdir(parents=True, exist_ok=True)
    _create(module, render_module(name, agent=args.agent))
    _create(test, render_test(name, agent=args.agent, workflows=where.as_posix()))
    err(f"wrote {module} and {test}; run them with: pytest {test}")
    for said in _configure(here, where.as_posix(), text, unwritable):
        err(said)
    err(f"the test tools (pytest, mypy, ruff, hypothesis): {_TOOLS}")
    return 0
