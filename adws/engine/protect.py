"""`protect=(globs...)`: an attempt that changes a protected path fails `Tampered`.

Checks are code the project already has; an agent that passes them by
weakening them (editing a test, a CI file, the test runner's
configuration) has not done the work. The paths are compared relative to
the workspace, with `/`; a glob's `*` and `**` match across folders
(`tests/**`, `**/conftest.py`; `**/x` matches `x` at the top too). A
rule `FILE.toml[dotted.key]` protects one table of a TOML file rather than
the whole file (`**/pyproject.toml[tool.pytest]`: the `[tool.pytest...]`
tables; the rest of the file may change): a file whose table changed, or
that no longer parses, counts as changed.

The guard reads the files, not git's view of them (see
`adws.io_ops.changes`): every path under the workspace on disk (ignored
ones included, `.git` and the caches tools rebuild left out), each
protected one hashed as a git blob of its bytes, is compared with a
reference taken before the agent ran: the files on disk then
(`Guard.on_disk`), or a commit's blobs read with replace objects off
(`Guard.at_commit`). No index flag, ignore rule, filter, attribute,
replace object or moved `HEAD` changes what it sees.
"""

from __future__ import annotations

import fnmatch
import re
import stat
import subprocess
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

import attrs

from adws._exceptions import DefinitionTypeError
from adws.engine.errors import ErrorType, PipelineError
from adws.engine.scope import current_worktree
from adws.io_ops.changes import Entry, base_blob, base_entries, entry, listing, object_format

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["Guard", "Rules", "check_protect", "protected_paths"]

_TABLE: Final = re.compile(r"(?P<glob>.+\.toml)\[(?P<key>[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+)\]")
"""A rule that protects one table of a TOML file: `pyproject.toml[tool.pytest]`."""


def check_protect(owner: str, protect: object) -> tuple[str, ...]:
    """Refuse, at definition time, a `protect` that is not a sequence of glob strings.

    >>> check_protect("worktree 'w'", ["tests/**", "pyproject.toml[tool.pytest]"])
    ('tests/**', 'pyproject.toml[tool.pytest]')
    """
    if isinstance(protect, str) or not isinstance(protect, Sequence):
        msg = f"{owner}: protect must be a tuple of globs such as ('tests/**',), got {protect!r}"
        raise DefinitionTypeError(msg)
    globs = tuple(protect)
    if not all(isinstance(glob, str) and glob for glob in globs):
        msg = f"{owner}: protect must hold non-empty glob strings, got {protect!r}"
        raise DefinitionTypeError(msg)
    return globs


def _matches(path: str, glob: str) -> bool:
    return fnmatch.fnmatchcase(path, glob) or (
        glob.startswith("**/") and fnmatch.fnmatchcase(path, glob[3:])
    )


def protected_paths(paths: Iterable[str], globs: Sequence[str]) -> tuple[str, ...]:
    """Return the paths some glob protects.

    >>> protected_paths(["src/a.py", "tests/t.py", "x/conftest.py"], ["tests/**", "**/conftest.py"])
    ('tests/t.py', 'x/conftest.py')
    """
    return tuple(path for path in paths if any(_matches(path, glob) for glob in globs))


@final
@attrs.frozen
class Rules:
    """What a guard protects: whole files by glob, tables of TOML files, and exact paths.

    >>> rules = Rules.of(("tests/**", "**/pyproject.toml[tool.pytest]"), exact=("x.py",))
    >>> rules.covers("tests/a.py"), rules.covers("x.py"), rules.table_keys("pyproject.toml")
    (True, True, ('tool.pytest',))
    """

    globs: tuple[str, ...] = ()
    tables: tuple[tuple[str, str], ...] = ()
    exact: frozenset[str] = frozenset()

    @classmethod
    def of(cls, protect: Sequence[str], exact: Iterable[str] = ()) -> Rules:
        """Read `protect`'s rules (see the module docstring), plus paths protected exactly."""
        globs: list[str] = []
        tables: list[tuple[str, str]] = []
        for rule in protect:
            table = _TABLE.fullmatch(rule)
            if table is None:
                globs.append(rule)
            else:
                tables.append((table["glob"], table["key"]))
        return cls(tuple(globs), tuple(tables), frozenset(exact))

    def __bool__(self) -> bool:
        """Tell whether anything is protected."""
        return bool(self.globs or self.tables or self.exact)

    def covers(self, path: str) -> bool:
        """Tell whether the whole file at `path` is protected."""
        return path in self.exact or any(_matches(path, glob) for glob in self.globs)

    def table_keys(self, path: str) -> tuple[str, ...]:
        """Name the TOML tables of the file at `path` that are protected."""
        return tuple(key for glob, key in self.tables if _matches(path, glob))

    def watches(self, path: str) -> bool:
        """Tell whether anything of the file at `path` is protected."""
        return self.covers(path) or bool(self.table_keys(path))

    def texts(self) -> list[str]:
        """Name what is protected: the rules as written, then the exact paths (sorted)."""
        tables = [f"{glob}[{key}]" for glob, key in self.tables]
        return [*self.globs, *tables, *sorted(self.exact)]

    def describe(self) -> str:
        """Say what is protected, for a message.

        >>> Rules.of(("tests/**",), exact=("t.py",)).describe()
        'tests/** or t.py'
        """
        return " or ".join(self.texts())


@final
@attrs.frozen
class Reference:
    """The protected files as they were: entries of whole files, bytes of files with tables.

    `links` maps every symbolic link the workspace had to its target (read
    from disk only; a verify tree lets those point anywhere).
    """

    entries: Mapping[str, Entry]
    tables: Mapping[str, bytes]
    object_format: str = "sha1"
    links: Mapping[str, str] = attrs.field(factory=dict)


def _value(data: bytes | None, key: str) -> object:
    r"""Read the value at a dotted `key` of a TOML document (None where it has none).

    >>> _value(b"[tool.pytest.ini_options]\naddopts = '-q'\n", "tool.pytest")
    {'ini_options': {'addopts': '-q'}}
    """
    found: object = tomllib.loads((data or b"").decode("utf-8"))
    for part in key.split("."):
        found = found.get(part) if isinstance(found, dict) else None
    return found


def _table_changed(before: bytes | None, after: bytes | None, keys: Sequence[str]) -> bool:
    """Tell whether any of `keys` differs between two versions of a TOML file (unparsable: yes)."""
    try:
        return any(_value(before, key) != _value(after, key) for key in keys)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return True


def _read(folder: str, path: str) -> bytes | None:
    try:
        return Path(folder, path).read_bytes()
    except OSError:
        return None


class Guard:
    """Watch one workspace from a reference on: `check()` says whether a protected path changed.

    The workspace is the worktree in flight (else the current folder). A
    reference that could not be read makes `check()` fail closed with
    `Tampered`, as does a workspace that cannot be read.
    """

    def __init__(
        self, step_name: str, rules: Rules, folder: str, reference: Reference | Exception
    ) -> None:
        """Keep what to compare with; see `on_disk` and `at_commit`."""
        self.step_name, self.rules, self.folder = step_name, rules, folder
        self.reference = reference

    @classmethod
    def on_disk(cls, step_name: str, rules: Rules, folder: str | None = None) -> Guard:
        """Take the reference from the workspace's files as they are now."""
        where = folder or current_worktree() or "."
        reference: Reference | Exception
        try:
            found = listing(where)
            watched = {path: mode for path, mode in found.items() if rules.watches(path)}
            reference = Reference(
                {p: entry(where, p, mode) for p, mode in watched.items() if rules.covers(p)},
                {p: data for p in watched if rules.table_keys(p) and (data := _read(where, p))},
                links={
                    path: str(Path(where, path).readlink())
                    for path, mode in found.items()
                    if stat.S_ISLNK(mode)
                },
            )
        except OSError as exc:
            reference = exc
        return cls(step_name, rules, where, reference)

    @classmethod
    def at_commit(
        cls, step_name: str, rules: Rules, folder: str, commit: str, gitdir: str | None = None
    ) -> Guard:
        """Take the reference from `commit`'s blobs (replace objects off), read through `gitdir`."""
        reference: Reference | Exception
        try:
            kind = object_format(folder, gitdir)
            found = base_entries(folder, commit, gitdir, rules.watches)
            reference = Reference(
                {path: each for path, each in found.items() if rules.covers(path)},
                {
                    path: base_blob(folder, each.oid, gitdir)
                    for path, each in found.items()
                    if rules.table_keys(path)
                },
                kind,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            reference = exc
        return cls(step_name, rules, folder, reference)

    @property
    def links(self) -> Mapping[str, str]:
        """The symbolic links the workspace had when the reference was read from disk."""
        return self.reference.links if isinstance(self.reference, Reference) else {}

    def changed(self, folder: str | None = None) -> tuple[str, ...] | Exception:
        """List (sorted) the protected paths that differ from the reference in `folder`."""
        reference = self.reference
        where = folder or self.folder
        if isinstance(reference, Exception):
            return reference
        try:
            now = listing(where)
        except OSError as exc:
            return exc
        changed: set[str] = set()
        covered = {path for path in now if self.rules.covers(path)} | set(reference.entries)
        for path in covered:
            found = entry(where, path, now[path], reference.object_format) if path in now else None
            if found != reference.entries.get(path):
                changed.add(path)
        tabled = {path for path in now if self.rules.table_keys(path)} | set(reference.tables)
        for path in tabled:
            before, after = reference.tables.get(path), _read(where, path)
            if before != after and _table_changed(before, after, self.rules.table_keys(path)):
                changed.add(path)
        return tuple(sorted(changed))

    def check(self, folder: str | None = None) -> PipelineError | None:
        """Return `Tampered` naming the protected files changed since the reference."""
        changed = self.changed(folder)
        if isinstance(changed, Exception):
            message = (
                f"protect={self.rules.describe()!r} cannot read the workspace"
                f" {folder or self.folder} to compare: {changed}"
            )
            return PipelineError(self.step_name, ErrorType.TAMPERED, message, {"permanent": True})
        if not changed:
            return None
        files = ", ".join(changed)
        rules = self.rules.describe()
        message = (
            f"changed protected files {files}: restore {files}; do not change"
            f" {rules} (they are how the work is checked)"
        )
        details = {"files": list(changed), "protect": self.rules.texts()}
        return PipelineError(self.step_name, ErrorType.TAMPERED, message, details)
