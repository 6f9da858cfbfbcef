#!/bin/sh
# A run parked on a usage limit, finished by `adws resume --due`: offline, through the real
# claude CLI and adws's fake model API (`python -m adws.testing.model_api`).
#
# The fake API answers the first call with a subscription's usage limit that resets in
# RESET seconds (default 8), as Anthropic's API says it; claude, signed in with an OAuth
# token, reports the reset; adws parks the run (exit 75) rather than wait past --max-wait.
# Once the reset has passed, `adws resume --due` finishes it. ADWS is the adws command
# (default .venv/bin/adws), PYTHON the Python that has adws (default .venv/bin/python);
# the claude CLI comes from PATH (`make clis` installs it under .cache/agent-clis).
set -eu
adws=${ADWS:-.venv/bin/adws}
python=${PYTHON:-.venv/bin/python}
reset=${RESET:-8}
if [ -d .cache/agent-clis/node_modules/.bin ]; then
    PATH="$(pwd)/.cache/agent-clis/node_modules/.bin:$PATH"
fi
here=$(mktemp -d "${TMPDIR:-/tmp}/adws-parked-XXXXXX")
export ADWS_JOURNAL="$here/runs.db"
mkdir "$here/workflows" "$here/notes"
cat > "$here/workflows/ask.py" <<'PY'
from adws import OutputContract, Workflow, agent_step
from adws.agents import CommandAgent

workflow = Workflow(
    "ask",
    (
        agent_step(
            "ask",
            prompt="Read the notes and sum them up.",
            agent=CommandAgent("claude -p", timeout=300),
            contract=OutputContract(("SUMMARY",)),
            cwd="{folder}",
        ),
    ),
    inputs=("folder",),
)
PY

say() { printf '\n$ %s\n' "$1"; }

"$python" -m adws.testing.model_api --home "$here/home" --usage-limit "$reset" \
    --text 'STATUS: done\nSUMMARY: the notes are in order' > "$here/api.env" &
api=$!
trap 'kill $api 2>/dev/null; wait $api 2>/dev/null || true' EXIT
while [ ! -s "$here/api.env" ]; do sleep 0.1; done
. "$here/api.env"   # ANTHROPIC_BASE_URL, CLAUDE_CODE_OAUTH_TOKEN, a throwaway HOME

say "adws run ask -i folder=notes --agent claude --max-wait 2"
code=0
$adws run ask --workflows "$here/workflows" -i folder="$here/notes" --agent claude \
    --max-wait 2 || code=$?
echo "(exit $code)"
run=$($adws runs --status parked --json | "$python" -c 'import json, sys; print(json.load(sys.stdin)[0]["run_id"])')

say "adws status $run"
$adws status "$run"

say "adws resume $run"
code=0
$adws resume "$run" || code=$?
echo "(exit $code)"

say "sleep $reset   # until the limit resets"
sleep "$reset"

say "adws resume --due"
$adws resume --due

say "adws status $run"
$adws status "$run"
echo
echo "(everything is in $here)"
