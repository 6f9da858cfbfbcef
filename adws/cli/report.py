"""`adws report`: write one run, or a batch, as a self-contained HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final

from adws.cli import EXIT_CODES
from adws.cli._args import UsageError, require_journal
from adws.cli._output import out, write_text
from adws.cli.runs import find_run, unreadable_runs

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from adws.journal import Journal
    from adws.render.report import RunView

# Each command imports what it needs when it runs; see adws.cli.workflows.

__all__ = ["cmd_report"]

EXIT_OK: Final = EXIT_CODES["succeeded"]


def _view(journal: Journal, run_id: str, *, calls: bool = True) -> RunView:
    from adws.journal.diffs import diffs_of  # noqa: PLC0415 - see the note on imports
    from adws.journal.exchanges import exchanges  # noqa: PLC0415 - see the note on imports
    from adws.journal.workspaces import approvals_of, worktrees_of  # noqa: PLC0415 - as above
    from adws.render.report import RunView  # noqa: PLC0415 - see the note on imports

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
    from adws.journal.batches import find_batch  # noqa: PLC0415 - see the note on imports
    from adws.render.report import batch_page  # noqa: PLC0415 - see the note on imports

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
    journal = require_journal(args, readonly=True)
    if args.eval is not None:
        from adws.cli.eval import evaluation_of  # noqa: PLC0415 - see the note on imports
        from adws.render.evaluation import eval_page  # noqa: PLC0415 - as above

        name, workflow, _, scores, comparison = evaluation_of(journal, args.eval)
        verdict = None if comparison is None else comparison.verdict
        text = eval_page(name, workflow, [s.to_dict() for s in scores], verdict)
        views: Sequence[RunView] = []
    elif args.batch is not None:
        name, text, views = _batch(journal, args.batch)
    else:
        from adws.render.report import run_page  # noqa: PLC0415 - see the note on imports

        view = _view(journal, args.run)
        name, text, views = view.record.run_id, run_page(view), [view]
    if args.output == "-":
        write_text(text)
        return _unreadable(journal, views)
    from adws.journal import DEFAULT_PATH  # noqa: PLC0415 - see the note on imports

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
