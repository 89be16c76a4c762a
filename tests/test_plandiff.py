"""Plan diff, its report and Secret masking, on values: no git, no CLI."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from reconciler import yamlio
from reconciler.branch import statefiles, status
from reconciler.domain import (
    Cluster,
    Decision,
    Move,
    MoveBudget,
    MoveCode,
    MoveReason,
    Origin,
    Placed,
    ResourceKey,
)
from reconciler.errors import Problem
from reconciler.kube import secrets
from reconciler.review import followups, plandiff, planreport

WEB = ResourceKey(group="apps", kind="Deployment", namespace="shop", name="web")
SINCE = "2026-01-01T00:00:00Z"


def decision(**clusters: int | None) -> Decision:
    placed = tuple(Placed(name.replace("_", "-"), n) for name, n in sorted(clusters.items()))
    return Decision(key=WEB, api_version="apps/v1", policy=None, clusters=placed)


def side(ref: str, *decisions: Decision, tree: dict[str, bytes] | None = None) -> plandiff.Side:
    names = tuple(sorted({p.cluster for d in decisions for p in d.clusters}))
    return plandiff.Side(
        ref=ref, commit="0" * 40, decisions=decisions, tree=tree or {}, clusters=names
    )


@pytest.mark.parametrize(
    ("before", "after", "moved"),
    [
        ({"a": 3, "b": 3}, {"a": 3, "b": 3}, None),
        ({"a": 3, "b": 3}, {"a": 1, "b": 5}, 2),
        ({"a": 3, "b": 3}, {"a": 4, "b": 4}, 0),  # scaled up: nothing left a cluster
        ({"a": 4}, {"b": 2, "c": 2}, 4),
        ({"a": 5, "b": 1}, {"a": 2, "c": 1}, 1),  # 3 removed from a, 1 from b; 1 added to c
    ],
)
def test_moved_replicas(before: dict[str, int], after: dict[str, int], moved: int | None) -> None:
    diff = plandiff.compare(side("main", decision(**before)), side("head", decision(**after)))
    if moved is None:
        assert diff.workloads == ()
        return
    (change,) = diff.workloads
    assert change.moved == moved
    assert diff.counts()["replicas moved"] == moved


def test_schedulability_changes_are_counted_with_their_reason() -> None:
    blocked = Decision(
        key=WEB, api_version="apps/v1", policy=None, clusters=(), unschedulable="0/3 fit"
    )
    diff = plandiff.compare(side("main", decision(a=2)), side("head", blocked))
    (change,) = diff.workloads
    assert change.schedulability == "unschedulable"
    assert diff.counts()["became unschedulable"] == 1
    assert "0/3 fit" in planreport.markdown(diff)
    back = plandiff.compare(side("main", blocked), side("head", decision(a=2)))
    assert back.counts()["became schedulable"] == 1


def test_an_invalid_head_has_nothing_to_compare() -> None:
    problem = Problem(path="workloads/web.yaml", line=7, pointer="/spec", message="bad")
    head = plandiff.Side(ref="head", problems=(problem,))
    diff = plandiff.compare(side("main", decision(a=1)), head)
    assert not diff.head.valid
    assert not diff.differs
    assert "workloads/web.yaml:7: /spec: bad" in planreport.markdown(diff)
    assert planreport.document(diff)["head"]["problems"] == ["workloads/web.yaml:7: /spec: bad"]


def test_kustomization_and_state_files_are_not_manifest_changes() -> None:
    before = {"clusters/a/kustomization.yaml": b"x", "decisions/shop/web.yaml": b"1"}
    after = {"clusters/a/kustomization.yaml": b"y", "decisions/shop/web.yaml": b"2"}
    diff = plandiff.compare(
        side("main", decision(a=1), tree=before), side("head", decision(a=1), tree=after)
    )
    assert not diff.differs


def secret(**values: str) -> bytes:
    return yamlio.dump(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "db",
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{pw}"},
            },
            "data": values,
        }
    ).encode()


def test_secret_values_are_masked_and_changed_keys_named() -> None:
    old = secret(user="dXNlcg==", password="b2xk", dropped="eA==")
    new = secret(user="dXNlcg==", password="bmV3", added="eQ==")
    shown = secrets.redact_pair("shop/secret-db.yaml", old, new)
    text = shown.before + shown.after
    for value in ("dXNlcg==", "b2xk", "bmV3", "eA==", "eQ==", "{pw}"):
        assert value not in text
    assert shown.changed_keys == ("data.added", "data.dropped", "data.password")
    assert 'user: "<redacted>"' in shown.before
    assert 'password: "<redacted: old value>"' in shown.before
    assert 'password: "<redacted: new value>"' in shown.after


def test_an_unparsable_secret_is_shown_opaque() -> None:
    shown = secrets.redact_pair("shop/secret-db.yaml", b"password: [unclosed", None)
    assert shown.before == secrets.OPAQUE
    assert "unclosed" not in shown.before


def test_a_non_secret_file_is_shown_as_is() -> None:
    text = b"apiVersion: v1\nkind: ConfigMap\ndata:\n  level: debug\n"
    shown = secrets.redact_pair("shop/configmap-web.yaml", text, None)
    assert shown.before == text.decode()
    assert shown.changed_keys == ()


def test_markdown_is_cut_to_the_limit_with_a_note() -> None:
    manifest = "\n".join(f"line {i}: {'x' * 60}" for i in range(400)).encode()
    before = {f"clusters/c{i:02d}/shop/deployment-web.yaml": manifest for i in range(20)}
    after = dict.fromkeys(before, manifest.replace(b"x", b"y"))
    diff = plandiff.compare(
        side("main", decision(a=1), tree=before), side("head", decision(a=2), tree=after)
    )
    assert len(diff.manifests) == 20
    text = planreport.markdown(diff, limit=20_000)
    assert len(text) <= 20_000
    assert "Cut to stay under 20,000 characters" in text
    assert "cluster blocks" in text
    full = planreport.markdown(diff, limit=10_000_000)
    assert "Cut to stay under" not in full
    assert full.count("<details>") == 21
    document = planreport.document(diff)
    assert sum(len(c["files"]) for c in document["manifests"]) == 20
    json.dumps(document)  # plain data


def test_a_diff_holding_backticks_gets_a_longer_fence() -> None:
    after = {"clusters/a/shop/configmap-doc.yaml": b"data:\n  md: '```sh'\n"}
    diff = plandiff.compare(side("main", decision(a=1)), side("head", decision(a=1), tree=after))
    text = planreport.markdown(diff)
    assert "````diff" in text


@pytest.mark.parametrize(
    ("level", "bar"), [(0.0, "░" * 10), (0.63, "█" * 6 + "░" * 4), (1.4, "█" * 10)]
)
def test_water_level_bars(level: float, bar: str) -> None:
    assert planreport.bar(level) == bar


def test_committed_observations_come_back_from_status_files() -> None:
    cluster = Cluster(
        name="eu",
        origin=Origin(path="clusters/eu.yaml", line=1),
        capacity={"cpu": 8.0},
        allocated={"cpu": 1.0},
    )
    files = {
        "status/clusters/eu.yaml": statefiles.seal(
            yamlio.dump(
                {
                    "status": {
                        "source": "observed",
                        "capacity": {"cpu": 10},
                        "used": {"cpu": 9},
                        "unreachableSince": "2026-01-01T00:00:00Z",
                        "pending": [
                            {"workload": "apps/Deployment/shop/web", "pods": 2, "since": SINCE}
                        ],
                    }
                }
            ).encode()
        ),
        "status/workloads/shop/deployment.apps-web.yaml": statefiles.seal(
            yamlio.dump(
                {
                    "status": {
                        "resource": "apps/Deployment/shop/web",
                        "clusters": [{"name": "eu", "health": "Healthy", "message": ""}],
                    }
                }
            ).encode()
        ),
        "status/clusters/gone.yaml": statefiles.seal(b"status: {source: observed}\n"),
    }
    (observed,) = status.committed_observations(files, [cluster]).values()
    assert observed.capacity == {"cpu": 10.0}
    assert observed.used == {"cpu": 9.0}
    assert observed.unreachable_since == "2026-01-01T00:00:00Z"
    assert observed.pending == {WEB: (2, SINCE)}
    assert observed.health == {WEB: ("Healthy", "")}
    declared = {"status/clusters/eu.yaml": statefiles.seal(b"status: {source: declared}\n")}
    assert status.committed_observations(declared, [cluster]) == {}


def test_a_reworded_unschedulable_reason_is_no_change() -> None:
    def blocked(reason: str) -> Decision:
        return Decision(
            key=WEB, api_version="apps/v1", policy=None, clusters=(), unschedulable=reason
        )

    diff = plandiff.compare(side("main", blocked("0/50 fit")), side("head", blocked("0/51 fit")))
    assert diff.workloads == ()


def test_a_stateful_move_shows_its_phase() -> None:

    moving = replace(
        decision(b=2), retiring=(Placed("a", 2, "Provisioning", "2026-11-23T10:00:00Z"),)
    )
    diff = plandiff.compare(side("main", decision(a=2)), side("head", moving))
    (change,) = diff.workloads
    assert (change.move_before, change.move_after) == (None, "a → b, Provisioning")
    assert "Stateful move: a → b, Provisioning (make-before-break" in planreport.markdown(diff)
    # a phase that advances with the same replicas is still a change to review
    syncing = replace(moving, retiring=(moving.retiring[0]._replace(phase="Syncing"),))
    (advanced,) = plandiff.compare(side("main", moving), side("head", syncing)).workloads
    assert advanced.move_after == "a → b, Syncing"


def test_follow_ups_name_moves_phases_and_filling() -> None:
    moving = Decision(
        key=WEB,
        api_version="apps/v1",
        policy=None,
        clusters=(Placed("eu-west-1", 1),),
        retiring=(Placed("us-east-1", 1, phase="Syncing", since=SINCE),),
    )
    filled = replace(
        decision(a=2, c=2),
        retiring=(Placed("a", 2),),
        moves=(
            Move(
                "a",
                "c",
                2,
                MoveReason(MoveCode.FILLING, "c: water level 0.60 vs 0.10 (cpu)"),
                SINCE,
            ),
        ),
    )
    said = followups.sentences(
        [moving, filled], filling={"c"}, budget=MoveBudget(count=4), now=1767225600.0
    )
    assert said == (
        "Moves in flight: 2 old replicas of shop/Deployment.apps/web keep running on a "
        "(make-before-break); a later pass retires them once the new copies are observed "
        "Healthy (on a cluster dro does not observe, the next pass).",
        "Stateful move of shop/Deployment.apps/web: us-east-1 → eu-west-1, now Syncing; "
        "later passes take it through CutOver → Done.",
        "Filling c: this pass moves 2 replicas in; later passes move more, at most 4 replicas "
        "per pass (rebalance.maxMovesPerPass), until a pass finds no move worth the threshold.",
    )
    assert followups.sentences([decision(a=2)], filling=(), budget=MoveBudget(), now=0.0) == ()
