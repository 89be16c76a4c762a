"""deploy/, the Dockerfile and constraints.txt: what runs dro in a cluster.

The kustomize output is built with the real `kubectl kustomize` and every object is checked
against Kubernetes' strict OpenAPI schemas (`kubernetes-validate`, through
`reconciler.validate.schemacheck`), for the oldest and newest Kubernetes of the e2e matrix.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from reconciler.validate import schemacheck

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
COMPONENT = DEPLOY / "in-cluster-target"
TLS_COMPONENT = DEPLOY / "tls"
SECRET_TEMPLATES = sorted((DEPLOY / "secrets").glob("*.example.yaml"))
KUBE_VERSIONS = ("1.31", "1.32")
"""The Kubernetes versions of the e2e matrix (.github/workflows/e2e.yaml)."""
UID = 10001


def _kubectl() -> str:
    found = shutil.which("kubectl") or "/usr/bin/kubectl"
    assert Path(found).is_file(), "kubectl is needed to build deploy/ with kustomize"
    return found


def kustomize(path: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize path`, as objects; fails the test with kubectl's stderr."""
    done = subprocess.run(
        [_kubectl(), "kustomize", str(path)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"kubectl kustomize {path} failed:\n{done.stderr}"
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def schema_errors(obj: Mapping[str, Any]) -> list[str]:
    """Strict schema violations of a built-in object, for every version in KUBE_VERSIONS."""
    assert schemacheck.has_kube_schema(KUBE_VERSIONS[0], obj["apiVersion"], obj["kind"]), (
        f"no Kubernetes schema for {obj['apiVersion']} {obj['kind']}"
    )
    where = f"{obj['kind']}/{obj['metadata']['name']}"
    return [
        f"{where} (Kubernetes {version}) {error.pointer}: {error.message}"
        for version in KUBE_VERSIONS
        for error in schemacheck.check_kube(version, obj)
    ]


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind]
    return found


@pytest.fixture(scope="module")
def built() -> list[dict[str, Any]]:
    return kustomize(DEPLOY)


@pytest.fixture(scope="module")
def with_component(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return with_overlay(tmp_path_factory.mktemp("overlay"), COMPONENT)


def with_overlay(overlay: Path, component: Path) -> list[dict[str, Any]]:
    # kustomize takes relative paths only, and no overlay inside its base.
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(DEPLOY, overlay)],
                "components": [os.path.relpath(component, overlay)],
            }
        )
    )
    return kustomize(overlay)


@pytest.fixture(scope="module")
def pod(built: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = one(built, "Deployment")["spec"]["template"]["spec"]
    return spec


def containers(pod_spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield from pod_spec.get("initContainers", [])
    yield from pod_spec["containers"]


def env_of(container: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {e["name"]: e for e in container.get("env", [])}


# --- the kustomization ------------------------------------------------------------------------


def test_deploy_builds_and_every_object_is_valid(built: list[dict[str, Any]]) -> None:
    kinds = sorted(o["kind"] for o in built)
    assert kinds == sorted(
        [
            "Namespace",
            "ServiceAccount",
            "Role",
            "RoleBinding",
            "ConfigMap",
            "Deployment",
            "Service",
            "PodDisruptionBudget",
        ]
    )
    problems = [p for obj in built for p in schema_errors(obj)]
    assert not problems, "\n".join(problems)


def test_everything_is_namespaced_in_dro_system_and_labelled(built: list[dict[str, Any]]) -> None:
    for obj in built:
        metadata = obj["metadata"]
        if obj["kind"] == "Namespace":
            assert metadata["name"] == "dro-system"
        else:
            assert metadata.get("namespace") == "dro-system", obj["kind"]
        assert metadata["labels"]["app.kubernetes.io/name"] == "dro", obj["kind"]
        assert metadata["labels"]["app.kubernetes.io/part-of"] == "dro", obj["kind"]


def test_namespace_enforces_the_restricted_pod_security_profile(
    built: list[dict[str, Any]],
) -> None:
    labels = one(built, "Namespace")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def test_no_secret_and_nothing_cluster_wide_in_the_default_set(
    built: list[dict[str, Any]],
) -> None:
    kinds = {o["kind"] for o in built}
    assert not kinds & {"Secret", "ClusterRole", "ClusterRoleBinding"}


SHARDING_VERBS = {"get", "list", "update", "delete"}
"""What a sharded replica does to its member Lease and its observations ConfigMap, whose names
hold the pod's (`service.membership`, `service.observations`)."""


def test_the_role_is_least_privilege(built: list[dict[str, Any]]) -> None:
    role = one(built, "Role")
    assert role["metadata"]["namespace"] == "dro-system"
    granted: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for field in ("apiGroups", "resources", "verbs", "resourceNames"):
            assert "*" not in rule.get(field, []), f"{field} holds '*': {rule}"
        assert not rule.get("nonResourceURLs"), rule
        if rule.get("resourceNames"):
            assert "create" not in rule["verbs"], "create cannot be restricted by name"
        else:
            # Only what Kubernetes cannot restrict by name goes without resourceNames: create;
            # Events, whose names are generated; and, for sharding, the member Leases and
            # observation ConfigMaps, named after pods of a Deployment (never patch).
            unrestricted = set(rule["verbs"]) - {"create"}
            if rule["resources"] == ["events"]:
                unrestricted -= {"patch"}
            if rule["resources"] in (["leases"], ["configmaps"]):
                unrestricted -= SHARDING_VERBS
            assert not unrestricted, f"{sorted(unrestricted)} for any name: {rule}"
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted.setdefault((group, resource), set()).update(rule["verbs"])
    assert granted[("coordination.k8s.io", "leases")] == {"create", *SHARDING_VERBS}
    assert granted[("", "configmaps")] <= {"get", "list", "create", "update", "patch", "delete"}
    assert {"get", "create", "patch"} <= granted[("", "configmaps")]
    assert granted[("", "events")] == {"create", "patch"}
    named = {
        (rule["resources"][0], name)
        for rule in role["rules"]
        for name in rule.get("resourceNames", [])
    }
    assert named == {("leases", "dro"), ("configmaps", "dro-inventory")}

    binding = one(built, "RoleBinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "dro", "namespace": "dro-system"}
    ]


# --- the Deployment ---------------------------------------------------------------------------


def test_deployment_runs_dro_with_leader_election(built: list[dict[str, Any]]) -> None:
    deployment = one(built, "Deployment")
    assert deployment["spec"]["replicas"] == 3
    spec = deployment["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "dro"
    assert spec["automountServiceAccountToken"] is True
    assert spec["terminationGracePeriodSeconds"] == 60
    (container,) = spec["containers"]
    assert container["image"] == "ghcr.io/dro-project/dro:0.1.0"
    assert container["args"] == ["run"]
    env = env_of(container)
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    assert env["DRO_STATE_DIR"]["value"] == "/var/lib/dro"
    assert env["DRO_LEADER_ELECT"]["value"] == "true"
    assert env["DRO_SHARDS"]["value"] == "auto", "the replicas share the clusters"
    assert env["DRO_LISTEN"]["value"].endswith(":8080")
    # The Lease dro uses is the one the Role grants by name.
    assert env.get("DRO_LEASE_NAME", {"value": "dro"})["value"] == "dro"

    config = one(built, "ConfigMap")
    repo = env["DRO_REPO"]["valueFrom"]["configMapKeyRef"]
    assert repo == {"name": config["metadata"]["name"], "key": "repo"}
    for name, item in env.items():
        ref = item.get("valueFrom", {}).get("configMapKeyRef")
        if ref:
            assert ref["name"] == "dro-config", name
            assert ref["key"] in config["data"], f"{name}: dro-config has no key {ref['key']}"
    assert config["data"]["repo"].startswith("https://")


def test_pod_meets_the_restricted_profile(pod: dict[str, Any]) -> None:
    security = pod["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["runAsUser"] == UID
    assert security["runAsGroup"] == UID
    assert security["fsGroup"] == UID
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        assert not pod.get(flag), flag
    assert not [v for v in pod["volumes"] if "hostPath" in v]
    for container in containers(pod):
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["readOnlyRootFilesystem"] is True
        assert context["capabilities"]["drop"] == ["ALL"]
        assert not context["capabilities"].get("add")
        assert not context.get("privileged")
        assert context.get("runAsNonRoot", security["runAsNonRoot"]) is True
        assert context.get("runAsUser", security["runAsUser"]) != 0
        seccomp = context.get("seccompProfile", security["seccompProfile"])
        assert seccomp["type"] == "RuntimeDefault"
        assert container["resources"]["requests"]
        assert container["resources"]["limits"]


def test_only_emptydirs_are_writable(pod: dict[str, Any]) -> None:
    volumes = {v["name"]: v for v in pod["volumes"]}
    (container,) = pod["containers"]
    writable = {
        m["mountPath"]
        for m in container["volumeMounts"]
        if not m.get("readOnly") and "emptyDir" in volumes[m["name"]]
    }
    assert writable == {"/var/lib/dro", "/tmp"}
    for mount in container["volumeMounts"]:
        if "emptyDir" not in volumes[mount["name"]]:
            assert mount.get("readOnly") is True, mount


def test_probes_use_healthz_and_readyz_on_the_named_port(pod: dict[str, Any]) -> None:
    (container,) = pod["containers"]
    assert {"name": "http", "containerPort": 8080, "protocol": "TCP"} in container["ports"]
    probes = {kind: container[kind]["httpGet"] for kind in ("startupProbe", "livenessProbe")}
    probes["readinessProbe"] = container["readinessProbe"]["httpGet"]
    assert probes["livenessProbe"] == {"path": "/healthz", "port": "http"}
    assert probes["startupProbe"] == {"path": "/healthz", "port": "http"}
    assert probes["readinessProbe"] == {"path": "/readyz", "port": "http"}


def test_secret_volumes_are_documented_templated_and_where_dro_looks(pod: dict[str, Any]) -> None:
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    templates = {
        doc["metadata"]["name"]: doc
        for path in SECRET_TEMPLATES
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if doc
    }
    (container,) = pod["containers"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    env = env_of(container)
    secrets = {v["name"]: v["secret"] for v in pod["volumes"] if "secret" in v}
    assert {s["secretName"] for s in secrets.values()} == {
        "dro-git-credentials",
        "dro-kubeconfigs",
        "dro-webhook",
        "dro-sops-age",
    }
    wanted_paths = {
        "dro-git-credentials": ("DRO_GIT_CREDENTIALS_FILE", "credentials"),
        "dro-kubeconfigs": ("DRO_KUBECONFIG", None),
        "dro-webhook": ("DRO_WEBHOOK_SECRET_FILE", "secret"),
        "dro-sops-age": ("DRO_SOPS_AGE_KEY_FILE", "keys.txt"),
    }
    for volume, secret in secrets.items():
        name = secret["secretName"]
        assert f"`{name}`" in readme, f"deploy/README.md does not document Secret {name}"
        assert re.search(rf"create secret generic {name} .*--from-file=", readme), name
        assert name in templates, f"no template for Secret {name} in deploy/secrets/"
        assert secret["defaultMode"] & 0o007 == 0, f"{name} is readable by others"
        variable, key = wanted_paths[name]
        path = env[variable]["value"]
        if key is None:
            assert path == mounts[volume]
        else:
            assert path == f"{mounts[volume]}/{key}"
            assert key in templates[name]["stringData"], f"{name} template lacks key {key}"
    assert not secrets["git-credentials"].get("optional", False), "dro needs its git access"
    assert secrets["kubeconfigs"]["optional"] is True
    assert secrets["webhook"]["optional"] is True
    assert secrets["sops-age"]["optional"] is True


def test_replicas_prefer_different_nodes(pod: dict[str, Any]) -> None:
    spread = [c["topologyKey"] for c in pod.get("topologySpreadConstraints", [])]
    preferred = pod.get("affinity", {}).get("podAntiAffinity", {})
    terms = preferred.get("preferredDuringSchedulingIgnoredDuringExecution", [])
    anti = [t["podAffinityTerm"]["topologyKey"] for t in terms]
    assert "kubernetes.io/hostname" in spread + anti
    assert "kubernetes.io/hostname" in anti, "anti-affinity by hostname, preferred"
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in preferred, (
        "required anti-affinity would leave a replica pending on a cluster of fewer nodes"
    )


def test_service_and_pdb_select_the_pods(built: list[dict[str, Any]]) -> None:
    labels = one(built, "Deployment")["spec"]["template"]["metadata"]["labels"]
    service = one(built, "Service")
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["ports"] == [
        {"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}
    ]
    annotations = service["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == "8080"
    assert annotations["prometheus.io/path"] == "/metrics"
    pdb = one(built, "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1
    assert "minAvailable" not in pdb["spec"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()


# --- the optional component and the Secret templates ------------------------------------------


def test_in_cluster_component_builds_validates_and_turns_on_in_cluster(
    with_component: list[dict[str, Any]],
) -> None:
    problems = [p for obj in with_component for p in schema_errors(obj)]
    assert not problems, "\n".join(problems)
    role = one(with_component, "ClusterRole")
    binding = one(with_component, "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "dro", "namespace": "dro-system"}
    ]
    (container,) = one(with_component, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert env_of(container)["DRO_IN_CLUSTER"]["value"] == "true"
    readme = (COMPONENT / "README.md").read_text(encoding="utf-8")
    assert "broad" in readme.lower()


def test_tls_component_mounts_the_secret_and_probes_use_https(tmp_path: Path) -> None:
    built = with_overlay(tmp_path, TLS_COMPONENT)
    problems = [p for obj in built for p in schema_errors(obj)]
    assert not problems, "\n".join(problems)
    pod = one(built, "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = env_of(container)
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    (volume,) = [v for v in pod["volumes"] if v["name"] == "tls"]
    assert volume["secret"]["secretName"] == "dro-tls"
    assert env["DRO_TLS_CERT_FILE"]["value"] == f"{mounts['tls']}/tls.crt"
    assert env["DRO_TLS_KEY_FILE"]["value"] == f"{mounts['tls']}/tls.key"
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["scheme"] == "HTTPS", probe
        assert container[probe]["httpGet"]["port"] == "http", "the rest of the probe is kept"
    assert "DRO_WEBHOOK_SECRET_FILE" in env, "the base's settings are kept"
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    assert "`dro-tls`" in readme
    assert "kubectl -n dro-system create secret tls dro-tls" in readme


def test_secret_templates_are_valid_secrets_outside_the_kustomization(
    built: list[dict[str, Any]],
) -> None:
    assert {p.name for p in SECRET_TEMPLATES} == {
        "git-credentials.example.yaml",
        "kubeconfigs.example.yaml",
        "webhook.example.yaml",
        "sops-age.example.yaml",
    }
    listed = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text(encoding="utf-8"))
    assert not [r for r in listed["resources"] if "secret" in r.lower()]
    for path in SECRET_TEMPLATES:
        (secret,) = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
        assert secret["kind"] == "Secret"
        assert secret["metadata"]["namespace"] == "dro-system"
        problems = schema_errors(secret)
        assert not problems, "\n".join(problems)
    (kubeconfigs,) = yaml.safe_load_all((DEPLOY / "secrets/kubeconfigs.example.yaml").read_text())
    assert len(kubeconfigs["stringData"]) >= 2, "one key per cluster"
    for key, text in kubeconfigs["stringData"].items():
        config = yaml.safe_load(text)
        assert config["kind"] == "Config", key
        assert config["users"][0]["user"]["token"], key
        assert config["contexts"][0]["name"], key


# --- constraints.txt and the Dockerfile -------------------------------------------------------


def constraints() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)", line.strip())
        assert match, f"constraints.txt: not an exact pin: {line!r}"
        name = canonicalize_name(match[1])
        assert name not in pins, f"constraints.txt pins {name} twice"
        pins[name] = match[2]
    return pins


def test_constraints_pin_every_runtime_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = constraints()
    assert canonicalize_name(project["name"]) not in pins
    for text in project["dependencies"]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"constraints.txt does not pin {requirement.name} (regenerate it)"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt pins {name}=={pins[name]}, outside pyproject's {text!r}"
        )
    runtime = {canonicalize_name(Requirement(t).name) for t in project["dependencies"]}
    dev = {canonicalize_name(Requirement(t).name) for t in project["optional-dependencies"]["dev"]}
    assert not (dev - runtime) & pins.keys(), "constraints.txt pins development tools"


def dockerfile_stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's instructions, (INSTRUCTION, arguments), one list per stage."""
    lines = [
        line
        for line in (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines()
        if not line.lstrip().startswith("#")
    ]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    stages: list[list[tuple[str, str]]] = [[]]
    for line in joined.splitlines():
        if not line.strip():
            continue
        instruction, _, arguments = line.strip().partition(" ")
        if instruction.upper() == "FROM":
            stages.append([])
        stages[-1].append((instruction.upper(), arguments.strip()))
    return stages


def test_dockerfile_final_stage_is_non_root_dro() -> None:
    preamble, *stages = dockerfile_stages()
    assert len(stages) >= 2, "a build stage and a runtime stage"
    bases = {arguments for instruction, arguments in preamble if instruction == "ARG"}
    for stage in stages:
        image, *alias = stage[0][1].split()
        if alias == ["AS", "tools"]:  # kustomize and helm, built from their Go modules
            assert image == "${GO_IMAGE}", image
            assert any(re.fullmatch(r"GO_IMAGE=golang:[0-9.]+-\w+", b) for b in bases), bases
            continue
        assert image in ("python:3.11-slim", "${PYTHON_IMAGE}"), image
        if image == "${PYTHON_IMAGE}":
            assert "PYTHON_IMAGE=python:3.11-slim" in bases, bases
    final = stages[-1]
    (user,) = [arguments for instruction, arguments in final if instruction == "USER"]
    uid, _, gid = user.partition(":")
    assert uid == str(UID), f"USER {user}: not the numeric uid {UID}"
    assert not gid or (gid.isdigit() and int(gid) != 0), f"USER {user}: group root"
    instructions = dict(final)
    assert json.loads(instructions["ENTRYPOINT"]) == ["dro"]
    assert json.loads(instructions["CMD"]) == ["run"]
    assert "8080" in instructions["EXPOSE"].split()
    env = " ".join(arguments for instruction, arguments in final if instruction == "ENV")
    for setting in ("DRO_STATE_DIR=/var/lib/dro", "HOME=/tmp", "PYTHONDONTWRITEBYTECODE=1"):
        assert setting in env, setting
    install = " ".join(arguments for instruction, arguments in final if instruction == "RUN")
    assert "--no-index" in install
    assert "-c /constraints.txt" in install or "-c constraints.txt" in install
    build = " ".join(a for stage in stages[:-1] for i, a in stage if i == "RUN")
    assert any(i == "COPY" and a.startswith("--from=tools ") for i, a in final)
    assert "-c constraints.txt" in build
