"""The output branch is state, never authority: hand edits and bad state files on `dro/rendered`.

A decision or status file that is not as dro wrote it is skipped or set aside with a warning
naming it, never a crash; a decision edited by hand, or one that contradicts its policy, is
divided again by the policy, and the new decision's trigger says why.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE, SourceRepo, git, make_source_repo

from reconciler import cli, load, pipeline, schedule
from reconciler.branch import lastpass, statefiles, status
from reconciler.domain import Observation, TriggerCode

CART = "decisions/shop/deployment-cart.yaml"
EU = "status/clusters/eu-west-1.yaml"
WHEN = "2026-01-01T00:00:00Z"


def reconcile(repo: SourceRepo, state: Path) -> int:
    return cli.main(["reconcile", "--once", "--repo", str(repo.bare), "--state-dir", str(state)])


def edit_output_branch(repo: SourceRepo, tmp: Path, path: str, edit: Callable[[str], str]) -> None:
    """Edit one file on `dro/rendered` by hand, as a person with push access would."""
    clone = tmp / "hand"
    git(tmp, "clone", "--quiet", "--branch", "dro/rendered", str(repo.bare), str(clone))
    target = clone / path
    target.write_text(edit(target.read_text()))
    git(clone, "commit", "--quiet", "--all", "-m", "hand edit")
    git(clone, "push", "--quiet", "origin", "dro/rendered")


def branch_file(repo: SourceRepo, path: str) -> str:
    return git(repo.bare, "show", f"dro/rendered:{path}")


def counts(text: str) -> dict[str, int]:
    document = yaml.safe_load(text)
    return {c["name"]: c["replicas"] for c in document["status"]["clusters"]}


def trigger(text: str) -> str:
    return str(yaml.safe_load(text)["status"]["diagnosis"]["trigger"])


def test_a_hand_edited_move_time_is_set_aside_instead_of_crashing_every_pass(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    repo = make_source_repo(tmp_path / "src")
    assert reconcile(repo, tmp_path / "state") == 0
    move = (
        "  moves:\n    - {from: eu-west-1, to: us-east-1, replicas: 1, reason: x, at: yesterday}\n"
    )
    edit_output_branch(
        repo,
        tmp_path,
        CART,
        lambda text: text.replace("  placementDigest:", move + "  placementDigest:"),
    )
    capfd.readouterr()
    assert reconcile(repo, tmp_path / "state") == 0
    err = capfd.readouterr().err
    assert "Traceback" not in err
    assert CART in err
    assert "edited outside dro" in err
    rewritten = branch_file(repo, CART)
    assert "yesterday" not in rewritten
    assert trigger(rewritten).startswith("previous decision set aside")
    head = repo.branch_sha("dro/rendered")
    assert reconcile(repo, tmp_path / "state") == 0
    assert repo.branch_sha("dro/rendered") == head, "once restored, the next pass is steady"


def test_hand_edited_counts_do_not_move_production(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    repo = make_source_repo(tmp_path / "src")
    assert reconcile(repo, tmp_path / "state") == 0
    policy_division = counts(branch_file(repo, CART))
    manifest = "clusters/eu-west-1/shop/deployment-cart.yaml"
    before = branch_file(repo, manifest)
    assert policy_division["eu-west-1"] == 1

    def shift(text: str) -> str:  # one replica from eu-west-1 to us-east-1, the total kept
        document = yaml.safe_load(text.partition("\n")[2])
        for entry in document["status"]["clusters"]:
            entry["replicas"] += {"eu-west-1": -1, "us-east-1": 1}.get(entry["name"], 0)
        return yaml.safe_dump(document)

    edit_output_branch(repo, tmp_path, CART, shift)
    assert counts(branch_file(repo, CART))["eu-west-1"] == 0
    capfd.readouterr()
    assert reconcile(repo, tmp_path / "state") == 0
    restored = branch_file(repo, CART)
    assert counts(restored) == policy_division
    assert branch_file(repo, manifest) == before
    assert "edited outside dro" in trigger(restored)
    assert CART in capfd.readouterr().err


def test_a_decision_that_contradicts_its_policy_is_divided_again(tmp_path: Path) -> None:
    """Even with a valid seal (forged), impossible counts are set aside and named."""
    repo = make_source_repo(tmp_path / "src")
    assert reconcile(repo, tmp_path / "state") == 0
    division = counts(branch_file(repo, CART))

    def forge(text: str) -> str:
        document = yaml.safe_load(text.partition("\n")[2])
        document["status"]["clusters"][0]["replicas"] = -3
        return statefiles.seal(yaml.safe_dump(document).encode()).decode()

    edit_output_branch(repo, tmp_path, CART, forge)
    assert reconcile(repo, tmp_path / "state") == 0
    restored = branch_file(repo, CART)
    assert counts(restored) == division
    assert "it has -3 target replicas on" in trigger(restored)


# --- fuzzing every field of a decision and a status file ----------------------------------------


def example_state() -> tuple[pipeline.Planned, dict[str, bytes]]:
    source = load.from_directory(EXAMPLE)
    planned, _ = pipeline.plan(source)
    return planned, dict(planned.tree)


PLANNED, TREE = example_state()
CART_ONLY = replace(
    PLANNED.spec,
    workloads=tuple(w for w in PLANNED.spec.workloads if w.key.name == "cart"),
    dependents=MappingProxyType({}),
)
"""The example spec cut down to cart's workloads: the fuzzed passes stay fast."""


def full_decision() -> dict[str, Any]:
    """cart's decision with every optional field dro writes filled in."""
    document = yaml.safe_load(statefiles.unseal(TREE[CART]))
    status_ = document["status"]
    status_["retiring"] = [{"name": "ap-south-1", "replicas": 1}]
    status_["moves"] = [
        {"from": "ap-south-1", "to": "eu-west-1", "replicas": 1, "reason": "r", "at": WHEN}
    ]
    status_["rebalanceServed"] = WHEN
    status_["unpricedReplicas"] = 1
    assert "costPerHour" in status_, "cart runs on priced clusters"
    status_["affinityTerm"] = "primary"
    status_["policy"]["namespace"] = "shop"
    return dict(document)


def full_status() -> dict[str, Any]:
    observation = Observation(
        cluster="eu-west-1",
        capacity={"cpu": 64.0, "memory": 2.0**36},
        used={"cpu": 8.0, "memory": 2.0**33},
        largest_node_free={"cpu": 8.0},
        observed_at=WHEN,
        stale=True,
        unreachable_since=WHEN,
        pending={},
    )
    body = status.cluster_status(observation)
    body["pending"] = [{"workload": "apps/Deployment/shop/cart", "pods": 2, "since": WHEN}]
    body["phase"] = "Unreachable"
    body["health"] = "Healthy"
    body["workloads"] = {"Healthy": 3}
    return {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "ClusterObservation",
        "metadata": {"name": "eu-west-1"},
        "status": body,
    }


BAD_VALUES: dict[str, Any] = {
    "missing": KeyError,
    "null": None,
    "string": "x",
    "bad-time": "2026-13-45T99:00:00Z",
    "negative": -1,
    "huge": 10**40,
    "float": 1.5,
    "bool": True,
    "map": {"a": 1},
}


def leaves(value: Any, pointer: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every node below the root, as a path of keys and indices."""
    children = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, child in children:
        if pointer == ("status",) and key == "diagnosis":
            continue  # kept verbatim, never read as state
        yield (*pointer, key)
        yield from leaves(child, (*pointer, key))


def mutated(document: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    result = copy.deepcopy(document)
    node = result
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return result


def cases(document: dict[str, Any]) -> list[Any]:
    return [
        pytest.param(path, value, id="/".join(map(str, path)) + "=" + name)
        for path in leaves(document)
        for name, value in BAD_VALUES.items()
    ]


@pytest.mark.parametrize(("path", "value"), cases(full_decision()))
def test_any_field_of_a_decision_may_be_wrong_without_a_crash(
    path: tuple[Any, ...], value: Any
) -> None:
    document = mutated(full_decision(), path, value)
    text = yaml.safe_dump(document).encode()
    for data in (statefiles.seal(text), text):  # forged with a valid seal, and edited by hand
        previous = lastpass.decisions({CART: data})
        decisions = schedule.place(CART_ONLY, previous, now=1.8e9)
        cart = next(d for d in decisions if d.key.name == "cart" and d.key.kind == "Deployment")
        back = previous.get(cart.key)
        if data is text or back is None or back.distrusted:
            assert back is None or not back.clusters
            if back is not None:
                assert cart.diagnosis.trigger.code is TriggerCode.SET_ASIDE
        assert sum(p.replicas or 0 for p in cart.clusters) == 4


def test_an_intact_decision_stands() -> None:
    previous = lastpass.decisions({CART: statefiles.seal(yaml.safe_dump(full_decision()).encode())})
    (decision,) = previous.values()
    assert decision.distrusted is None
    assert decision.moves
    assert decision.retiring


@pytest.mark.parametrize(("path", "value"), cases(full_status()))
def test_any_field_of_a_status_file_may_be_wrong_without_a_crash(
    path: tuple[Any, ...], value: Any
) -> None:
    text = yaml.safe_dump(mutated(full_status(), path, value)).encode()
    for data in (statefiles.seal(text), text):
        files = {EU: data}
        phases = lastpass.phases(files)
        statuses = status.previous_statuses(files)
        observations = status.committed_observations(files, PLANNED.spec.clusters)
        status.due(statuses.values(), 1.8e9, 600.0)
        status.urgent(files, {EU: TREE[EU]})
        cluster = next(c for c in PLANNED.spec.clusters if c.name == "eu-west-1")
        stale = status.stale_observation(cluster, statuses.get("eu-west-1"), unreachable_since=WHEN)
        schedule.place(CART_ONLY, None, {**observations, "eu-west-1": stale}, now=1.8e9)
        if data is text:
            assert statuses == {}
            assert phases == {"eu-west-1": ""}


def test_plan_says_which_decisions_were_set_aside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_source_repo(tmp_path / "src")
    assert reconcile(repo, tmp_path / "state") == 0
    edit_output_branch(
        repo, tmp_path, CART, lambda text: text.replace("replicas: 1", "replicas: 2", 1)
    )
    git(repo.work, "fetch", "--quiet", "origin")
    capsys.readouterr()
    args = ["plan", "--repo", str(repo.work), "--base", "main", "--head", "main"]
    assert cli.main([*args, "-o", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "1 decision(s) on the output branch were set aside" in out
    assert (
        f"shop/Deployment.apps/cart: previous decision set aside ({CART}: edited outside dro" in out
    )


def test_a_branch_written_before_seals_is_taken_as_it_is_once(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Upgrading dro divides nothing again: a branch with no sealed state file at all was
    written by an older dro, so its files are read as they are (their fields still checked),
    and the next commit seals them with the same counts."""
    repo = make_source_repo(tmp_path / "src")
    assert reconcile(repo, tmp_path / "state") == 0
    clone = tmp_path / "old"
    git(tmp_path, "clone", "--quiet", "--branch", "dro/rendered", str(repo.bare), str(clone))
    division = counts(branch_file(repo, CART))
    for folder in ("decisions", "status"):
        for path in (clone / folder).rglob("*.yaml"):
            text = path.read_text()
            assert text.startswith("# dro state sha256:")
            path.write_text(text.partition("\n")[2])
    git(clone, "commit", "--quiet", "--all", "-m", "as an older dro wrote it")
    git(clone, "push", "--quiet", "origin", "dro/rendered")
    capfd.readouterr()
    assert reconcile(repo, tmp_path / "state") == 0
    resealed = branch_file(repo, CART)
    assert resealed.startswith("# dro state sha256:")
    assert counts(resealed) == division
    assert not trigger(resealed).startswith("previous decision set aside")
    assert "edited outside dro" not in capfd.readouterr().err
