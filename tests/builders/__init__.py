"""Builders shared by several test modules, one module per area: each builds the objects that
area's tests start from (clusters, workloads, specs, manifests, source repositories)."""
