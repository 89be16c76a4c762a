"""Karmada output (`spec.output.karmada`): applied to Karmada, every emitted policy is divided
back into dro's decision, and its overrides rebuild the manifests dro renders per cluster."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonpatch
import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler import load, render, schedule, validate
from reconciler.cli import main
from reconciler.domain import Decision, Diagnosis, Output, Placed, PolicyRef, Strategy
from reconciler.render import dnsnames, karmadaout, patchdiff
from reconciler.schedule import division
from tests.builders.schedule import PLAIN, cluster, deployment, spec_of

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = {
    kind: json.loads((ROOT / "schemas" / f"karmada-{name}.json").read_text())
    for kind, name in [
        ("PropagationPolicy", "propagationpolicy"),
        ("ClusterPropagationPolicy", "propagationpolicy"),
        ("OverridePolicy", "overridepolicy"),
        ("ClusterOverridePolicy", "overridepolicy"),
    ]
}
NAMES = ["ap-1", "eu-1", "eu-2", "us-1", "us-2", "us-3"]


def documents(data: bytes) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(data) if d is not None]


def check_schema(document: dict[str, Any]) -> None:
    schema = SCHEMAS[document["kind"]]
    jsonschema.validators.validator_for(schema)(schema).validate(document)


def karmada_division(template: dict[str, Any], policy: dict[str, Any], uid: str) -> dict[str, int]:
    """What Karmada's scheduler assigns for `policy` (KARMADA.md §3.6: candidates are the
    clusterNames, Duplicated gives each the template's replicas, StaticWeight divides them)."""
    placement = policy["spec"]["placement"]
    candidates = placement["clusterAffinity"]["clusterNames"]
    scheduling = placement.get("replicaScheduling") or {}
    replicas = (template.get("spec") or {}).get("replicas")
    if scheduling.get("replicaSchedulingType", "Duplicated") == "Duplicated":
        return dict.fromkeys(candidates, replicas)
    weights = [
        (name, rule["weight"])
        for rule in scheduling["weightPreference"]["staticWeightList"]
        for name in rule["targetCluster"]["clusterNames"]
    ]
    result = division.assign(
        Strategy.STATIC_WEIGHT, replicas, candidates, static_weights=weights, uid=uid
    )
    assert isinstance(result, dict)
    return result


def member_of(template: dict[str, Any], replicas: int | None, rules: list[Any], name: str) -> Any:
    """The manifest Karmada sends to cluster `name`: the template with its divided replicas,
    then the plaintext overriders of the rules that target the cluster."""
    member = json.loads(json.dumps(template))
    if replicas is not None:
        member["spec"]["replicas"] = replicas
    for rule in rules:
        if name in rule["targetCluster"]["clusterNames"]:
            member = apply_plaintext(member, rule["overriders"]["plaintext"])
    return member


def karmada_spec(replicas: int) -> Any:
    spec = spec_of([cluster(n) for n in NAMES], [deployment("web", replicas)], PLAIN)
    return replace(spec, config=replace(spec.config, output=Output(karmada=True)))


@settings(max_examples=150, deadline=None)
@given(
    counts=st.dictionaries(st.sampled_from(NAMES), st.integers(0, 60), min_size=1),
    divided=st.booleans(),
    uid=st.text(min_size=0, max_size=12),
)
def test_every_emitted_policy_divides_back_into_the_decision(
    counts: dict[str, int], divided: bool, uid: str
) -> None:
    total = sum(counts.values()) if divided else max(counts.values())
    spec = karmada_spec(total)
    workload = spec.workloads[0]
    placed = tuple(Placed(n, c if divided else total) for n, c in sorted(counts.items()))
    strategy = Strategy.STATIC_WEIGHT if divided else Strategy.DUPLICATED
    decision = Decision(
        key=workload.key,
        api_version="apps/v1",
        policy=PolicyRef(kind="ResourcePlacementPolicy", namespace=None, name="p"),
        clusters=placed,
        diagnosis=Diagnosis(strategy=strategy),
    )
    tree = render.tree(spec, [decision])
    emitted = documents(tree["karmada/prod/deployment-web.yaml"])
    template, policy = emitted[0], emitted[1]
    assert policy["kind"] == "PropagationPolicy"
    for document in emitted[1:]:
        check_schema(document)
    assert policy["spec"]["resourceSelectors"] == [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "prod"}
    ]
    expected = {p.cluster: p.replicas for p in placed if p.replicas or not divided}
    if divided and not expected:  # all zero: every cluster pinned, each divided nothing
        assert karmada_division(template, policy, uid) == {}
        assert policy["spec"]["placement"]["clusterAffinity"]["clusterNames"] == sorted(counts)
        return
    assert karmada_division(template, policy, uid) == expected
    # The override policy (if any) turns Karmada's per-cluster copy into dro's render.
    rules = emitted[2]["spec"]["overrideRules"] if len(emitted) > 2 else []
    for name, replicas in expected.items():
        member = member_of(template, replicas, rules, name)
        assert member == yaml.safe_load(tree[f"clusters/{name}/prod/deployment-web.yaml"])


def apply_plaintext(manifest: dict[str, Any], operations: list[dict[str, Any]]) -> Any:
    """Karmada's plaintext overrider: the operations as one RFC 6902 patch."""
    patch = [
        {"op": o["operator"], "path": o["path"], **({"value": o["value"]} if "value" in o else {})}
        for o in operations
    ]
    return jsonpatch.apply_patch(manifest, patch)


def test_the_flag_is_off_by_default_and_then_no_karmada_folder() -> None:
    spec = spec_of([cluster("a")], [deployment("web", 2)], PLAIN)
    decision = Decision(
        key=spec.workloads[0].key, api_version="apps/v1", policy=None, clusters=(Placed("a", 2),)
    )
    assert not [p for p in render.tree(spec, [decision]) if p.startswith("karmada/")]


def test_an_unschedulable_decision_gets_no_policy() -> None:
    spec = karmada_spec(3)
    decision = Decision(
        key=spec.workloads[0].key,
        api_version="apps/v1",
        policy=None,
        clusters=(),
        unschedulable="0/6 clusters are available",
    )
    assert not [p for p in render.tree(spec, [decision]) if p.startswith("karmada/")]


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The example repo rendered with `spec.output.karmada: true`, by `dro render`."""
    work = tmp_path_factory.mktemp("karmada")
    shutil.copytree(ROOT / "example-repo", work / "repo")
    with (work / "repo" / "dro.yaml").open("a") as config:
        config.write("  output:\n    karmada: true\n")
    assert main(["render", str(work / "repo"), "--out", str(work / "out")]) == 0
    out = work / "out"
    return {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def test_example_repo_policies_round_trip_with_overrides(example: dict[str, bytes]) -> None:
    files = {p: d for p, d in example.items() if p.startswith("karmada/")}
    assert files, "no karmada/ files rendered"
    overridden = 0
    for path, data in files.items():
        template, policy, *rest = documents(data)
        for document in (policy, *rest):
            check_schema(document)
        decision = yaml.safe_load(example["decisions/" + path.removeprefix("karmada/")])
        wanted = {c["name"]: c["replicas"] for c in decision["status"]["clusters"]}
        placed = karmada_division(template, policy, "uid")
        assert placed == {n: r for n, r in wanted.items() if r != 0}, path
        rules = rest[0]["spec"]["overrideRules"] if rest else []
        overridden += len(rules)
        for name, replicas in placed.items():
            member = member_of(template, replicas, rules, name)
            folder = path.removeprefix("karmada/")
            assert member == yaml.safe_load(example[f"clusters/{name}/{folder}"]), (path, name)
    assert overridden, "the example's overrides did not reach any OverridePolicy"
    readme = example["README.md"].decode()
    assert "`karmada/`" in readme


def test_a_cluster_scoped_object_gets_cluster_wide_policies(example: dict[str, bytes]) -> None:
    template, policy = documents(example["karmada/_cluster/namespace-shop.yaml"])
    assert template["kind"] == "Namespace"
    assert policy["kind"] == "ClusterPropagationPolicy"
    assert "namespace" not in policy["metadata"]
    assert policy["spec"]["placement"]["replicaScheduling"] == {
        "replicaSchedulingType": "Duplicated"
    }


def test_patch_diff_uses_only_karmada_operators_and_rebuilds_the_target() -> None:
    before = {"a": {"b": 1, "c/d": [1, 2]}, "gone": True, "n": 1}
    after = {"a": {"b": True, "c/d": [1, 3], "e~": {}}, "n": 1.0, "list": [1]}
    operations = patchdiff.diff(before, after)
    assert {o["operator"] for o in operations} <= {"add", "remove", "replace"}
    rebuilt = apply_plaintext(json.loads(json.dumps(before)), operations)
    assert json.dumps(rebuilt, sort_keys=True) == json.dumps(after, sort_keys=True)
    assert patchdiff.diff(after, after) == []


def test_long_names_are_cut_with_a_hash_and_stay_distinct() -> None:
    long_a, long_b = "x" * 300 + "a", "x" * 300 + "b"
    cut_a, cut_b = dnsnames.fit(long_a), dnsnames.fit(long_b)
    assert len(cut_a) == dnsnames.SUBDOMAIN
    assert cut_a != cut_b
    assert dnsnames.fit("short") == "short"
    workload = deployment("w" * 250, 1)
    assert len(karmadaout.policy_name(workload)) <= dnsnames.SUBDOMAIN


def test_shards_together_render_the_whole_tree_with_karmada_on() -> None:
    spec = validate.spec(load.from_directory(ROOT / "example-repo"))
    spec = replace(spec, config=replace(spec.config, output=Output(karmada=True)))
    decisions = schedule.place(spec)
    whole = render.tree(spec, decisions)
    assert any(path.startswith("karmada/") for path in whole)
    union: dict[str, bytes] = {}
    for part in range(3):
        shard = render.tree(spec, decisions, shard=(part, 3))
        assert not set(shard) & set(union), "a file in two shards"
        union.update(shard)
    assert union == whole
    assert render.tree(spec, list(reversed(decisions))) == whole


def test_an_encrypted_workload_is_its_source_bytes_in_the_karmada_file() -> None:
    spec = karmada_spec(2)
    sealed = (
        b"apiVersion: v1\nkind: Secret\ndata:\n  p: ENC[AES256_GCM,data:eA==]\nsops:\n  mac: m\n"
    )
    workload = replace(spec.workloads[0], sealed=sealed)
    spec = replace(spec, workloads=(workload,))
    decision = Decision(
        key=workload.key,
        api_version="apps/v1",
        policy=PolicyRef(kind="ResourcePlacementPolicy", namespace=None, name="p"),
        clusters=(Placed("eu-1", 1), Placed("us-1", 1)),
        diagnosis=Diagnosis(strategy=Strategy.STATIC_WEIGHT),
    )
    emitted = render.tree(spec, [decision])["karmada/prod/deployment-web.yaml"]
    # the MAC covers every byte sops wrote: the template is the source file, untouched
    assert emitted.startswith(sealed + b"---\n")
    policies = documents(emitted)[1:]
    assert [p["kind"] for p in policies] == ["PropagationPolicy"]
