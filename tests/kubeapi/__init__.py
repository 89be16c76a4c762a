"""A focused Kubernetes API server emulator for tests: real HTTP on 127.0.0.1, JSON only.

It serves the official `kubernetes` client (typed APIs and `DynamicClient`): discovery,
CRUD with resourceVersion conflicts, label and field selectors, dry-run, server-side apply
with `managedFields`, the `status` subresource, CRDs, WATCH with bookmarks and 410 Gone
(`watching`), and fault injection. Nothing runs behind it: no controllers, no scheduler, no
defaulting, no admission.

    with KubeAPI(nodes=3, node_cpu="8", node_memory="32Gi") as api:
        path = api.kubeconfig(tmp_path / "kubeconfig", context="c1")
        api_client = kubernetes.config.new_client_from_config(str(path), context="c1")
        api.add_pod("default", "busy", "node-0", requests={"cpu": "500m"})
        api.fail_next(1, status=500)        # the next request answers 500 InternalError
        api.delay(2.0)                      # every request waits 2 s (client timeouts fire)
        api.refuse(); api.accept()          # stop / resume listening on the same port
        api.compact()                       # watches from older versions get 410 Gone
        api.writes, api.changes, api.requests

Standalone: `python -m tests.kubeapi --port 8080 --nodes 2` (from the repository root).
"""

from .cluster import KubeAPI, RequestRecord
from .errors import ApiError
from .faults import Faults
from .objects import ObjectsView

__all__ = ["ApiError", "Faults", "KubeAPI", "ObjectsView", "RequestRecord"]
