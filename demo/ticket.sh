#!/bin/sh
# `make demo-ticket`: an issue becomes a draft pull request, a `/adws` comment a second commit.
#
# Offline: the fake GitHub (python -m adws.testing.github_api), a bare
# repository as `origin`, and the demo agent answering the shipped fix_issue
# workflow. Ana (write permission) opens a labelled issue; `adws watch github
# --once --work 1` queues one run and runs it: triage, a fix in a worktree
# checked by `grep`, a push to adws/1-..., one draft pull request. Then Ana
# comments `/adws ...` on a line of the pull request and the watcher runs the
# next round on the same branch: a second commit on the same pull request.
# Everything goes in one temporary folder, named at the end. ADWS is the adws
# command, PYTHON the python that has adws (defaults: .venv/bin/...).
set -eu
adws=${ADWS:-.venv/bin/adws}
python=${PYTHON:-.venv/bin/python}
here=$(mktemp -d "${TMPDIR:-/tmp}/adws-ticket-XXXXXX")
project="$here/project"
export ADWS_JOURNAL="$here/runs.db"

say() { printf '\n$ %s\n' "$1"; }

git init -q --bare -b main "$here/origin.git"
git clone -q "$here/origin.git" "$project" 2>/dev/null
git -C "$project" config user.name "adws demo"
git -C "$project" config user.email "demo@adws.invalid"
echo "A throwaway project for the ticket demo." > "$project/README"
git -C "$project" add README
git -C "$project" commit -q -m "A project to change"
git -C "$project" push -q origin main

# The fake GitHub: octo/app, the bot's token (adws-bot) and Ana's (write permission).
cat > "$here/github.json" <<JSON
{"tokens": {"ghp_adwsFakeTokenNeverReal0123456789": "adws-bot", "ana-token": "ana"},
 "repos": {"octo/app": {"default_branch": "main", "issues": [], "comments": [],
   "review_comments": [], "permissions": {"ana": "write"}}},
 "next_id": 1, "faults": []}
JSON
"$python" -m adws.testing.github_api --state "$here/github.json" > "$here/github.out" &
fake=$!
trap 'kill $fake 2>/dev/null; wait $fake 2>/dev/null || true' EXIT
while [ "$(wc -l < "$here/github.out")" -lt 2 ]; do sleep 0.1; done
export ADWS_GITHUB_API_URL="$(sed -n 1p "$here/github.out")"
export GITHUB_TOKEN="$(sed -n 2p "$here/github.out")"

as_ana() {  # METHOD PATH JSON: a request as Ana, who is a person, not adws
    "$python" - "$@" <<'PY'
import json, os, sys, urllib.request
method, path, body = sys.argv[1:4]
request = urllib.request.Request(os.environ["ADWS_GITHUB_API_URL"] + path, body.encode(),
                                 method=method, headers={"Authorization": "Bearer ana-token"})
with urllib.request.urlopen(request) as answer:
    made = json.load(answer)
print(f"  {method} {path} -> #{made.get('number', made.get('id'))}")
PY
}
show() {  # what the fake GitHub holds now
    "$python" - "$here/github.json" <<'PY'
import json, sys
repo = json.load(open(sys.argv[1]))["repos"]["octo/app"]
for issue in repo["issues"]:
    kind = "pull request" if "head" in issue else "issue"
    labels = ", ".join(label["name"] for label in issue["labels"])
    extra = f" draft={issue['draft']} head={issue['head']['ref']}" if "head" in issue else ""
    print(f"  {kind} #{issue['number']} {issue['title']!r} [{labels}]{extra}")
    if "head" in issue:
        print("    " + issue["body"].replace("\n", "\n    "))
for comment in repo["comments"]:
    print(f"  comment on {comment['issue_url'].rsplit('/', 2)[-2:]} by {comment['user']['login']}: {comment['body']}")
for comment in repo["review_comments"]:
    print(f"  review comment by {comment['user']['login']}: {comment['body']}")
PY
}
watch() {
    $adws watch github --repo octo/app --label adws --workflow fix_issue --workflows workflows \
        -i target_dir="$project" -i check_command="grep -q Fix ADWS_DEMO.md" --once --work 1
}

say "Ana opens issue #1 'Crash on empty input', labelled adws"
as_ana POST /repos/octo/app/issues \
    '{"title": "Crash on empty input", "body": "It crashes when the input is empty.", "labels": ["adws"]}'

say "adws watch github --repo octo/app --label adws --workflow fix_issue -i target_dir=project \\
    -i check_command='grep -q Fix ADWS_DEMO.md' --once --work 1"
watch

say 'what GitHub shows'
show
say 'git -C origin.git log --oneline adws/1-crash-on-empty-input'
git -C "$here/origin.git" log --oneline adws/1-crash-on-empty-input

say "Ana comments on line 3 of ADWS_DEMO.md in pull request #2: '/adws say why it crashed'"
as_ana POST /repos/octo/app/pulls/2/comments \
    '{"body": "/adws say why it crashed", "path": "ADWS_DEMO.md", "line": 3}'

say 'adws watch github ... --once --work 1   # the next round, on the pull request'"'"'s branch'
watch

say 'what GitHub shows'
show
say 'git -C origin.git log --oneline adws/1-crash-on-empty-input   # a second commit'
git -C "$here/origin.git" log --oneline adws/1-crash-on-empty-input
say "adws runs --ticket 'github:octo/app#1'"
$adws runs --ticket 'github:octo/app#1'

printf '\nEverything is in %s (the journal, the fake GitHub'"'"'s state, the repositories).\n' "$here"
