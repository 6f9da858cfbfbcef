#!/bin/sh
# `make demo-best-of`: implement_best_of on a throwaway git repository, offline.
#
# Three demo agents try one change side by side, each in a git worktree of its
# own; the first whose checks pass is proposed; the run waits for a person;
# approving it fast-forwards the repository's branch to the winner's commit.
# Everything (repository, journal, worktrees, report) goes in one temporary
# folder, named at the end. ADWS is the adws command (default .venv/bin/adws).
set -eu
adws=${ADWS:-.venv/bin/adws}
here=$(mktemp -d "${TMPDIR:-/tmp}/adws-best-of-XXXXXX")
project="$here/project"
export ADWS_JOURNAL="$here/runs.db"

say() { printf '\n$ %s\n' "$1"; }

say 'git init project && git -C project commit -m "A project to change"   # one file: README'
git init -q -b main "$project"
git -C "$project" config user.name "adws demo"
git -C "$project" config user.email "demo@adws.invalid"
echo "A throwaway project for the best-of demo." > "$project/README"
git -C "$project" add README
git -C "$project" commit -q -m "A project to change"

say "adws run implement_best_of -i task='Add a demo note' -i target_dir=project \\
    -i check_command=\"grep -q 'Add a demo note' ADWS_DEMO.md\""
code=0
$adws run implement_best_of --workflows workflows -i task="Add a demo note" \
    -i target_dir="$project" -i check_command="grep -q 'Add a demo note' ADWS_DEMO.md" \
    -i output_dir="$here/reports" || code=$?
if [ "$code" -ne 3 ]; then
    echo "expected exit code 3 (waiting for approval), got $code" >&2
    exit 1
fi

say 'adws approvals'
$adws approvals --workflows workflows
run=$($adws approvals --workflows workflows | sed -n '1s/ .*//p')

say "adws approve $run --note 'looks right'"
$adws approve "$run" --workflows workflows --note "looks right"

say 'git -C project log --oneline --decorate'
git -C "$project" log --oneline --decorate
say "adws status $run"
$adws status "$run"

printf '\nEverything is in %s (the journal, the report, the repository); remove it when done.\n' \
    "$here"
