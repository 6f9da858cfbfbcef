"""`adws report`: write one run, or a batch, as a self-contained HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final

from adws.cli import EXIT_CODES
from adws.cli._args import UsageError
from adws.cli._eval_journal import evaluation_of
from adws.cli._options import add_journal, journal_of
from adws.cli._output import out, write_text
from adws.cli.runs import find_run, unreadable_runs
from adws.journal import DEFAULT_PATH
from adws.journal.store.batches import find_batch
from adws.journal.store.diffs import diffs_of
from adws.journal.store.exchanges import exchanges
from adws.journal.store.workspaces import approvals_of, worktrees_of
from adws.render.evaluation import eval_page
from adws.render.report import RunView, batch_page, run_page

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from adws.journal import Journal


__all__ = ["add_report", "cmd_report"]


def add_report(parser: argparse.ArgumentParser) -> None:
    """Declare `adws report RUN [-o FILE.html]`, `adws report --batch B` and `--eval ID`."""
    parser.description = (
        "Write one HTML page (inline CSS and script; it loads nothing) for RUN: "
        "its workflow, status, duration and spend, a timeline of steps, branches and "
        "attempts, the step diagram coloured by outcome, and each attempt's error, prompts "
        "and answers. With --batch, one page for every run of batch B."
    )
    add_journal(parser)
    parser.add_argument("run", nargs="?", help="run id (or a unique prefix)")
    parser.add_argument("--batch", metavar="BATCH", help="a page for every run of this batch")
    parser.add_argument(
        "--eval",
        metavar="ID",
        help="the page of an evaluation (adws eval): a bar and its 95%% interval per variant",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE.html",
        help="where to write the page (- for stdout; default: .adws/reports/RUN.html beside "
        "the journal)",
    )


EXIT_OK: Final = EXIT_CODES["succeeded"]


def _view(journal: Journal, run_id: str, *, calls: bool = True) -> RunView:

    record = find_run(journal, run_id)
    found = record.run_id  # the whole id, when a prefix was given
    calls_made = tuple(exchanges(journal, found)) if calls else ()
    return RunView(
        record,
        tuple(attempt.checked() for attempt in journal.attempts(found)),  # outputs are shown
        calls_made,
        tuple(worktrees_of(journal, found)),
        tuple(approvals_of(journal, found)),
        tuple(diffs_of(journal, found)) if calls else (),
    )


def _batch(journal: Journal, batch: str) -> tuple[str, str, list[RunView]]:

    found = find_batch(journal, batch)
    if isinstance(found, str):
        raise UsageError(found)
    batch_id, workflow, _, _ = found
    views = [
        _view(journal, record.run_id, calls=record.status != "succeeded")
        for record in journal.runs(batch=batch_id)
    ]
    return batch_id, batch_page(batch_id, workflow, views), views


def cmd_report(args: argparse.Namespace) -> int:
    """Write the page of a run (or of a batch) and print where it went.

    Rows the journal cannot read are named on stderr after the page is
    written (it shows what could be read), and the exit code is 1.
    """
    if [args.run, args.batch, args.eval].count(None) != 2:  # noqa: PLR2004 - one of three
        msg = "give a run id, --batch BATCH or --eval ID: one of them"
        raise UsageError(msg)
    journal = journal_of(args, readonly=True)
    if args.eval is not None:
        name, workflow, _, scores, comparison = evaluation_of(journal, args.eval)
        verdict = None if comparison is None else comparison.verdict
        text = eval_page(name, workflow, [s.to_dict() for s in scores], verdict)
        views: Sequence[RunView] = []
    elif args.batch is not None:
        name, text, views = _batch(journal, args.batch)
    else:
        view = _view(journal, args.run)
        name, text, views = view.record.run_id, run_page(view), [view]
    if args.output == "-":
        write_text(text)
        return _unreadable(journal, views)

    # A shared journal's reports go where a local one's would: beside `.adws/runs.db`.
    home = journal.path.parent if isinstance(journal.path, Path) else DEFAULT_PATH.parent
    path = Path(args.output) if args.output else home / "reports" / f"{name}.html"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        msg = f"cannot write the report {path}: {exc.strerror}; choose another with -o FILE.html"
        raise UsageError(msg) from exc
    out(str(path))
    return _unreadable(journal, views)


def _unreadable(journal: Journal, views: Sequence[RunView]) -> int:
    """Name the rows the page could not read whole (it shows the rest); return the exit code."""
    return unreadable_runs(
        journal,
        [(view.record, view.attempts, view.exchanges) for view in views],
        {view.record.run_id: view.diffs for view in views if view.diffs},
    )
