"""`AdwsError`: the root of every exception adws raises, and the tree under it.

A run's failures travel as `PipelineError` values, never as exceptions;
what adws raises is a mistake found before or around a run (a workflow
built wrongly, a command line it cannot use, a journal it cannot read).
Every such class derives from `AdwsError` and from the builtin it
refines, so `except ValueError` still catches a `UsageError`, and
`except AdwsError` catches whatever adws raised. Each class lives with the
idea it serves; this tree says where:

```
Exception
└── AdwsError                                     adws._exceptions
    ├── DefinitionError (ValueError)              adws._exceptions: a workflow, step, key,
    │   │                                         contract, agent or recording built wrongly
    │   └── CodeValueError                        adws.shell._code: a value where a program
    │                                             may run it as code
    ├── DefinitionTypeError (TypeError)           adws._exceptions: the same, a value's type
    ├── MalformedError (ValueError)               adws._exceptions: a value from outside that
    │   │                                         is not well formed (strict JSON, a structure)
    │   ├── AnswerError                           adws.agents.answers: a CLI's output, no answer
    │   ├── BatchInputError                       adws.batch.inputs: a batch's inputs file
    │   ├── TicketError                           adws.tickets.values: a payload or API answer
    │   │                                         that is not what GitHub (or a command) sends
    │   └── UnreadableError                       adws.journal.records.runs: a row no adws wrote
    ├── UsageError (ValueError)                   adws.cli._args: a command line (exit 2)
    ├── SettingError (ValueError)                 adws._exceptions: an environment variable adws
    │                                             reads ($ADWS_MAX_WAIT, ...) it cannot use
    ├── AgentChoiceError (ValueError)             adws.agents.swap: `--agent` makes no agent
    ├── ArgvError (ValueError)                    adws.shell._argv: no script found in an argv
    │   └── NoParametersError                     adws.shell._argv: no room for parameters
    ├── HiddenShellError (ValueError)             adws.shell._argv: a shell hidden in an argv
    ├── RefusedError (ValueError)                 adws._exceptions: a run that may not go on as
    │                                             asked (`adws.runs.Refused`, raised by the kit)
    ├── NotFoundError (LookupError)               adws._exceptions: no such run or workflow
    ├── MissingKeyError (KeyError)                adws._exceptions: no such key in a mapping
    ├── NoSuchNameError (AttributeError)          adws._exceptions: a package has no such name
    ├── MissingExtraError (ImportError)           adws._exceptions: an optional extra missing
    ├── ToolError (OSError)                       adws._exceptions: a program adws ran for
    │   │                                         itself failed (git, reading a worktree)
    │   └── TreeError                             adws.io_ops.verify_tree: no verify tree
    ├── GitError (RuntimeError)                   adws.workspaces._git: a git command failed
    ├── GitHubError (RuntimeError)                adws.tickets.github: GitHub answered a failure
    │   ├── GitHubAuthError                       401: the token is not valid
    │   ├── GitHubForbiddenError                  403: the token may not (a rate limit waits)
    │   ├── GitHubInvalidError                    422: GitHub refused what was sent
    │   └── GitHubUnavailableError                a 5xx, a timeout, no connection
    └── JournalError (RuntimeError)               adws.journal: cannot open, read or write it
        └── BackendError                          adws.journal: a journal server refused
```

Two kinds of exception stay outside on purpose: a `KeyboardInterrupt` (a
signal, or a cancel: `adws.engine.errors.CancelRun`) is how a step is
stopped, not an error, and deriving it from `Exception` would let any
`except Exception` swallow a Ctrl-C; `SystemExit` ends a program. Errors
of Python itself (a `RecursionError`, an `OSError` from the file system)
pass through as they are.
"""

from __future__ import annotations

__all__ = [
    "AdwsError",
    "DefinitionError",
    "DefinitionTypeError",
    "MalformedError",
    "MissingExtraError",
    "MissingKeyError",
    "NoSuchNameError",
    "NotFoundError",
    "RefusedError",
    "SettingError",
    "ToolError",
]


class AdwsError(Exception):
    """Anything adws raises: catch this to catch all of it (see the tree above)."""


class DefinitionError(AdwsError, ValueError):
    """A workflow, step, key, contract, agent or recording built wrongly; the message says how."""


class DefinitionTypeError(AdwsError, TypeError):
    """A value of the wrong type where a workflow, a step or an API takes one."""


class MalformedError(AdwsError, ValueError):
    """A value from outside adws (an answer, a file, a row) that is not well formed."""


class RefusedError(AdwsError, ValueError):
    """A run that may not go on as asked; `refused` is the value `adws.runs` returned."""

    def __init__(self, message: str, refused: object = None) -> None:
        """Say why; keep the `Refused` value it came from (None: raised without one)."""
        super().__init__(message)
        self.refused = refused


class NotFoundError(AdwsError, LookupError):
    """No such run, batch or workflow where it was looked for; the message says where."""


class MissingKeyError(AdwsError, KeyError):
    """No such key in one of adws's mappings (a frozen mapping, a typed key's values)."""


class NoSuchNameError(AdwsError, AttributeError):
    """A package of adws has no public name of that spelling."""


class MissingExtraError(AdwsError, ImportError):
    """An optional extra that is not installed (`pip install 'adws[...]'` names it)."""


class ToolError(AdwsError, OSError):
    """A program adws ran for itself (git, reading a worktree's changes) failed; says which."""


class SettingError(AdwsError, ValueError):
    """An environment variable adws reads that holds what it cannot use; the message says which."""
