#!/usr/bin/env bash
# make demo: run dro's main job offline on example-repo/.
# The example is copied into a fresh git repository under build/demo/source; `dro reconcile
# --once` then validates, schedules, renders and commits the output branch back into it.
set -euo pipefail
cd "$(dirname "$0")/.."
demo=build/demo
rm -rf "$demo"
mkdir -p "$demo"
cp -R example-repo "$demo/source"
git -C "$demo/source" init --quiet --initial-branch=main
git -C "$demo/source" add --all
git -C "$demo/source" -c user.name="Platform Team" -c user.email=platform@example.com \
    commit --quiet --message "Example fleet: clusters, workloads and policies"

echo "== dro validate (source: $demo/source, ref main)"
dro validate --repo "$demo/source" --ref main --state-dir "$demo/state"
echo
echo "== dro reconcile --once"
dro reconcile --once --repo "$demo/source" --ref main --state-dir "$demo/state"
echo
echo "The rendered branch is dro/rendered in $demo/source:"
git -C "$demo/source" log --format='  %h %s%n%(trailers:only,unfold)' -1 dro/rendered
echo "  browse it:  git -C $demo/source ls-tree -r --name-only dro/rendered | head"
git -C "$demo/source" ls-tree -r --name-only dro/rendered | awk -F/ '{print "  " $1 "/" $2}' | sort | uniq -c | head -20
