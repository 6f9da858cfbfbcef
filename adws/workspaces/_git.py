"""Git, as workspaces need it: one command at a time, bounded, retried on lock contention.

Every command runs through `adws.io_ops.run_process` (its own process
group, a timeout, no shell), with `LC_ALL=C` so its messages can be read
and no prompt for credentials. adws's own git never runs the repository's
code: every command passes `-c core.hooksPath=/dev/null -c core.fsmonitor=`
(no hook, not even the ones `--no-verify` leaves on, such as `post-commit`
or `reference-transaction`; no file-system monitor command), and a command
in a worktree adws made names its git directory and work tree explicitly
(`gitdir`), so a `.git` file a step repointed elsewhere is never read.
A command that meets another git process's lock (`index.lock`,
`config.lock`, a ref's lock) waits and tries again, a few times, before
its failure counts. Git commands are never cancelled
with a parallel branch: git killed halfway leaves exactly the lock files
this module works around, and each command is short and has a timeout.
A failure raises `GitError`, which the steps turn into a `PipelineError`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Final

from adws import io_ops
from adws._exceptions import AdwsError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

__all__ = [
    "FALLBACK_IDENTITY",
    "FALLBACK_TRAILER",
    "GIT_TIMEOUT",
    "GitError",
    "admin_dir",
    "changed_files",
    "commit_all",
    "diffstat",
    "file_lock",
    "git",
    "on_branch",
    "own_index",
    "points_at",
    "repository_lock",
    "tree_hash",
    "uncommitted",
]

GIT_TIMEOUT: Final = 300.0
"""The longest one git command may take (a checkout of a large repository, say)."""
_RETRY_DELAYS: Final = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2)
"""Waits before each new try of a command that met another git process's lock."""
_CONTENTION: Final = re.compile(
    r"Unable to create '[^']*\.lock': File exists|could not lock config file|cannot lock ref"
)
_ENV: Final = {"LC_ALL": "C", "LANGUAGE": "", "GIT_TERMINAL_PROMPT": "0"}
_NO_CODE: Final = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=")
"""What every git command adws runs is given: no hook and no file-system monitor runs."""
FALLBACK_IDENTITY: Final = ("adws", "adws@localhost")
"""The name and email a commit gets when git knows no identity (a fresh container, CI)."""
FALLBACK_TRAILER: Final = "Committed-by: adws (no git identity configured)"
"""The trailer that says a commit was made with `FALLBACK_IDENTITY`."""
_ROLES: Final = (("AUTHOR", "GIT_AUTHOR_IDENT"), ("COMMITTER", "GIT_COMMITTER_IDENT"))
LOCK_FILE: Final = "adws-worktrees.lock"
"""The file in a repository's git directory that serialises creating worktrees."""
_LOCK_SECONDS: Final = 600.0
"""How long to wait for another adws process to finish creating its worktree."""


class GitError(AdwsError, RuntimeError):
    """A git command failed; the message names the command and what git said."""


def _message(argv: tuple[str, ...], outcome: io_ops.ProcessOutcome, timeout: float) -> str:
    said = (outcome.stderr.strip() or outcome.stdout.strip())[-1500:]
    shown = " ".join(argv)
    if outcome.error is not None:
        return f"could not run `{shown}`: {outcome.error}"
    if outcome.timed_out:
        return f"`{shown}` ran past its {timeout:g}s timeout and was killed"
    return f"`{shown}` exited with {outcome.returncode}" + (f": {said}" if said else "")


def git(  # noqa: PLR0913 - the command, and keyword-only ways to run it
    cwd: Path,
    *args: str,
    gitdir: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin_text: str | None = None,
    ok: tuple[int, ...] = (0,),
    timeout: float = GIT_TIMEOUT,
    sleep: Callable[[float], None] = io_ops.sleep,
    stdout_errors: str = "replace",
) -> io_ops.ProcessOutcome:
    """Run `git -C cwd ARGS`, retrying lock contention; raise `GitError` unless it exits in `ok`.

    `gitdir` (a worktree's git directory, as git made it) makes `cwd` the
    work tree of that git directory, whatever `cwd/.git` says. `sleep`
    waits between tries (`_RETRY_DELAYS`, about six seconds in all);
    `timeout` bounds each try. `stdout_errors="surrogateescape"` keeps the
    bytes of a stdout that is not UTF-8 (a patch of a Latin-1 file).
    """
    where: tuple[str, ...] = ("-C", str(cwd))
    if gitdir is not None:
        where = (*where, f"--git-dir={gitdir}", f"--work-tree={cwd}")
    argv = ("git", *where, *args)  # as messages show it
    token = io_ops.CANCEL.set(None)  # see the module docstring: git is never cancelled
    try:
        tries = 0
        while True:
            outcome = io_ops.run_process(
                ("git", *_NO_CODE, *where, *args),
                stdin_text=stdin_text,
                timeout=timeout,
                env={**_ENV, **(env or {})},
                max_output_bytes=64 << 20,
                stdout_errors=stdout_errors,
            )
            if outcome.returncode in ok and outcome.finished:
                return outcome
            if tries == len(_RETRY_DELAYS) or not _CONTENTION.search(outcome.stderr):
                raise GitError(_message(argv, outcome, timeout))
            sleep(_RETRY_DELAYS[tries])
            tries += 1
    finally:
        io_ops.CANCEL.reset(token)


def output(cwd: Path, *args: str, gitdir: Path | None = None) -> str:
    """Run a git command and return its stdout without the final newline."""
    return git(cwd, *args, gitdir=gitdir).stdout.rstrip("\n")


@contextlib.contextmanager
def repository_lock(common_dir: Path, seconds: float = _LOCK_SECONDS) -> Iterator[None]:
    """Hold the repository's worktree lock (a file in its git directory) while the block runs.

    Several adws processes (and the branches of one) create worktrees of one
    repository one at a time this way; the lock goes with the process, so a
    crash never leaves it held.
    """
    with file_lock(common_dir / LOCK_FILE, seconds, "creating a worktree"):
        yield


@contextlib.contextmanager
def file_lock(path: Path, seconds: float, doing: str) -> Iterator[None]:
    """Hold an exclusive `flock` on `path` (made if missing) while the block runs.

    Each call opens the file anew, so threads of one process wait for each
    other as processes do. After `seconds` of waiting, `GitError` says who
    seems stuck `doing` what.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        deadline = io_ops.monotonic() + seconds
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if io_ops.monotonic() >= deadline:
                    msg = (
                        f"another process has held {path} for {seconds:.0f}s;"
                        f" is an adws run stuck {doing}?"
                    )
                    raise GitError(msg) from None
                io_ops.sleep(0.05)
        yield
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def own_index(worktree: Path, *, gitdir: Path | None = None) -> Iterator[dict[str, str]]:
    """Stage the worktree as it is in an index of adws's own; yield the environment naming it.

    The index starts from `HEAD` (empty on an unborn branch) in a temporary folder, so no flag the
    worktree's own index holds (`assume-unchanged`, `skip-worktree`) hides
    a change; every file is added but those the repository's `.gitignore`
    files ignore: a path in `.git/info/exclude` or a `core.excludesFile`
    (which an agent may write) is added all the same. Paths are literal.
    """
    with tempfile.TemporaryDirectory(prefix="adws-index-") as folder:
        env = {"GIT_INDEX_FILE": str(Path(folder) / "index"), "GIT_LITERAL_PATHSPECS": "1"}
        if git(worktree, "read-tree", "HEAD", gitdir=gitdir, env=env, ok=(0, 128)).returncode:
            git(worktree, "read-tree", "--empty", gitdir=gitdir, env=env)  # an unborn branch
        git(worktree, "add", "--all", gitdir=gitdir, env=env)
        others = ("ls-files", "-z", "--others", "--exclude-per-directory=.gitignore")
        hidden = git(worktree, *others, gitdir=gitdir, env=env).stdout
        if hidden:
            add = ("add", "--force", "--pathspec-from-file=-", "--pathspec-file-nul")
            git(worktree, *add, gitdir=gitdir, env=env, stdin_text=hidden)
        yield env


def tree_hash(worktree: Path, *, gitdir: Path | None = None) -> str:
    """Hash the worktree's content: tracked and untracked files its `.gitignore` files keep.

    The files are staged in an index of adws's own (`own_index`: the
    worktree's index, and so the worktree, are left as they were) and
    written as a tree: its id is the hash, and `changed_files` can compare
    two of them file by file.
    """
    with own_index(worktree, gitdir=gitdir) as env:
        return git(worktree, "write-tree", gitdir=gitdir, env=env).stdout.strip()


def changed_files(
    worktree: Path, before: str, after: str, *, gitdir: Path | None = None
) -> tuple[str, ...]:
    """Name the files that differ between two trees `tree_hash` made, in git's order."""
    found = git(
        worktree,
        "diff-tree",
        "-r",
        "-z",
        "--no-renames",
        "--name-only",
        before,
        after,
        gitdir=gitdir,
    )
    return tuple(name for name in found.stdout.split("\0") if name)


def _fallback_identity(worktree: Path, gitdir: Path | None) -> dict[str, str]:
    """Return the environment that gives each role git knows no identity for adws's own."""
    env: dict[str, str] = {}
    name, email = FALLBACK_IDENTITY
    for role, variable in _ROLES:
        if git(worktree, "var", variable, gitdir=gitdir, ok=(0, 128)).returncode != 0:
            env.update({f"GIT_{role}_NAME": name, f"GIT_{role}_EMAIL": email})
    return env


def commit_all(worktree: Path, message: str, *, gitdir: Path | None = None) -> bool:
    """Commit every change in the worktree (untracked files too); False when nothing changed.

    What is committed is the worktree as it is, staged in adws's own index
    (`own_index`): no flag or exclude an agent set in the worktree's git
    metadata keeps a change out of the commit.

    No hook runs (see the module docstring: the workflow runs its own
    checks) and commits are not signed, so no prompt can stop a run. git's
    own identity (`user.name`, `user.email`, `GIT_AUTHOR_*` and the rest)
    is used unchanged; a role git knows no identity for (a fresh container,
    a CI runner) is `adws <adws@localhost>`, and the message then ends with
    the trailer `Committed-by: adws (no git identity configured)`, so the
    agent's finished work is never lost at the commit.
    """
    with own_index(worktree, gitdir=gitdir) as env:
        staged = git(worktree, "diff", "--cached", "--quiet", gitdir=gitdir, env=env, ok=(0, 1))
        if staged.returncode == 0:
            return False
        identity = _fallback_identity(worktree, gitdir)
        if identity:
            message = f"{message.rstrip()}\n\n{FALLBACK_TRAILER}\n"
        git(
            worktree,
            "-c",
            "commit.gpgsign=false",
            "-c",
            "gc.auto=0",
            "commit",
            "--quiet",
            "--no-verify",
            "--message",
            message,
            gitdir=gitdir,
            env={**env, **identity},
        )
    git(worktree, "reset", "--quiet", gitdir=gitdir)  # the worktree's own index follows
    return True


def diffstat(
    worktree: Path, base: str, commit: str, *, gitdir: Path | None = None
) -> dict[str, object]:
    """Describe what changed from `base` to `commit`: files, lines added and deleted.

    `files` lists `{"path", "added", "deleted"}` per file (a binary file
    counts 0 lines); `text` is the one line `git diff --shortstat` prints.
    """
    numstat = git(
        worktree, "diff", "--numstat", "-z", "--no-renames", base, commit, gitdir=gitdir
    ).stdout
    files: list[dict[str, object]] = []
    added = deleted = 0
    for entry in numstat.split("\0"):
        if not entry:
            continue
        plus, minus, path = entry.split("\t", 2)
        lines = (int(plus) if plus.isdigit() else 0, int(minus) if minus.isdigit() else 0)
        files.append({"path": path, "added": lines[0], "deleted": lines[1]})
        added += lines[0]
        deleted += lines[1]
    text = _shortstat(len(files), added, deleted)
    return {"files": files, "added": added, "deleted": deleted, "text": text}


def _shortstat(count: int, added: int, deleted: int) -> str:
    """Say what `git diff --shortstat` says, from the numbers alone.

    >>> _shortstat(1, 3, 1)
    '1 file changed, 3 insertions(+), 1 deletion(-)'
    >>> _shortstat(2, 0, 0), _shortstat(0, 0, 0)
    ('2 files changed', 'no changes')
    """
    if not count:
        return "no changes"
    parts = [f"{count} file{'s' if count != 1 else ''} changed"]
    if added:
        parts.append(f"{added} insertion{'s' if added != 1 else ''}(+)")
    if deleted:
        parts.append(f"{deleted} deletion{'s' if deleted != 1 else ''}(-)")
    return ", ".join(parts)


def uncommitted(checkout: Path) -> tuple[str, ...]:
    """Name the tracked files a checkout changed, staged or not (untracked ones do not count)."""
    found = git(checkout, "status", "--porcelain", "-z", "--untracked-files=no").stdout
    entries = found.split("\0")
    names: list[str] = []
    skip = False
    for entry in entries:
        if skip:  # the old name of a rename
            skip = False
            continue
        if len(entry) > 3:  # noqa: PLR2004 - "XY " then the path
            names.append(entry[3:])
            skip = entry[0] in "RC"
    return tuple(names)


def points_at(worktree: Path) -> Path | None:
    """Return the git directory a worktree's `.git` file names; None when it names none.

    Only a plain file reading `gitdir: PATH` names one (a relative PATH is
    from the worktree), as git writes it; a folder, a link or anything else
    does not.
    """
    dotgit = worktree / ".git"
    try:
        if not stat.S_ISREG(dotgit.lstat().st_mode):
            return None
        text = dotgit.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None
    if not text.startswith("gitdir: "):
        return None
    return Path(os.path.normpath(worktree / text.removeprefix("gitdir: ").rstrip("\n")))


def admin_dir(common: Path, worktree: Path) -> Path | None:
    """Find the git directory git made for `worktree` in the repository's `common` git directory.

    git keeps one folder per worktree under `<common>/worktrees`, whose
    `gitdir` file points back at the worktree's `.git`: that record, never
    the worktree's own `.git` file (which a step may rewrite), says which
    it is. None when git keeps no such folder.
    """
    try:
        folders = sorted((common / "worktrees").iterdir())
    except OSError:
        return None
    for folder in folders:
        try:
            back = (folder / "gitdir").read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            continue
        pointed = Path(os.path.normpath(folder / back.rstrip("\n")))
        if pointed.parent == worktree:
            return folder
    return None


def on_branch(common: Path, branch: str) -> tuple[Path, Path] | None:
    """Find the worktree git keeps on `branch`: its folder and its git directory; None if none.

    Read from git's own records (`<common>/worktrees/*/HEAD` and `gitdir`),
    as `admin_dir` does.
    """
    wanted = f"ref: refs/heads/{branch}\n"
    try:
        folders = sorted((common / "worktrees").iterdir())
    except OSError:
        return None
    for folder in folders:
        try:
            head = (folder / "HEAD").read_text(encoding="utf-8", errors="surrogateescape")
            back = (folder / "gitdir").read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            continue
        if head == wanted:
            return Path(os.path.normpath(folder / back.rstrip("\n"))).parent, folder
    return None
