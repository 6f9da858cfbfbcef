"""Seeds: one setup per hash of its key files, its folders shared into each worktree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from returns.io import IOResult, IOSuccess

from adws import (
    PipelineError,
    Step,
    Workflow,
    WorkflowContext,
    best_of,
    run_workflow,
    worktree,
)
from adws._exceptions import DefinitionError
from adws.workspaces._seeding import SEEDS
from adws.workspaces._sharing import share_into
from adws.workspaces.seeds import ShareMode
from tests.conftest import failure, success
from tests.workspaces.conftest import git, make_repo

SETUP = "mkdir -p deps/sub && echo lib > deps/sub/lib.js && ln -s sub/lib.js deps/link.js"


def lockfile_repo(path: Path, lock: str = "v1\n") -> Path:
    """A repository with a lockfile and a `.gitignore` that ignores `deps`."""
    repo = make_repo(path)
    (repo / "lock.txt").write_text(lock)
    (repo / ".gitignore").write_text("deps\n")
    git(repo, "add", "--all")
    git(repo, "commit", "-q", "-m", "lockfile")
    return repo


def counted(counter: Path, extra: str = "") -> str:
    """The setup: append a line to `counter` (one per run), then make `deps`."""
    return f"echo run >> {counter} && {extra}{SETUP}"


def reads_deps(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """A step that reads the shared file, as tests would."""
    folder = Path(str(ctx.inputs["worktree"]))
    text = (folder / "deps" / "sub" / "lib.js").read_text()
    return IOSuccess(ctx.merge_outputs({"lib": text, "folder": str(folder)}))


def seeded(setup: str, mode: ShareMode = "hardlink", name: str = "impl") -> Step:
    return worktree(
        Step(name, reads_deps),
        setup=setup,
        setup_key=("lock.txt",),
        share=("deps",),
        share_mode=mode,
        keep="always",
    )


def run_one(
    step: Step, repo: Path, tmp_path: Path, run_id: str
) -> IOResult[WorkflowContext, PipelineError]:
    return run_workflow(
        Workflow("w", (step,)),
        WorkflowContext(inputs={"target_dir": str(repo)}),
        run_id=run_id,
        worktrees=str(tmp_path / "wt"),
    )


def test_two_worktrees_share_one_build_by_hard_links(tmp_path: Path) -> None:
    repo = lockfile_repo(tmp_path / "repo")
    counter = tmp_path / "count"
    first = success(run_one(seeded(counted(counter)), repo, tmp_path, "r1"))
    second = success(run_one(seeded(counted(counter)), repo, tmp_path, "r2"))
    assert counter.read_text() == "run\n"
    assert first.inputs["impl_seed"]["built"] is True
    assert second.inputs["impl_seed"] == {"hash": first.inputs["impl_seed"]["hash"], "built": False}
    assert second.inputs["lib"] == "lib\n"
    seed = tmp_path / "wt" / SEEDS / str(first.inputs["impl_seed"]["hash"]) / "tree"
    one = Path(str(first.inputs["folder"])) / "deps" / "sub" / "lib.js"
    two = Path(str(second.inputs["folder"])) / "deps" / "sub" / "lib.js"
    assert (
        one.stat().st_ino == two.stat().st_ino == (seed / "deps" / "sub" / "lib.js").stat().st_ino
    )
    assert (Path(str(second.inputs["folder"])) / "deps" / "link.js").readlink() == Path(
        "sub/lib.js"
    )
    assert second.inputs["impl_commit"] == git(repo, "rev-parse", "HEAD")


def test_a_changed_lockfile_makes_a_new_seed(tmp_path: Path) -> None:
    repo = lockfile_repo(tmp_path / "repo")
    counter = tmp_path / "count"
    first = success(run_one(seeded(counted(counter)), repo, tmp_path, "r1"))
    (repo / "lock.txt").write_text("v2\n")
    git(repo, "commit", "-q", "-am", "new lock")
    second = success(run_one(seeded(counted(counter)), repo, tmp_path, "r2"))
    assert counter.read_text() == "run\nrun\n"
    assert second.inputs["impl_seed"]["built"] is True
    assert second.inputs["impl_seed"]["hash"] != first.inputs["impl_seed"]["hash"]
    assert len(list((tmp_path / "wt" / SEEDS).glob("*.lock"))) == 2


@pytest.mark.parametrize("mode", ["copy", "symlink"])
def test_copy_and_symlink_share_the_seeds_folder_their_way(tmp_path: Path, mode: ShareMode) -> None:
    repo = lockfile_repo(tmp_path / "repo")
    (repo / ".gitignore").write_text("/deps\n")  # a link matches no pattern with a trailing '/'
    git(repo, "commit", "-q", "-am", "ignore the link too")
    first = success(run_one(seeded(SETUP, mode), repo, tmp_path, "r1"))
    folder = Path(str(first.inputs["folder"]))
    seed = tmp_path / "wt" / SEEDS / str(first.inputs["impl_seed"]["hash"]) / "tree" / "deps"
    assert (folder / "deps").is_symlink() is (mode == "symlink")
    same = (folder / "deps/sub/lib.js").stat().st_ino == (seed / "sub/lib.js").stat().st_ino
    assert same is (mode == "symlink")
    assert first.inputs["lib"] == "lib\n"


def test_a_failing_setup_fails_the_step_and_is_built_again_next_time(tmp_path: Path) -> None:
    repo = lockfile_repo(tmp_path / "repo")
    counter = tmp_path / "count"
    flag = tmp_path / "fail"
    flag.write_text("")
    setup = counted(counter, f"test ! -e {flag} || {{ echo broken >&2; exit 7; }}; ")
    error = failure(run_one(seeded(setup), repo, tmp_path, "r1"))
    assert error.error_type == "SetupFailed"
    assert error.step_name == "impl"
    assert error.message.startswith(f"setup {setup!r} exited with 7 in the seed ")
    assert error.message.endswith(": broken\n")
    assert [p.suffix for p in (tmp_path / "wt" / SEEDS).iterdir()] == [".lock"]
    flag.unlink()
    done = success(run_one(seeded(setup), repo, tmp_path, "r2"))
    assert done.inputs["impl_seed"]["built"] is True
    assert counter.read_text() == "run\nrun\n"


def test_a_setup_that_makes_no_shared_folder_fails_the_step(tmp_path: Path) -> None:
    repo = lockfile_repo(tmp_path / "repo")
    error = failure(run_one(seeded("true"), repo, tmp_path, "r1"))
    assert error.error_type == "SetupFailed"
    assert error.message.startswith("setup 'true' made no 'deps' in the seed ")


def test_a_shared_folder_the_gitignore_does_not_ignore_is_refused(tmp_path: Path) -> None:
    repo = lockfile_repo(tmp_path / "repo")
    (repo / ".gitignore").write_text("other\n")
    git(repo, "commit", "-q", "-am", "deps not ignored")
    error = failure(run_one(seeded(SETUP), repo, tmp_path, "r1"))
    assert error.error_type == "WorkspaceFailed"
    assert error.message.startswith(
        "the shared 'deps' is not ignored by the repository's .gitignore"
    )
    assert not (Path(error.context["worktree"]) / "deps").exists()


def test_a_key_file_linked_out_of_the_repository_is_refused(tmp_path: Path) -> None:
    repo = lockfile_repo(tmp_path / "repo")
    (tmp_path / "secret").write_text("x\n")
    (repo / "lock.txt").unlink()
    (repo / "lock.txt").symlink_to(tmp_path / "secret")
    git(repo, "commit", "-q", "-am", "lockfile is a link")
    error = failure(run_one(seeded(SETUP), repo, tmp_path, "r1"))
    assert error.message.startswith("setup_key 'lock.txt' leads outside ")
    assert error.message.endswith(": a key file must be one of the repository's")


def test_a_missing_key_file_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    error = failure(run_one(seeded(SETUP), repo, tmp_path, "r1"))
    assert error.message.startswith("setup_key 'lock.txt' is not a file in the worktree ")


def test_a_seed_folder_replaced_by_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    repo = lockfile_repo(tmp_path / "repo")
    first = success(run_one(seeded(SETUP), repo, tmp_path, "r1"))
    seed = tmp_path / "wt" / SEEDS / str(first.inputs["impl_seed"]["hash"])
    elsewhere = tmp_path / "elsewhere"
    seed.rename(elsewhere)
    seed.symlink_to(elsewhere)
    error = failure(run_one(seeded(SETUP), repo, tmp_path, "r2"))
    assert error.message == (
        f"the seed folder {seed} is a symbolic link: adws refuses to build in or share from it;"
        " remove it"
    )


def test_a_seeds_folder_replaced_by_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    repo = lockfile_repo(tmp_path / "repo")
    (tmp_path / "wt").mkdir()
    (tmp_path / "away").mkdir()
    (tmp_path / "wt" / SEEDS).symlink_to(tmp_path / "away")
    error = failure(run_one(seeded(SETUP), repo, tmp_path, "r1"))
    assert error.message.startswith(f"the seed folder {tmp_path / 'wt' / SEEDS} is a symbolic link")
    assert list((tmp_path / "away").iterdir()) == []


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("share", ("../x",), "share path '../x' leaves the repository"),
        ("share", ("/abs",), "share path '/abs' leaves the repository"),
        ("setup_key", ("a/../../x",), "setup_key path 'a/../../x' leaves the repository"),
        ("setup_key", ("/etc/passwd",), "setup_key path '/etc/passwd' leaves the repository"),
        ("share", (".git/hooks",), "share path '.git/hooks' names no file of the repository's own"),
        ("share", (".",), "share path '.' names no file of the repository's own"),
        ("share", "deps", "share must be a list of relative paths, got 'deps'"),
        ("share", ("",), "share path '' leaves the repository"),
    ],
)
def test_paths_outside_the_repository_are_refused_when_defined(
    field: str, value: object, said: str
) -> None:
    options: dict[str, object] = {"setup": "x", "setup_key": (), "share": ("deps",), field: value}
    with pytest.raises(DefinitionError) as raised:
        worktree(Step("impl", reads_deps), **options)  # type: ignore[arg-type] # bad on purpose
    assert str(raised.value).startswith(f"worktree 'impl': {said}")


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"share": ("deps",)}, "setup_key and share need a setup"),
        ({"setup": "  "}, "setup is empty"),
        ({"setup": "npm ci"}, "a setup needs share="),
        ({"setup": "x", "share": ("d",), "share_mode": "reflink"}, "share_mode must be one of"),
    ],
)
def test_a_seed_declared_wrong_is_refused(options: dict[str, object], said: str) -> None:
    with pytest.raises(DefinitionError) as raised:
        best_of("impl", Step("s", reads_deps), n=2, **options)  # type: ignore[arg-type] # bad on purpose
    assert str(raised.value).startswith(f"best_of 'impl': {said}")


def test_the_branches_of_a_best_of_wait_for_one_build(tmp_path: Path) -> None:
    repo = lockfile_repo(tmp_path / "repo")
    counter = tmp_path / "count"
    step = best_of(
        "impl",
        Step("s", reads_deps),
        n=3,
        setup=counted(counter, "sleep 0.5 && "),
        setup_key=("lock.txt",),
        share=("deps",),
    )
    done = success(run_one(step, repo, tmp_path, "r1"))
    assert counter.read_text() == "run\n"
    assert done.inputs["lib"] == "lib\n"


WORKER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from returns.io import IOSuccess
    from adws import Step, Workflow, WorkflowContext, run_workflow, worktree

    def run(ctx):
        deps = Path(str(ctx.inputs["worktree"])) / "deps" / "sub" / "lib.js"
        return IOSuccess(ctx.merge_outputs({"lib": deps.read_text()}))

    repo, wt, setup, run_id = sys.argv[1:]
    step = worktree(Step("impl", run), setup=setup, setup_key=("lock.txt",), share=("deps",))
    done = run_workflow(
        Workflow("w", (step,)),
        WorkflowContext(inputs={"target_dir": repo}),
        run_id=run_id,
        worktrees=wt,
    )
    print(type(done).__name__)
    """
)


def test_two_processes_wait_for_one_build(tmp_path: Path) -> None:
    repo = lockfile_repo(tmp_path / "repo")
    counter = tmp_path / "count"
    setup = counted(counter, "sleep 1 && ")
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    started = [
        subprocess.Popen(
            [sys.executable, str(script), str(repo), str(tmp_path / "wt"), setup, run_id],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        for run_id, seed in (("p1", "1"), ("p2", "2"))
    ]
    said = [process.communicate(timeout=120)[0] for process in started]
    assert said == ["IOSuccess\n", "IOSuccess\n"]
    assert counter.read_text() == "run\n"
    (seed,) = (p for p in (tmp_path / "wt" / SEEDS).iterdir() if p.is_dir())
    assert json.loads((seed / "seed.json").read_text())["setup"] == setup
    assert len(list((seed / "users").iterdir())) == 2


def test_a_path_the_worktree_has_already_is_left_and_nothing_is_built(tmp_path: Path) -> None:
    repo = lockfile_repo(tmp_path / "repo")
    (repo / "deps" / "sub").mkdir(parents=True)
    (repo / "deps" / "sub" / "lib.js").write_text("tracked\n")
    git(repo, "add", "--force", "deps")
    git(repo, "commit", "-q", "-m", "vendored deps")
    counter = tmp_path / "count"
    done = success(run_one(seeded(counted(counter)), repo, tmp_path, "r1"))
    assert done.inputs["impl_seed"] == {"hash": "", "built": False}
    assert done.inputs["lib"] == "tracked\n"
    assert not counter.exists()


def test_a_shared_path_the_setup_linked_out_of_the_seed_is_refused(tmp_path: Path) -> None:
    repo = lockfile_repo(tmp_path / "repo")
    (tmp_path / "away").mkdir()
    error = failure(run_one(seeded(f"ln -s {tmp_path / 'away'} deps"), repo, tmp_path, "r1"))
    assert error.message.startswith("share 'deps' leads outside ")
    assert list((tmp_path / "away").iterdir()) == []


def test_a_shared_path_the_seed_lacks_fails_the_step(tmp_path: Path) -> None:
    repo = lockfile_repo(tmp_path / "repo")
    (repo / ".gitignore").write_text("deps\nmore\n")
    git(repo, "commit", "-q", "-am", "ignore more")
    success(run_one(seeded(SETUP), repo, tmp_path, "r1"))
    step = worktree(
        Step("impl", reads_deps), setup=SETUP, setup_key=("lock.txt",), share=("deps", "more")
    )
    error = failure(run_one(step, repo, tmp_path, "r2"))
    assert error.message.startswith("the seed ")
    assert error.message.endswith(f" has no 'more' to share (setup {SETUP!r} did not make it)")


def test_a_shared_link_a_trailing_slash_pattern_misses_is_refused_and_removed(
    tmp_path: Path,
) -> None:
    repo = lockfile_repo(tmp_path / "repo")
    (repo / ".gitignore").write_text("deps/\n")
    git(repo, "commit", "-q", "-am", "ignore the folder only")
    error = failure(run_one(seeded(SETUP, "symlink"), repo, tmp_path, "r1"))
    assert error.message.startswith("the shared 'deps' is not ignored")
    assert not os.path.lexists(Path(error.context["worktree"]) / "deps")


def test_hard_links_fall_back_to_copies_where_the_file_system_refuses(tmp_path: Path) -> None:
    source = tmp_path / "seed"
    (source / "sub").mkdir(parents=True)
    for name in ("a", "b", "sub/c"):
        (source / name).write_text(name)
    calls: list[str] = []

    def refuses_the_second(src: str, dst: str) -> None:
        calls.append(Path(src).name)
        if len(calls) == 2:
            raise OSError(18, "Invalid cross-device link")
        os.link(src, dst)

    share_into(source, tmp_path / "wt" / "deps", "hardlink", link=refuses_the_second)
    target = tmp_path / "wt" / "deps"
    linked = {
        str(p.relative_to(target)): p.stat().st_ino
        == (source / p.relative_to(target)).stat().st_ino
        for p in target.rglob("*")
        if p.is_file()
    }
    assert len(calls) == 2
    assert sorted(linked.values()) == [False, False, True]
    assert sorted(p.read_text() for p in target.rglob("*") if p.is_file()) == ["a", "b", "sub/c"]


@pytest.mark.parametrize("mode", ["hardlink", "copy"])
def test_a_single_file_and_a_link_are_shared_too(tmp_path: Path, mode: ShareMode) -> None:
    (tmp_path / "seed").mkdir()
    (tmp_path / "seed" / "f").write_text("f\n")
    (tmp_path / "seed" / "l").symlink_to("f")
    share_into(tmp_path / "seed" / "f", tmp_path / "wt" / "f", mode)
    share_into(tmp_path / "seed" / "l", tmp_path / "wt" / "l", mode)
    same = (tmp_path / "wt" / "f").stat().st_ino == (tmp_path / "seed" / "f").stat().st_ino
    assert same is (mode == "hardlink")
    assert (tmp_path / "wt" / "l").readlink() == Path("f")


def test_a_seed_whose_tree_was_removed_by_hand_is_built_again(tmp_path: Path) -> None:
    repo = lockfile_repo(tmp_path / "repo")
    counter = tmp_path / "count"
    first = success(run_one(seeded(counted(counter)), repo, tmp_path, "r1"))
    seed = tmp_path / "wt" / SEEDS / str(first.inputs["impl_seed"]["hash"])
    shutil.rmtree(seed / "tree")
    second = success(run_one(seeded(counted(counter)), repo, tmp_path, "r2"))
    assert second.inputs["impl_seed"]["built"] is True
    assert counter.read_text() == "run\nrun\n"
