"""Commit messages on the output branch: what changed and why, on decisions (no git), and
once through `dro reconcile --once` on a real repository, trailers included."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from reconciler import cli
from reconciler.commit import describe as commitmessage
from reconciler.domain import (
    Decision,
    Diagnosis,
    Move,
    MoveCode,
    MoveReason,
    Placed,
    ResourceKey,
    Strategy,
    Trigger,
    TriggerCode,
)
from tests.conftest import SourceRepo, git

AT = "2026-01-01T00:00:00Z"
NO_TRIGGER = Trigger()


def key(name: str, kind: str = "Deployment", group: str = "apps") -> ResourceKey:
    return ResourceKey(group=group, kind=kind, namespace="shop", name=name)


def decision(
    name: str,
    clusters: dict[str, int | None],
    *,
    trigger: Trigger = NO_TRIGGER,
    retiring: dict[str, int] | None = None,
    moves: tuple[Move, ...] = (),
    unschedulable: str | None = None,
    kind: str = "Deployment",
) -> Decision:
    return Decision(
        key=key(name, kind, "apps" if kind == "Deployment" else ""),
        api_version="apps/v1",
        policy=None,
        clusters=tuple(Placed(c, n) for c, n in sorted(clusters.items())),
        diagnosis=Diagnosis(strategy=Strategy.DYNAMIC_WEIGHT, trigger=trigger),
        retiring=tuple(Placed(c, n) for c, n in sorted((retiring or {}).items())),
        moves=moves,
        unschedulable=unschedulable,
    )


def compose(
    before: list[Decision],
    after: list[Decision],
    state: dict[str, bytes] | None = None,
    tree: dict[str, bytes] | None = None,
) -> str:
    return commitmessage.compose(
        before=before, after=after, state=state or {}, tree=tree or {}, source="ab" * 20
    )


def subject_and_body(message: str) -> tuple[str, str]:
    subject, _, body = message.partition("\n\n")
    subject = subject.removesuffix("\n")
    assert len(subject) <= commitmessage.SUBJECT_LIMIT, subject
    assert "\n" not in subject
    return subject, body


def test_first_pass_counts_what_it_places() -> None:
    after = [decision("cart", {"eu-west-1": 2, "us-east-1": 2}), decision("web", {"eu-west-1": 3})]
    subject, body = subject_and_body(compose([], after))
    assert subject == "first placement: 2 workloads on 2 clusters"
    assert "- place shop/cart on eu-west-1, us-east-1\n- place shop/web on eu-west-1" in body


def test_scale_names_the_workload_its_counts_and_its_trigger() -> None:
    before = [decision("web", {"a": 2, "b": 2}), decision("cart", {"a": 1})]
    after = [
        decision("web", {"a": 3, "b": 3}, trigger=Trigger(TriggerCode.SCALED, "4 to 6")),
        decision("cart", {"a": 1}),
    ]
    subject, body = subject_and_body(compose(before, after))
    assert subject == "scale shop/web 4 → 6"
    assert body == "- scale shop/web 4 → 6 (a +1, b +1)\n  why: replicas changed from 4 to 6\n"


def test_filling_moves_are_summed_per_reason() -> None:
    filling = MoveReason(MoveCode.FILLING, "eu-central-1: water level 0.60 vs 0.10 (cpu)")
    reason = filling.text
    moves = (Move("a", "eu-central-1", 2, filling, AT),)
    before = [decision("checkout", {"a": 4, "b": 2})]
    after = [
        decision(
            "checkout",
            {"a": 2, "b": 2, "eu-central-1": 2},
            trigger=Trigger(TriggerCode.REBALANCED, reason),
            retiring={"a": 2},
            moves=moves,
        )
    ]
    subject, body = subject_and_body(compose(before, after))
    assert subject == "filling eu-central-1: moved 2 shop/checkout replicas"
    assert "(a −2, eu-central-1 +2)" in body
    assert f"why: re-balanced: {reason}" in body
    several = [*before, decision("cart", {"a": 3})]
    moved_too = decision(
        "cart", {"a": 2, "eu-central-1": 1}, moves=(Move("a", "eu-central-1", 1, filling, AT),)
    )
    subject, _ = subject_and_body(compose(several, [*after, moved_too]))
    assert subject == "filling eu-central-1: moved 3 replicas of 2 workloads"


def test_retiring_replicas_say_the_move_is_done() -> None:
    before = [
        decision("web", {"b": 4}, retiring={"a": 4}, trigger=Trigger(TriggerCode.REBALANCED, "x"))
    ]
    after = [decision("web", {"b": 4}, trigger=Trigger(TriggerCode.STEADY))]
    subject, body = subject_and_body(compose(before, after))
    assert subject == "retire 4 old shop/web replicas"
    assert "why: old copies on a retired: the move's new copies are up" in body


def test_unschedulable_comes_first_with_its_reason() -> None:
    reason = "0/3 clusters are available: 3 water level above 0.85 (cpu)"
    before = [decision("web", {"a": 2}), decision("big", {"a": 10, "b": 10})]
    after = [
        decision("web", {}, unschedulable=reason),
        decision("big", {"a": 20, "b": 20}, trigger=Trigger(TriggerCode.SCALED, "20 to 40")),
    ]
    subject, body = subject_and_body(compose(before, after))
    assert subject == "shop/web became unschedulable and 1 more"
    assert f"- shop/web became unschedulable (a −2)\n  why: {reason}" in body
    assert "- scale shop/big 20 → 40" in body


def test_status_only_counts_the_clusters() -> None:
    same = [decision("web", {"a": 2})]
    state = {f"status/clusters/{c}.yaml": b"used: 1\n" for c in "abcd"}
    tree = {**state, **{f"status/clusters/{c}.yaml": b"used: 2\n" for c in "abc"}}
    subject, body = subject_and_body(compose(same, same, state, tree))
    assert subject == "status: water levels of 3 clusters"
    assert body == "- water levels: a, b, c\n"


def test_a_removed_workload() -> None:
    before = [decision("cart", {"a": 2}), decision("cart", {"a": None}, kind="Service")]
    subject, body = subject_and_body(compose(before, []))
    assert subject == "remove shop/cart and 1 more"
    assert "- remove shop/service/cart\n  why: removed from the source" in body


def test_many_changes_stay_short_and_are_counted() -> None:
    count = commitmessage.BODY_ENTRIES + 50
    long = "a-rather-long-workload-name-that-goes-on-and-on-" * 2
    before = [decision(f"{long}{i:03}", {"eu-west-1": 1}) for i in range(count)]
    after = [
        decision(f"{long}{i:03}", {"eu-west-1": 2}, trigger=Trigger(TriggerCode.SCALED, "1 to 2"))
        for i in range(count)
    ]
    message = compose(before, after)
    subject, body = subject_and_body(message)
    assert subject.endswith(f"… and {count - 1} more")
    assert body.count("\n- scale ") == commitmessage.BODY_ENTRIES - 1
    assert body.endswith("- … and 50 more workload changes\n")
    assert compose(list(reversed(before)), list(reversed(after))) == message, "deterministic"


def test_only_manifests_changed() -> None:
    same = [decision("web", {"a": 2})]
    subject, body = subject_and_body(compose(same, same))
    assert subject == "update manifests from source abababababab: placements unchanged"
    assert body == ""


def _subjects(repo: SourceRepo) -> list[str]:
    log = git(repo.bare, "log", "--format=%B%x00", "dro/rendered")
    return [m.strip() for m in log.split("\0") if m.strip()]


def test_reconcile_commits_say_what_changed_and_keep_the_trailers(
    source_repo: SourceRepo, tmp_path: Path
) -> None:
    def once() -> None:
        state = str(tmp_path / "state")
        assert (
            cli.main(["reconcile", "--once", "--repo", str(source_repo.bare), "--state-dir", state])
            == 0
        )

    once()
    frontend = source_repo.work / "workloads/shop/frontend.yaml"
    frontend.write_text(frontend.read_text().replace("replicas: 6", "replicas: 9"))
    scaled = source_repo.commit("scale the frontend")
    once()
    once()  # nothing changed: no commit
    latest, first = _subjects(source_repo)
    assert first.startswith("first placement: ")
    assert latest.startswith("scale shop/frontend 6 → 9\n\n- scale shop/frontend 6 → 9 (")
    assert "  why: replicas changed from 6 to 9\n" in latest
    assert latest.endswith(f"\n\nDro-Source-Commit: {scaled}\nDro-Observations: declared")


def test_a_stateful_move_names_its_phase() -> None:
    before = [decision("db", {"us-east-1": 1}, kind="StatefulSet")]
    drained = Trigger(TriggerCode.NOT_CANDIDATE, "us-east-1")
    moving = decision("db", {"eu-west-1": 1}, kind="StatefulSet", trigger=drained)
    after = [replace(moving, retiring=(Placed("us-east-1", 1, phase="Provisioning", since=AT),))]
    subject, body = subject_and_body(compose(before, after))
    assert subject == "move shop/statefulset/db us-east-1 → eu-west-1, Provisioning"
    assert f"why: {drained.text}" in body


def test_a_partial_placement_names_its_pending_replicas() -> None:
    short = "Clusters available replicas 50 are not enough to schedule."
    partial = replace(
        decision("big", {"a": 20, "b": 30}, unschedulable=short),
        pending=30,
        over_limit=(Placed("a", 15),),
    )
    subject, body = subject_and_body(compose([], [partial]))
    assert "- place shop/big on a, b, 30 pending" in body
    roomier = replace(partial, clusters=(Placed("a", 20), Placed("b", 50)), pending=10)
    subject, _ = subject_and_body(compose([partial], [roomier]))
    assert subject == "place shop/big on a, b, 10 pending"
