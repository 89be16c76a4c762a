"""The Kubernetes API contract suite: run against the emulator, or a real cluster (make e2e)."""
