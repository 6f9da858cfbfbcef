"""Seeds, as a workflow declares them: `worktree(..., setup=, setup_key=, share=, share_mode=)`.

A seed is a setup (`npm ci`) run once per hash of its key files
(`package-lock.json`) and the command, whose made folders (`node_modules`)
each new worktree with that hash gets instead of running the setup (see
`adws.workspaces._seeding` for the building and `adws.workspaces._sharing`
for the sharing). This module checks the declaration at definition time
and computes the hash.
"""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, final

import attrs

from adws._checks import require_type
from adws._exceptions import AdwsError, DefinitionError

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["SHARE_MODES", "SeedError", "SeedSpec", "ShareMode", "check_seed", "seed_hash"]

ShareMode: TypeAlias = Literal["hardlink", "copy", "symlink"]
SHARE_MODES: Final = ("hardlink", "copy", "symlink")
_HASH_LENGTH: Final = 24
"""Hex digits of a seed's hash: its folder's name."""


class SeedError(AdwsError, RuntimeError):
    """A seed could not be made or shared; `kind` is the step's error kind."""

    def __init__(self, message: str, kind: str = "WorkspaceFailed") -> None:
        """Keep the message and the error kind the step fails with."""
        super().__init__(message)
        self.kind = kind


@final
@attrs.frozen
class SeedSpec:
    """What a worktree's seed is: the setup, the files its hash covers, the paths it shares."""

    setup: str
    setup_key: tuple[str, ...]
    share: tuple[str, ...]
    share_mode: ShareMode = "hardlink"


def _relative(owner: str, field: str, values: object) -> tuple[str, ...]:
    """Check `values` are paths inside the repository: relative, no `..`, not git's own folder.

    >>> _relative("w", "share", ["node_modules", "a/./b"])
    ('node_modules', 'a/b')
    >>> _relative("w", "share", ["../x"])
    Traceback (most recent call last):
    ...
    adws._exceptions.DefinitionError: w: share path '../x' leaves the repository: give a relative path without '..'
    """  # noqa: E501
    if isinstance(values, str | bytes) or not isinstance(values, list | tuple):
        msg = f"{owner}: {field} must be a list of relative paths, got {values!r}"
        raise DefinitionError(msg)
    checked: list[str] = []
    for value in values:
        require_type(owner, field, value, str, "a list of relative paths")
        path = PurePosixPath(value)
        if not value or "\0" in value or path.is_absolute() or ".." in path.parts:
            msg = (
                f"{owner}: {field} path {value!r} leaves the repository: give a relative path"
                " without '..'"
            )
            raise DefinitionError(msg)
        if not path.parts or path.parts[0] == ".git":
            msg = f"{owner}: {field} path {value!r} names no file of the repository's own"
            raise DefinitionError(msg)
        checked.append(str(path))
    return tuple(checked)


def check_seed(
    owner: str,
    setup: object,
    setup_key: Sequence[str],
    share: Sequence[str],
    share_mode: object,
) -> SeedSpec | None:
    """Refuse, at definition time, a seed declared wrong; None when there is no `setup`."""
    keys = _relative(owner, "setup_key", setup_key)
    shared = _relative(owner, "share", share)
    if share_mode not in SHARE_MODES:
        modes = ", ".join(map(repr, SHARE_MODES))
        msg = f"{owner}: share_mode must be one of {modes}, got {share_mode!r}"
        raise DefinitionError(msg)
    if setup is None:
        if keys or shared:
            msg = (
                f"{owner}: setup_key and share need a setup (the command that makes what is shared)"
            )
            raise DefinitionError(msg)
        return None
    require_type(owner, "setup", setup, str, "a shell command such as 'npm ci'")
    if not str(setup).strip():
        msg = f"{owner}: setup is empty: give the command that makes the shared folders"
        raise DefinitionError(msg)
    if not shared:
        msg = f"{owner}: a setup needs share= (the folders it makes that each worktree gets)"
        raise DefinitionError(msg)
    return SeedSpec(str(setup), keys, shared, share_mode)


def inside(folder: Path, relative: str) -> Path:
    """Return `folder/relative` if it resolves inside `folder`; raise `SeedError` naming where else.

    A path whose folders (or itself) are symbolic links out of `folder` is refused.
    """
    path = folder / relative
    top = folder.resolve()
    if not path.resolve().is_relative_to(top):
        msg = f"{relative!r} leads outside {folder} (to {path.resolve()}) through a symbolic link"
        raise SeedError(msg)
    return path


def seed_hash(spec: SeedSpec, worktree: Path) -> str:
    """Hash the setup command and the bytes of its key files, as the worktree holds them."""
    digest = hashlib.sha256(b"adws seed 1\0")
    digest.update(spec.setup.encode("utf-8", "surrogateescape") + b"\0")
    for key in spec.setup_key:
        try:
            path = inside(worktree, key)
        except SeedError as exc:
            msg = f"setup_key {exc}: a key file must be one of the repository's"
            raise SeedError(msg) from None
        if not path.is_file():
            msg = f"setup_key {key!r} is not a file in the worktree {worktree}"
            raise SeedError(msg)
        data = path.read_bytes()
        digest.update(key.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()[:_HASH_LENGTH]
