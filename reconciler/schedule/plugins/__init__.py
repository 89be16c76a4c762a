"""Filter and scorer plugins; importing this package registers every one of them."""

from reconciler.schedule.plugins import balance, cluster_affinity, taint_toleration

__all__ = ["balance", "cluster_affinity", "taint_toleration"]
