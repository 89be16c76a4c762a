"""dro: a declarative GitOps reconciler for multi-cluster placement.

The pipeline is the folder listing. `pipeline/` runs one pass, one sentence per stage, and is
the only package that knows their order (its `clusters` and `publishing` hold the online
clusters and the commit call; `sharded` is the pass of a member of a sharded `dro run`):

    load/       1 LOAD      the source tree at a ref (kustomize and Helm folders built by
                            the tools: load/builds.py), and the last pass's state
    validate/   2 VALIDATE  Source → Spec, every problem in one pass
    live/       3 OBSERVE   every cluster's water level, at once   (live/observe.py)
    schedule/   4 SCHEDULE  Spec + observations → Decisions         (plugins/: one file each)
    render/     5 RENDER    Spec + Decisions → the output-branch tree
    commit/     6 COMMIT    the tree → one commit on the output branch
    live/       7 APPLY     the tree → every cluster, server-side   (live/apply.py)

`audit.py` tells operators each stage's result (the pass's log events), so the pass reads as
its stages; `laststate.py` is the last pass's state, read once per pass and passed on;
`settings/` is the operator's settings, one table for every command and the only reader of
the environment.

Beneath the stages: `branch/` (the output branch's format, written and read back), `kube/`
(Kubernetes knowledge; `kube/client.py` is the only `kubernetes` import), `git/` (the only
`pygit2` import), `yamlio/` (the only PyYAML import), `domain/` (the frozen values that flow
between stages), `errors.py` and `redact.py`. `pyproject.toml`'s import contracts keep these
layers.

Above them, the faces: `cli/` (the dro command), `review/` (dro plan), `service/` (dro run)
and `web/` (the read-only pages of the output branch that dro run serves at `/`).
"""
