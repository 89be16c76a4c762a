#!/usr/bin/env bash
# make demo: run dro's main job offline on example-repo/.
# The example becomes the first commit of a fresh git repository (build/demo/source.git, a
# bare repository standing in for the team's remote). `dro reconcile --once` then pulls it,
# validates, schedules, renders and commits the output branch back to it.
set -euo pipefail
cd "$(dirname "$0")/.."
demo=build/demo
rm -rf "$demo"
mkdir -p "$demo"
cp -R example-repo "$demo/work"
git -C "$demo/work" init --quiet --initial-branch=main
git -C "$demo/work" add --all
# A fixed date: the demo's commits, and so every hash it prints, are the same on every run.
GIT_AUTHOR_DATE="2026-01-05T09:00:00Z" GIT_COMMITTER_DATE="2026-01-05T09:00:00Z" \
    git -C "$demo/work" -c user.name="Platform Team" -c user.email=platform@example.com \
    commit --quiet --message "Example fleet: clusters, workloads and policies"
git clone --quiet --bare "$demo/work" "$demo/source.git"
repo="$demo/source.git"

echo "== dro validate --repo $repo --ref main"
dro validate --repo "$repo" --ref main --state-dir "$demo/state"
echo
echo "== dro reconcile --once --repo $repo --ref main"
dro reconcile --once --repo "$repo" --ref main --state-dir "$demo/state"
echo
echo "== a second pass over the same commit changes nothing"
dro reconcile --once --repo "$repo" --ref main --state-dir "$demo/state" | tail -2
echo
echo "The rendered branch is dro/rendered in $repo:"
git -C "$repo" log --format='  %h %s%n%(trailers:only,unfold)' -1 dro/rendered
git -C "$repo" ls-tree -r --name-only dro/rendered | awk -F/ 'NF > 2 {print $1 "/" $2} NF <= 2 {print $1}' \
    | sort | uniq -c | awk '{printf "  %-28s %s files\n", $2, $1}'
echo "  browse it: git -C $repo show dro/rendered:clusters/eu-west-1/shop/deployment-frontend.yaml"
