"""adws batch --dask on a real LocalCluster on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adws.cli import main
from tests.batch.test_batch import FLOWS, batch_json, calls, lines
from tests.conftest import REPO, start_adws, wait_for

pytestmark = pytest.mark.slow

STEPS = """
import time
from pathlib import Path
from returns.io import IOSuccess
from adws import Step, Workflow, shell_step


def tick(name):
    def run(ctx):
        Path(f"{ctx.inputs['n']}-{name}").touch()
        time.sleep(0.4)
        return IOSuccess(ctx.merge_outputs({name: True}))
    return run


def cleanup(ctx):
    Path(f"cleaned-{ctx.inputs['n']}").write_text(str(ctx.failure))
    return IOSuccess(ctx)


long = Workflow(
    "long",
    (shell_step("wait", "touch started-{n}; sleep 4"), Step("cleanup", cleanup, always_run=True)),
    inputs=("n",),
)
ticks = Workflow(
    "ticks",
    (*(Step(f"s{i}", tick(f"s{i}")) for i in range(6)), Step("cleanup", cleanup, always_run=True)),
    inputs=("n",),
)
"""


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "flows.py").write_text(FLOWS, encoding="utf-8")
    (in_tmp / "workflows" / "ticks.py").write_text(STEPS, encoding="utf-8")
    return in_tmp


def test_a_batch_runs_on_a_local_dask_cluster(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines(project, "a", "b", "c")
    code, report = batch_json(["pair", "inputs.jsonl", "--dask", "local:2"], capsys)
    assert (code, report["counts"]) == (0, {"succeeded": 3})
    runs = report["runs"]
    assert isinstance(runs, list)
    assert [run["line"] for run in runs] == [1, 2, 3]
    assert calls(project) == ["first a", "first b", "first c", "second a", "second b", "second c"]


def test_a_killed_dask_worker_costs_only_the_step_in_flight(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines(project, "die", "calm")
    code, report = batch_json(["pair", "inputs.jsonl", "--dask", "local:2"], capsys)
    assert (code, report["counts"]) == (0, {"succeeded": 2})
    assert calls(project) == ["first calm", "first die", "second calm", "second die", "second die"]


def test_a_scheduler_address_is_used_as_given(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from distributed import LocalCluster  # noqa: PLC0415 - only this test starts its own

    lines(project, "a")
    with LocalCluster(  # type: ignore[no-untyped-call] # distributed ships no annotations
        n_workers=1, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        code, report = batch_json(
            ["pair", "inputs.jsonl", "--dask", cluster.scheduler_address], capsys
        )
    assert (code, report["counts"]) == (0, {"succeeded": 1})


def test_ctrl_c_stops_each_dask_run_at_its_next_step_after_cleanup(project: Path) -> None:
    lines(project, "a", "b")
    batch = start_adws(
        project, "batch", "ticks", "inputs.jsonl", "--dask", "local:2", "--json", "-q"
    )
    wait_for(lambda: (project / "a-s1").exists() and (project / "b-s1").exists(), 60)
    batch.send_signal(signal.SIGINT)
    out, err = batch.communicate(timeout=120)
    assert batch.returncode == 130, err
    assert json.loads(out)["counts"] == {"interrupted": 2}
    assert not (project / "a-s5").exists()
    for name in ("a", "b"):
        assert (
            (project / f"cleaned-{name}").read_text().endswith("Interrupted: interrupted by Ctrl-C")
        )


def test_a_second_ctrl_c_cancels_the_dask_runs(project: Path) -> None:
    """The step in flight (4 s) outlasts both signals: the second one cancels its task.

    Dask cannot stop a task's thread midway: the coordinator stops waiting for it,
    records the run `interrupted`, and closes the cluster.
    """
    lines(project, "a")
    batch = start_adws(
        project, "batch", "long", "inputs.jsonl", "--dask", "local:1", "--json", "-q"
    )
    wait_for((project / "started-a").exists, 60)
    batch.send_signal(signal.SIGINT)
    time.sleep(0.5)  # the coordinator passes the first on: the run will stop after this step
    batch.send_signal(signal.SIGINT)
    out, err = batch.communicate(timeout=120)
    assert batch.returncode == 130, err
    assert json.loads(out)["counts"] == {"interrupted": 1}


@pytest.mark.parametrize(
    ("address", "message"),
    [("local:two", "--dask local:two: write local:N with N a number of worker processes")],
)
def test_a_bad_dask_address_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str], address: str, message: str
) -> None:
    lines(project, "a")
    assert main(["batch", "pair", "inputs.jsonl", "--dask", address]) == 2
    assert capsys.readouterr().err == f"adws: error: {message}\n"


def test_without_the_extra_dask_is_named_with_how_to_install_it(project: Path) -> None:
    lines(project, "a")
    script = (
        "import sys\nsys.modules['distributed'] = None\nsys.modules['dask'] = None\n"
        "from adws.cli import main\n"
        "raise SystemExit(main(['batch', 'pair', 'inputs.jsonl', '--dask', 'local:1']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        "adws: error: --dask needs Dask distributed: pip install 'adws[dask]'"
    )
