"""Resource quantities: `dro validate` refuses what the API server would refuse, at its line,
with a hint, and no command crashes on a quantity that validate accepts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE, make_source_repo

from reconciler import cli
from reconciler.kube import quantity

POD = "      containers:\n        - name: app\n          image: nginx:1.27\n"


def _deployment(pod: str) -> str:
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\n"
        "spec:\n  replicas: 3\n  selector: {matchLabels: {app: web}}\n  template:\n"
        "    metadata: {labels: {app: web}}\n    spec:\n" + pod
    )


BAD = [
    (
        "container-cpu-cores",
        _deployment(POD + "          resources: {requests: {cpu: 2cores}}\n"),
        13,
        "/spec/template/spec/containers/0/resources/requests/cpu: '2cores' is not a Kubernetes "
        "quantity (did you mean '2'?)",
    ),
    (
        "container-memory-megabytes",
        _deployment(POD + "          resources:\n            limits: {memory: 256MB}\n"),
        14,
        "/spec/template/spec/containers/0/resources/limits/memory: '256MB' is not a Kubernetes "
        "quantity (did you mean '256M' or '256Mi'?)",
    ),
    (
        "init-container",
        _deployment(
            POD + "      initContainers:\n        - name: init\n          image: busybox\n"
            "          resources: {requests: {memory: 1GiB}}\n"
        ),
        16,
        "initContainers/0/resources/requests/memory: '1GiB' is not a Kubernetes quantity "
        "(did you mean '1Gi'?)",
    ),
    (
        "ephemeral-container",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop}\nspec:\n"
        "  containers: [{name: a, image: nginx}]\n"
        "  ephemeralContainers:\n    - name: debug\n      image: busybox\n"
        "      resources: {limits: {cpu: 1 core}}\n",
        9,
        "ephemeralContainers/0/resources/limits/cpu: '1 core' is not a Kubernetes quantity",
    ),
    (
        "pod-overhead",
        _deployment(POD + "      overhead: {memory: 10K}\n"),
        13,
        "/spec/template/spec/overhead/memory: '10K' is not a Kubernetes quantity "
        "(did you mean '10k' or '10Ki'?)",
    ),
    (
        "pvc-storage",
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: shop}\n"
        "spec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n"
        "      storage: 10 GB\n",
        8,
        "/spec/resources/requests/storage: '10 GB' is not a Kubernetes quantity "
        "(did you mean '10G' or '10Gi'?)",
    ),
    (
        "volume-claim-template",
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: shop}\nspec:\n"
        "  serviceName: db\n  selector: {matchLabels: {app: db}}\n  template:\n"
        "    metadata: {labels: {app: db}}\n    spec:\n" + POD + "  volumeClaimTemplates:\n"
        "    - metadata: {name: data}\n      spec:\n        accessModes: [ReadWriteOnce]\n"
        "        resources: {requests: {storage: 1e3Mi}}\n",
        17,
        "volumeClaimTemplates/0/spec/resources/requests/storage: '1e3Mi' is not a Kubernetes "
        "quantity",
    ),
    (
        "resource-quota",
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: shop}\nspec:\n"
        "  hard:\n    requests.cpu: '10'\n    limits.memory: 20gb\n",
        7,
        "/spec/hard/limits.memory: '20gb' is not a Kubernetes quantity "
        "(did you mean '20G' or '20Gi'?)",
    ),
    (
        "limit-range",
        "apiVersion: v1\nkind: LimitRange\nmetadata: {name: l, namespace: shop}\nspec:\n"
        "  limits:\n    - type: Container\n      default: {cpu: 500millicores}\n",
        7,
        "/spec/limits/0/default/cpu: '500millicores' is not a Kubernetes quantity "
        "(did you mean '500m'?)",
    ),
    (
        "empty-dir-size-limit",
        _deployment(
            POD + "      volumes:\n        - name: tmp\n          emptyDir:\n"
            "            sizeLimit: 1,5Gi\n"
        ),
        16,
        "emptyDir/sizeLimit: '1,5Gi' is not a Kubernetes quantity (did you mean '1.5Gi'?)",
    ),
    (
        "negative-request",
        _deployment(POD + "          resources: {requests: {cpu: '-1'}}\n"),
        13,
        "requests/cpu: '-1': must be greater than or equal to 0",
    ),
    (
        "request-above-limit",
        _deployment(
            POD + "          resources:\n            requests: {memory: 2Gi}\n"
            "            limits: {memory: 1Gi}\n"
        ),
        14,
        "requests/memory: '2Gi': must be less than or equal to memory limit of 1Gi",
    ),
    (
        "gpu-fraction",
        _deployment(
            POD + "          resources:\n            requests: {nvidia.com/gpu: '0.5'}\n"
            "            limits: {nvidia.com/gpu: '0.5'}\n"
        ),
        14,
        "requests/nvidia.com~1gpu: '0.5': must be an integer",
    ),
    (
        "gpu-request-without-limit",
        _deployment(POD + "          resources: {requests: {nvidia.com/gpu: 1}}\n"),
        13,
        "nvidia.com/gpu needs a limit equal to its request",
    ),
    (
        "gpu-request-below-limit",
        _deployment(
            POD + "          resources:\n            requests: {example.com/fpga: 1}\n"
            "            limits: {example.com/fpga: 2}\n"
        ),
        14,
        "requests/example.com~1fpga: 1: must be equal to example.com/fpga limit of 2",
    ),
    (
        "hugepages-request-without-limit",
        _deployment(POD + "          resources: {requests: {hugepages-2Mi: 100Mi}}\n"),
        13,
        "hugepages-2Mi needs a limit equal to its request",
    ),
    (
        "leading-space",
        _deployment(POD + "          resources: {requests: {cpu: ' 1'}}\n"),
        13,
        "' 1' is not a Kubernetes quantity (did you mean '1'?)",
    ),
    (
        "custom-resource-pod-template",
        "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r, namespace: shop}\n"
        "spec:\n  replicas: 2\n  template:\n    spec:\n"
        + POD.replace("      ", "      ", 1)
        + "          resources: {requests: {memory: 64MB}}\n",
        11,
        "requests/memory: '64MB' is not a Kubernetes quantity",
    ),
]


def _repo_with(tmp_path: Path, text: str) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    (repo / "workloads/shop/extra.yaml").write_text(text)
    return repo


@pytest.mark.parametrize(
    ("text", "line", "fragment"), [c[1:] for c in BAD], ids=[c[0] for c in BAD]
)
def test_a_bad_quantity_fails_validate_at_its_line_with_a_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int, fragment: str
) -> None:
    repo = _repo_with(tmp_path, text)
    code = cli.main(["validate", str(repo)])
    captured = capsys.readouterr()
    assert code == 1
    rows = [
        r for r in captured.err.splitlines() if r.startswith(f"workloads/shop/extra.yaml:{line}: ")
    ]
    assert any(fragment in row for row in rows), captured.err
    assert "Traceback" not in captured.err


def _small_repo(root: Path, amount: str) -> Path:
    """Two clusters, one Deployment, a PVC and a quota, every quantity `amount`."""
    root.mkdir(parents=True)
    (root / "dro.yaml").write_text(
        "apiVersion: multicluster.io/v1alpha1\nkind: SchedulerConfiguration\n"
        "metadata: {name: dro}\nspec:\n  defaultPlacement:\n"
        "    replicaScheduling: {type: Divided, division: DynamicWeight}\n"
    )
    for name in ("a", "b"):
        (root / "clusters").mkdir(exist_ok=True)
        (root / f"clusters/{name}.yaml").write_text(
            "apiVersion: multicluster.io/v1alpha1\nkind: Cluster\n"
            f"metadata: {{name: {name}}}\nspec:\n"
            "  capacity: {cpu: '64', memory: 256Gi, pods: '500'}\n"
            "  allocated: {cpu: '1', memory: 1Gi, pods: '10'}\n"
        )
    value = json.dumps(amount)
    (root / "workloads").mkdir()
    (root / "workloads/app.yaml").write_text(
        _deployment(
            POD + f"          resources:\n            requests: {{cpu: {value}, memory: {value}}}\n"
            f"            limits: {{cpu: {value}, memory: {value}}}\n"
            f"      overhead: {{cpu: {value}}}\n"
        )
        + "---\napiVersion: v1\nkind: PersistentVolumeClaim\n"
        "metadata: {name: data, namespace: shop}\nspec:\n  accessModes: [ReadWriteOnce]\n"
        f"  resources: {{requests: {{storage: {value}}}}}\n"
        "---\napiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: shop}\n"
        f"spec:\n  hard: {{requests.cpu: {value}}}\n"
    )
    return root


ODD_BUT_VALID = ["1e3", "0.5", "100m", "1Ki", ".5Gi", "+1", "1E", "1.", "5n", "1e-3", "0"]
INVALID = ["2cores", "256MB", "1K", "1e3Mi", "1 Gi", "Infinity", "0x10"]


def _every_command(tmp_path: Path, root: Path) -> dict[str, list[str]]:
    """Each command that reads a source, as a user would run it on `root`."""
    repo = make_source_repo(tmp_path / "git", content=None)
    shutil.copytree(root, repo.work, dirs_exist_ok=True)
    repo.commit("odd quantities")
    state = str(tmp_path / "state")
    return {
        "validate": ["validate", str(root)],
        "schedule": ["schedule", str(root), "-o", "json"],
        "explain": ["explain", str(root), "shop/Deployment/web"],
        "render": ["render", str(root), "--out", str(tmp_path / "out")],
        "plan": ["plan", "--repo", str(repo.work), "--base", "HEAD~1", "--head", "HEAD",
                 "--state-dir", state, "-o", "json"],
        "reconcile": ["reconcile", "--once", "--repo", str(repo.bare), "--state-dir", state],
    }  # fmt: skip


@pytest.mark.parametrize("amount", ODD_BUT_VALID)
def test_no_command_crashes_on_a_quantity_validate_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], amount: str
) -> None:
    assert quantity.is_quantity(amount)
    root = _small_repo(tmp_path / "src", amount)
    for name, argv in _every_command(tmp_path, root).items():
        code = cli.main(argv)
        captured = capsys.readouterr()
        assert code == 0, f"{name}: {captured.err}"
        assert "Traceback" not in captured.err + captured.out
        if name in ("schedule", "plan"):
            json.loads(captured.out)


@pytest.mark.parametrize("amount", INVALID)
def test_every_command_refuses_a_quantity_kubernetes_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], amount: str
) -> None:
    assert not quantity.is_quantity(amount)
    root = _small_repo(tmp_path / "src", amount)
    for name, argv in _every_command(tmp_path, root).items():
        code = cli.main(argv)
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err + captured.out
        assert "is not a Kubernetes quantity" in captured.err + captured.out, name
        assert code == 1, f"{name} exited {code}"
        assert not (tmp_path / "out").exists()


def test_a_cluster_quantity_gets_the_same_grammar_and_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    path = repo / "clusters/eu-west-1.yaml"
    path.write_text(path.read_text().replace("memory: 1Ti", "memory: 1TB", 1))
    assert cli.main(["validate", str(repo)]) == 1
    assert "'1TB' is not a Kubernetes quantity (did you mean '1T' or '1Ti'?)" in (
        capsys.readouterr().err
    )


def test_an_override_that_writes_a_bad_quantity_fails_validate_at_its_operation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    (repo / "policies/bad.yaml").write_text(
        "apiVersion: policy.karmada.io/v1alpha1\nkind: OverridePolicy\n"
        "metadata: {name: o, namespace: shop}\nspec:\n"
        "  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: cart}]\n"
        "  overrideRules:\n    - overriders:\n        plaintext:\n"
        "          - path: /spec/template/spec/containers/0/resources/requests/cpu\n"
        "            operator: replace\n            value: 2cores\n"
    )
    assert cli.main(["validate", str(repo)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("policies/bad.yaml:9: /spec/overrideRules/0/overriders/plaintext/0/")
    assert "invalid at /spec/template/spec/containers/0/resources/requests/cpu: '2cores'" in err


@pytest.mark.parametrize(
    ("text", "meant"),
    [
        ("256MB", "'256M' or '256Mi'"),
        ("2cores", "'2'"),
        ("1GiB", "'1Gi'"),
        ("1gi", "'1Gi'"),
        ("500mcpu", "'500m'"),
        ("1 Gi", "'1Gi'"),
        ("0,5", "'0.5'"),
        ("100bytes", "'100'"),
        ("lots", None),
    ],
)
def test_hints_for_common_mistakes(text: str, meant: str | None) -> None:
    assert quantity.suggestion(text) == meant


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (None, "null is not a Kubernetes quantity"),
        (True, "true is not a Kubernetes quantity"),
        ("9" * 5000, "'" + "9" * 60 + "'…(5000 characters) is out of range"),
        ("x" * 5000, "'" + "x" * 60 + "'…(5000 characters) is not a Kubernetes quantity"),
        ("1e400", "'1e400' is out of range"),
        ("1E", None),
        (0.5, None),
    ],
)
def test_messages_speak_yaml_and_cut_long_values(value: object, said: str | None) -> None:
    found = quantity.problem(value)
    assert found == said if said is None else (found or "").startswith(said)
