"""Resume as users run it: run in one process, plan and resume in others, any hash seed.

Every process here is a real `python -m adws`; each gets its own
`PYTHONHASHSEED`, so a fingerprint that depended on the seed (attrs'
generated `__hash__`, set order, an address) would show as `changed`.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO, start_adws
from tests.workspaces.conftest import make_repo
from tests.zoo_sources import SCRATCH, ZOO, ZOO_HELPERS

pytestmark = pytest.mark.slow


def adws(project: Path, *argv: str, seed: int = 0) -> tuple[int, str, str]:
    """Run `python -m adws ARGV` in `project` to its end, with this hash seed."""
    process = start_adws(project, *argv, env={"PYTHONHASHSEED": str(seed)})
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def run_id_of(project: Path) -> str:
    db = sqlite3.connect(project / "runs.db")
    try:
        return str(db.execute("SELECT run_id FROM runs ORDER BY rowid DESC").fetchone()[0])
    finally:
        db.close()


def calls(project: Path) -> list[str]:
    return (project / "calls.log").read_text().split()


@pytest.fixture
def zoo(tmp_path: Path) -> Path:
    folder = tmp_path / "workflows"
    folder.mkdir()
    (folder / "zoo.py").write_text(ZOO, encoding="utf-8")
    (folder / "zoo_helpers.py").write_text(ZOO_HELPERS, encoding="utf-8")
    (folder / "scratch.py").write_text(SCRATCH, encoding="utf-8")
    return tmp_path


@pytest.fixture
def shipped(tmp_path: Path) -> Path:
    """A project holding the shipped workflows and the demo agent, as `make demo` runs them."""
    shutil.copytree(REPO / "workflows", tmp_path / "workflows")
    shutil.copytree(REPO / "demo", tmp_path / "demo")
    return tmp_path


ZOO_FINISHED = ["ask", "count", "scale", "checks", "notes", "draft_verified"]


def test_every_finished_step_of_the_zoo_is_kept_in_processes_with_other_hash_seeds(
    zoo: Path,
) -> None:
    code, _, err = adws(zoo, "run", "zoo", "-i", "topic=x", seed=1)
    run_id = run_id_of(zoo)
    assert (code, err.splitlines()[-1].split(" at ")[-1]) == (
        1,
        f"finish: StepException: not fixed yet (run {run_id})",
    )
    for seed in (2, 3):
        code, out, err = adws(zoo, "resume", run_id, "--plan", seed=seed)
        assert (code, err) == (0, "")
        assert out.splitlines()[1:] == [
            *[f"  {n}. {name}: kept" for n, name in enumerate(ZOO_FINISHED, 1)],
            "  7. finish: to run",
            "  8. cleanup: to run",
            "a resume starts at finish",
            "kept 6 steps, $0.00 not spent again",
            "to finish: about $0.00, up to $0.00 (from 1 run; no history for finish)",
            "options: none",
        ]
    (zoo / "fixed").touch()
    (zoo / "calls.log").unlink()
    code, out, err = adws(zoo, "resume", run_id, "--json", "-q", seed=4)
    assert (code, json.loads(out)["inputs"]["done"]) == (0, "A DRAFT!")
    assert calls(zoo) == ["finish", "cleanup"]


def test_editing_a_constant_or_a_sibling_module_changes_what_reads_it(zoo: Path) -> None:
    adws(zoo, "run", "zoo", "-i", "topic=x")
    run_id = run_id_of(zoo)
    module = zoo / "workflows" / "zoo.py"
    module.write_text(ZOO.replace("FACTOR = 3", "FACTOR = 1000"), encoding="utf-8")
    _, out, _ = adws(zoo, "resume", run_id, "--plan", seed=5)
    actions = [line.split(": ")[1].split(" ")[0] for line in out.splitlines()[1:7]]
    assert actions == ["kept", "changed", "kept", "kept", "kept", "kept"]
    module.write_text(ZOO, encoding="utf-8")
    helpers = zoo / "workflows" / "zoo_helpers.py"
    helpers.write_text(ZOO_HELPERS.replace('"!"', '"?"'), encoding="utf-8")
    _, out, _ = adws(zoo, "resume", run_id, "--plan", seed=6)
    assert [line.split(": ")[1].split(" ")[0] for line in out.splitlines()[1:7]] == ["changed"] * 6
    code, _, err = adws(zoo, "resume", run_id, seed=7)
    assert code == 2
    assert err.startswith(
        "adws: error: steps 'ask', 'count', 'scale', 'checks', 'notes', 'draft_verified' of run"
    )


def test_a_setup_step_reruns_on_resume_after_its_teardown_removed_what_it_made(
    zoo: Path,
) -> None:
    code, _, err = adws(zoo, "run", "scratch")
    run_id = run_id_of(zoo)
    assert (code, err.splitlines()[-1].split(" at ")[-1]) == (
        1,
        f"work: StepException: not fixed yet (run {run_id})",
    )
    assert not (zoo / "scratch").exists()  # teardown removed it
    _, out, _ = adws(zoo, "resume", run_id, "--plan", seed=8)
    assert out.splitlines()[1:5] == [
        "  1. prepare: kept",
        "  2. setup: rerun (runs again on every resume)",
        "  3. work: to run",
        "  4. teardown: to run",
    ]
    (zoo / "fixed").touch()
    code, out, err = adws(zoo, "resume", run_id, "--json", seed=9)
    assert (code, json.loads(out)["inputs"]["made"]) == (0, "made")
    assert calls(zoo) == ["setup", "work", "teardown", "setup", "work", "teardown"]
    assert err.splitlines()[:2] == [
        f"resuming run {run_id}",
        f"scratch: run {run_id}, 4 steps, resuming at work (setup runs again)",
    ]


def test_every_shipped_workflow_keeps_its_finished_steps_in_another_process(
    shipped: Path,
) -> None:
    target = make_repo(shipped / "target")
    runs = {
        "hello": ["-i", "name=Ada"],
        "implement_verify": [
            "-i",
            "task=t",
            "-i",
            f"target_dir={target}",
            "-i",
            "check_command=true",
        ],
    }
    for name, inputs in runs.items():
        code, _, _ = adws(shipped, "run", name, *inputs, seed=10)
        assert code == 0
        code, out, _ = adws(shipped, "resume", run_id_of(shipped), "--plan", seed=11)
        assert (code, [line for line in out.splitlines() if ": changed" in line]) == (0, [])
        assert "every step is done; nothing to resume" in out


def test_deep_research_resumes_in_a_new_shell_with_a_bigger_budget(shipped: Path) -> None:
    """The claims' calls reserve the research call's cost: $0.0027 spent + $0.0027 is over $0.005."""
    code, _, err = adws(shipped, "run", "deep_research", "-i", "topic=x", "--max-cost", "0.005")
    assert (code, "at verify_claims[0]: BudgetExceeded" in err.splitlines()[-2]) == (1, True)
    run_id = run_id_of(shipped)
    code, out, _ = adws(shipped, "resume", run_id, "--plan", seed=12)
    assert out.splitlines()[1:] == [
        "  1. research: kept",
        "  2. split_claims: kept",
        "  3. verify_claims: to run",
        "  4. assemble: to run",
        "  5. check_verdict: to run",
        "  6. write: to run",
        "  7. save_report: to run",
        "a resume starts at verify_claims",
        "kept 2 steps, $0.0027 not spent again",
        (
            "to finish: about $0.00, up to $0.00 (from 1 run; no history for verify_claims, "
            "assemble, check_verdict, write)"
        ),
        "options: max_cost: 0.005",
    ]
    code, out, err = adws(shipped, "resume", run_id, "--max-cost", "1", "--json", seed=13)
    assert (code, json.loads(out)["status"]) == (0, "succeeded")
    assert err.splitlines()[0] == f"resuming run {run_id} with max_cost: 1.0 (recorded: 0.005)"
    assert err.splitlines()[-2].endswith("; kept 2 steps, $0.0027 not spent again")


AGENT_SCRIPT = """
import json, sys
from pathlib import Path
prompt = sys.stdin.read()
Path("agent.log").open("a").write("called\\n")
key = "ANSWER2" if prompt.startswith("Again") else "ANSWER"
print(json.dumps({"type": "result", "is_error": False, "result": f"STATUS: done\\n{key}: 42",
                  "total_cost_usd": 0.004, "usage": {"input_tokens": 10, "output_tokens": 5}}))
"""

ASKING = """
from pathlib import Path
from returns.io import IOFailure, IOSuccess
from adws import ErrorType, OutputContract, PipelineError, Step, Workflow, agent_step
from adws.testing import ScriptedAgent


def gate(ctx):
    if not Path("fixed").exists():
        return IOFailure(PipelineError("gate", ErrorType.STEP_EXCEPTION, "not fixed yet"))
    return IOSuccess(ctx.merge_outputs({"gated": True}))


workflow = Workflow(
    "asking",
    (
        agent_step("ask", prompt="Ask.", agent=ScriptedAgent([]), contract=OutputContract(("ANSWER",))),
        Step("gate", gate, reads=(), writes=("gated",)),
        agent_step("again", prompt="Again {answer}.", agent=ScriptedAgent([]), contract=OutputContract(("ANSWER2",))),
    ),
)
"""


@pytest.fixture
def asking(tmp_path: Path) -> Path:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "asking.py").write_text(ASKING, encoding="utf-8")
    (tmp_path / "my_agent.py").write_text(AGENT_SCRIPT, encoding="utf-8")
    return tmp_path


def test_a_resume_uses_the_agent_and_budget_the_run_was_started_with(asking: Path) -> None:
    agent = f"{sys.executable} my_agent.py"
    code, _, _ = adws(
        asking,
        "run",
        "asking",
        "--agent",
        agent,
        "--agent-output",
        "claude-json",
        "--max-cost",
        "0.01",
    )
    assert code == 1
    run_id = run_id_of(asking)
    (asking / "fixed").touch()
    code, _, err = adws(asking, "resume", run_id, seed=14)
    assert err.splitlines()[0] == (
        f"resuming run {run_id} with agent: {agent!r}, agent_output: 'claude-json', max_cost: 0.01"
    )
    assert (code, (asking / "agent.log").read_text().split()) == (0, ["called", "called"])
    assert "spent $0.0080" in err.splitlines()[-1]


def test_the_budget_recorded_with_a_run_still_holds_on_resume(asking: Path) -> None:
    agent = f"{sys.executable} my_agent.py"
    adws(
        asking,
        "run",
        "asking",
        "--agent",
        agent,
        "--agent-output",
        "claude-json",
        "--max-cost",
        "0.003",
    )
    code, _, err = adws(asking, "resume", run_id_of(asking), "--from", "ask", seed=15)
    assert code == 1
    assert "BudgetExceeded: the run has spent $0.0040 of its $0.0030 budget" in err.splitlines()[-1]


def test_a_validated_output_is_never_replaced_from_the_command_line(asking: Path) -> None:
    agent = f"{sys.executable} my_agent.py"
    adws(asking, "run", "asking", "--agent", agent, "--agent-output", "claude-json")
    run_id = run_id_of(asking)
    code, _, err = adws(asking, "resume", run_id, "-i", "answer=forged", seed=16)
    assert (code, err) == (
        2,
        (
            f"adws: error: input 'answer' was written by step 'ask', which finished: a resume "
            f"never replaces a validated output (to run 'ask' again: adws resume {run_id} "
            "--from ask)\n"
        ),
    )
    db = sqlite3.connect(asking / "runs.db")
    try:
        stored = db.execute("SELECT inputs FROM run_inputs WHERE run_id = ?", (run_id,)).fetchone()
    finally:
        db.close()
    assert "forged" not in stored[0]


PROBE = """
import json, sys
from adws.discovery import discover_workflows
from adws.journal.identity.fingerprint import step_fingerprints
catalog = discover_workflows(__import__("pathlib").Path(sys.argv[1]))
print(json.dumps({name: step_fingerprints(w) for name, w in sorted(catalog.workflows.items())}))
"""


def fingerprints_in_a_process(folder: Path, seed: int) -> dict[str, dict[str, str]]:
    found = subprocess.run(
        [sys.executable, "-c", PROBE, str(folder)],
        capture_output=True,
        text=True,
        check=True,
        cwd=folder.parent,
        env={"PYTHONHASHSEED": str(seed), "PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    loaded: dict[str, dict[str, str]] = json.loads(found.stdout)
    return loaded


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_fingerprints_are_the_same_whatever_the_hash_seed(zoo: Path, seed: int) -> None:
    for name in (
        "hello.py",
        "implement_verify.py",
        "implement_best_of.py",
        "deep_research.py",
        "_common.py",
    ):
        shutil.copy(REPO / "workflows" / name, zoo / "workflows" / name)
    assert fingerprints_in_a_process(zoo / "workflows", seed) == fingerprints_in_a_process(
        zoo / "workflows", (seed + 1) % 2**32
    )


NESTED = """
from pathlib import Path

from returns.io import IOFailure, IOSuccess

from adws import ErrorType, PipelineError, Step, Workflow, fan_out, parallel


def check(tag):
    def run(ctx):
        call = f"{tag}-{ctx.inputs['item']}"
        with Path("calls.log").open("a") as log:
            log.write(call + "\\n")
        if call == "b-y" and not Path("fixed").exists():
            return IOFailure(PipelineError(tag, ErrorType.STEP_EXCEPTION, "not fixed yet"))
        return IOSuccess(ctx.merge_outputs({tag: call}))

    return Step(tag, run, writes=(tag,))


workflow = Workflow(
    "nested",
    (fan_out("outer", parallel("inner", [check("a"), check("b")]), over="items", item="item"),),
    inputs=("items",),
)
"""


def test_nested_branches_resume_in_another_process_under_their_own_names(tmp_path: Path) -> None:
    """A branch that failed runs again with what is nested in it; the others are kept."""
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "nested.py").write_text(NESTED, encoding="utf-8")
    (tmp_path / "items.json").write_text('{"items": ["x", "y"]}')
    code, _, _ = adws(tmp_path, "run", "nested", "--inputs", "items.json", seed=3)
    run_id = run_id_of(tmp_path)
    assert (code, sorted(calls(tmp_path))) == (1, ["a-x", "a-y", "b-x", "b-y"])
    (tmp_path / "calls.log").unlink()
    (tmp_path / "fixed").touch()
    code, out, _ = adws(tmp_path, "resume", run_id, "--json", "-q", seed=4)
    assert (code, sorted(calls(tmp_path))) == (0, ["a-y", "b-y"])
    assert [branch["a"] for branch in json.loads(out)["inputs"]["outer"]] == ["a-x", "a-y"]
    _, out, _ = adws(tmp_path, "status", run_id, seed=5)
    listed = [line.strip().split(":")[0] for line in out.splitlines() if "outer[" in line]
    # Each branch is listed before those nested in it (those in the order first recorded).
    assert (listed[0], sorted(listed[1:3]), listed[3], sorted(listed[4:])) == (
        "outer[0]",
        ["outer[0]/inner[a]", "outer[0]/inner[b]"],
        "outer[1]",
        ["outer[1]/inner[a]", "outer[1]/inner[b]"],
    )
