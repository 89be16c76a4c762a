"""The output branch's layout: every path dro writes there is built, and read back, here.

    README.md                                         the generated summary
    clusters/<cluster>/kustomization.yaml             lists the cluster's files
    clusters/<cluster>/<namespace|_cluster>/<stem>.yaml    a rendered manifest
    decisions/<namespace|_cluster>/<stem>.yaml        a workload's placement decision
    status/clusters/<cluster>.yaml                    a cluster's last observation
    status/workloads/<namespace|_cluster>/<stem>.yaml a workload's health across its clusters
    status/drift/<cluster>.yaml                       the cluster's drifted objects, if any
    karmada/<namespace|_cluster>/<stem>.yaml          Karmada template and policies pinning a
                                                      decision (`spec.output.karmada`)
    argocd/cluster-decisions.yaml                     the clusterDecisionResource ConfigMap and CRD
    argocd/<namespace|_cluster>/<stem>.yaml           a workload's Argo CD cluster decision
    kep-5313/<namespace|_cluster>/<stem>.yaml         a workload's KEP-5313 PlacementDecision

`<stem>` is `ResourceKey.file_stem` (`<kind>[.<group>]-<name>`, shortened to fit one path
component). The paths of workloads are lowercase. `decisions/` and `status/` are the state that
dro reads back (`STATE_FOLDERS`); everything else is output only. What makes one component safe
(length, names git refuses) is `domain.paths`, below this layer.

Called by 20 modules, among them `branch.driftfiles`, `commit`, `laststate`, `live.folders`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from reconciler.domain import ResourceKey
from reconciler.domain.paths import YAML

README = "README.md"
KUSTOMIZATION = "kustomization.yaml"
CLUSTERS = "clusters/"
DECISIONS = "decisions/"
STATUS = "status/"
STATUS_CLUSTERS = f"{STATUS}clusters/"
STATUS_WORKLOADS = f"{STATUS}workloads/"
STATUS_DRIFT = f"{STATUS}drift/"
KARMADA = "karmada/"
ARGOCD = "argocd/"
ARGOCD_SHARED = f"{ARGOCD}cluster-decisions{YAML}"
KEP5313 = "kep-5313/"
STATE_FOLDERS = (DECISIONS, STATUS)
"""The output branch's folders that dro reads back as state."""


def object_path(cluster: str, key: ResourceKey) -> str:
    """`clusters/<cluster>/<namespace|_cluster>/<kind>[.<group>]-<name>.yaml`, lowercase."""
    return f"{CLUSTERS}{cluster}/{key.folder}/{key.file_stem}{YAML}".lower()


def kustomization_path(cluster: str) -> str:
    """`clusters/<cluster>/kustomization.yaml`: the list of the cluster's files."""
    return f"{CLUSTERS}{cluster}/{KUSTOMIZATION}"


def decision_path(key: ResourceKey) -> str:
    """`decisions/<namespace|_cluster>/<kind>[.<group>]-<name>.yaml`, lowercase."""
    return f"{DECISIONS}{key.folder}/{key.file_stem}{YAML}".lower()


def karmada_path(key: ResourceKey) -> str:
    """`karmada/<namespace|_cluster>/<kind>[.<group>]-<name>.yaml`, lowercase."""
    return f"{KARMADA}{key.folder}/{key.file_stem}{YAML}".lower()


def argocd_path(key: ResourceKey) -> str:
    """`argocd/<namespace|_cluster>/<kind>[.<group>]-<name>.yaml`, lowercase."""
    return f"{ARGOCD}{key.folder}/{key.file_stem}{YAML}".lower()


def kep5313_path(key: ResourceKey) -> str:
    """`kep-5313/<namespace|_cluster>/<kind>[.<group>]-<name>.yaml`, lowercase."""
    return f"{KEP5313}{key.folder}/{key.file_stem}{YAML}".lower()


def cluster_status_path(cluster: str) -> str:
    """`status/clusters/<cluster>.yaml`: the cluster's last observation."""
    return f"{STATUS_CLUSTERS}{cluster}{YAML}"


def workload_status_path(key: ResourceKey) -> str:
    """`status/workloads/<namespace|_cluster>/<kind>[.<group>]-<name>.yaml`, lowercase."""
    return f"{STATUS_WORKLOADS}{key.folder}/{key.file_stem}{YAML}".lower()


def drift_status_path(cluster: str) -> str:
    """`status/drift/<cluster>.yaml`: the objects drifted on the cluster."""
    return f"{STATUS_DRIFT}{cluster}{YAML}"


def drift_cluster(path: str) -> str | None:
    """The cluster whose drift file `path` is (`status/drift/<cluster>.yaml`), else None."""
    if not path.startswith(STATUS_DRIFT) or not path.endswith(YAML):
        return None
    return path[len(STATUS_DRIFT) : -len(YAML)]


@dataclass(frozen=True, slots=True)
class ClusterFile:
    """A path under `clusters/`: the cluster's folder and the path inside it."""

    cluster: str
    relative: str

    @property
    def is_kustomization(self) -> bool:
        """Whether this is the cluster's kustomization, which only lists the other files."""
        return self.relative == KUSTOMIZATION

    @property
    def path(self) -> str:
        """The path on the output branch."""
        return f"{CLUSTERS}{self.cluster}/{self.relative}"


def cluster_file(path: str) -> ClusterFile | None:
    """The cluster and the path inside its folder of a path under `clusters/`, else None."""
    if not path.startswith(CLUSTERS):
        return None
    cluster, _, relative = path[len(CLUSTERS) :].partition("/")
    return ClusterFile(cluster, relative) if relative else None


def cluster_manifests(paths: Iterable[str], cluster: str) -> Iterator[str]:
    """The paths of the manifests rendered for `cluster`: its folder without the kustomization."""
    for path in paths:
        found = cluster_file(path)
        if found is not None and found.cluster == cluster.lower() and not found.is_kustomization:
            yield path


def is_state(path: str) -> bool:
    """Whether `path` is one of the state files dro reads back (`decisions/`, `status/`)."""
    return path.startswith(STATE_FOLDERS)


def is_status(path: str) -> bool:
    """Whether `path` is under `status/` (a cluster's or a workload's)."""
    return path.startswith(STATUS)


def is_decision(path: str) -> bool:
    """Whether `path` is a decision file (`decisions/....yaml`)."""
    return path.startswith(DECISIONS) and path.endswith(YAML)


def status_cluster(path: str) -> str | None:
    """The cluster whose status file `path` is (`status/clusters/<cluster>.yaml`), else None."""
    if not path.startswith(STATUS_CLUSTERS) or not path.endswith(YAML):
        return None
    return path[len(STATUS_CLUSTERS) : -len(YAML)]


def status_name(path: str, folder: str) -> str:
    """What a status file under `folder` is about: `<cluster>` under `status/clusters/`,
    `<namespace>/<stem>` under `status/workloads/`."""
    return path[len(folder) :].removesuffix(YAML)
