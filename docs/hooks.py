"""MkDocs hooks: the front page from README.md, the CLI reference from adws's own parser.

Registered in mkdocs.yml (`hooks:`). Nothing here is hand-kept: the front page is the README
with its `docs/` links made relative to the site, and the command line reference is rendered
from `adws.cli._parser.build_parser()` at every build, so it cannot drift from `adws --help`.
"""

from __future__ import annotations

import argparse
import functools
import html
from pathlib import Path
from typing import Any

from adws.cli._parser import build_parser

ROOT = Path(__file__).resolve().parents[1]
CLI_PAGE = "reference/cli.md"
MARKER = "<!-- the commands, rendered from the parser by docs/hooks.py -->"
WIDTH = 88


def commands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """Return every command's name, one-line help and parser, in the order `adws --help` lists.

    A command whose help is suppressed (an internal one, such as a batch's worker entry) is
    left out, as `adws --help` leaves it out.
    """
    # argparse keeps its subcommands only in private attributes; this is the one place we read them.
    found = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001 - see above
    helps = {choice.dest: choice.help or "" for choice in found._choices_actions}  # noqa: SLF001 - see above
    return [(name, helps[name], sub) for name, sub in found.choices.items() if name in helps]


def fence(text: str) -> str:
    """Put text in a fenced block the Markdown renderer leaves alone."""
    return f"```text\n{text.rstrip()}\n```\n"


def help_text(parser: argparse.ArgumentParser) -> str:
    """Return the parser's `--help`, wrapped at a fixed width whatever the terminal."""
    parser.formatter_class = functools.partial(argparse.HelpFormatter, width=WIDTH)
    return parser.format_help()


def cli_reference() -> str:
    """Render `adws --help` and every command's `--help`, one section per command."""
    parser = build_parser()
    parts = ["## adws\n", fence(help_text(parser))]
    for name, summary, sub in commands(parser):
        parts.append(f"## adws {name}\n")
        if summary:
            parts.append(f"{html.escape(summary[0].upper() + summary[1:])}.\n")
        parts.append(fence(help_text(sub)))
    return "\n".join(parts)


def front_page() -> str:
    """Return README.md with its links into docs/ made relative to the site's root."""
    return (ROOT / "README.md").read_text(encoding="utf-8").replace("](docs/", "](")


def on_files(files: Any, config: Any) -> Any:  # noqa: ANN401 - mkdocs' Files and config
    """Add the front page, made from README.md, as index.md."""
    from mkdocs.structure.files import File  # noqa: PLC0415 - only a build needs mkdocs

    files.append(File.generated(config, "index.md", content=front_page()))
    return files


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:  # noqa: ANN401 - mkdocs' Page
    """Fill the CLI reference's marker with the commands."""
    if page.file.src_uri != CLI_PAGE:
        return markdown
    if MARKER not in markdown:
        msg = f"docs/{CLI_PAGE} lost its marker {MARKER!r}: put it back where the commands go"
        raise ValueError(msg)
    return markdown.replace(MARKER, cli_reference())
