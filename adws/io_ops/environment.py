"""What a step's process sees of adws's environment: the user's, minus adws's own credentials.

Every process `run_process` starts (an agent's CLI, a shell step, a check
command, `git`) inherits this process's environment, except the variables
that hold what adws itself is trusted with: the journal's location
(`ADWS_JOURNAL`, a team journal's URL with its password), libpq's
variables (every name that starts with `PG`: `PGPASSWORD`, `PGHOST`,
`PGPASSFILE`, ...; adws's PostgreSQL journal reads them) and the GitHub
tokens (`GITHUB_TOKEN`, `GH_TOKEN`). A prompt-injected agent could print
any variable it sees into its answer, which is journaled and shown in
reports, so these stay home unless a step names one in `env_pass=`
(`shell_step("psql", [...], env_pass=("PGHOST", "PGPASSWORD"))`): the step
that needs a credential says so where its author can see it. A variable
the step's own backend gives (`CommandAgent(env={...})`) is always passed.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Final

from adws._exceptions import DefinitionError, DefinitionTypeError

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

__all__ = ["KEPT_HOME", "checked_env_pass", "child_environment", "kept_home"]

KEPT_HOME: Final = frozenset({"ADWS_JOURNAL", "GITHUB_TOKEN", "GH_TOKEN"})
"""The variables no step sees unless it names them (with every `PG*` variable)."""

_LIBPQ_PREFIX: Final = "PG"
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def kept_home(name: str) -> bool:
    """Tell whether `name` holds one of adws's credentials, which a step sees only if it asks.

    >>> kept_home("ADWS_JOURNAL"), kept_home("PGPASSWORD"), kept_home("GH_TOKEN")
    (True, True, True)
    >>> kept_home("PATH"), kept_home("ANTHROPIC_API_KEY"), kept_home("ADWS_RUN_ID")
    (False, False, False)
    """
    return name in KEPT_HOME or name.startswith(_LIBPQ_PREFIX)


def child_environment(
    given: Mapping[str, str] | None = None,
    env_pass: Collection[str] = (),
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Return a child's environment: `environ` (this process's) less what `kept_home` keeps.

    The names in `env_pass` are passed all the same; `given` is added last
    (its variables were chosen for the child by whoever wrote the step).

    >>> home = {"PATH": "/bin", "PGPASSWORD": "pw", "GH_TOKEN": "t"}
    >>> child_environment(environ=home)
    {'PATH': '/bin'}
    >>> child_environment({"GH_TOKEN": "mine"}, ("PGPASSWORD",), environ=home)
    {'PATH': '/bin', 'PGPASSWORD': 'pw', 'GH_TOKEN': 'mine'}
    """
    source = os.environ if environ is None else environ
    passed = frozenset(env_pass)
    kept = {key: value for key, value in source.items() if key in passed or not kept_home(key)}
    return {**kept, **(given or {})}


def checked_env_pass(owner: str, env_pass: object) -> tuple[str, ...]:
    """Return `env_pass` as a tuple of names, or raise naming the owner and what is wrong.

    >>> checked_env_pass("shell_step 'db'", ["PGHOST", "PGPASSWORD"])
    ('PGHOST', 'PGPASSWORD')
    >>> checked_env_pass("shell_step 'db'", "GH_TOKEN")
    Traceback (most recent call last):
    ...
    adws._exceptions.DefinitionTypeError: shell_step 'db': env_pass must be a list or tuple of variable names, got 'GH_TOKEN' (write ('GH_TOKEN',))
    >>> checked_env_pass("shell_step 'db'", ["GH TOKEN"])
    Traceback (most recent call last):
    ...
    adws._exceptions.DefinitionError: shell_step 'db': env_pass holds 'GH TOKEN', which is no environment variable's name
    """  # noqa: E501
    if not isinstance(env_pass, (list, tuple)):
        hint = f" (write ({env_pass!r},))" if isinstance(env_pass, str) else ""
        msg = f"{owner}: env_pass must be a list or tuple of variable names, got {env_pass!r}{hint}"
        raise DefinitionTypeError(msg)
    names = tuple(env_pass)
    for name in names:
        if not isinstance(name, str) or _NAME.fullmatch(name) is None:
            msg = f"{owner}: env_pass holds {name!r}, which is no environment variable's name"
            raise DefinitionError(msg)
    return names
