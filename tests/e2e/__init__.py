"""Tests against real Kubernetes control planes started on 127.0.0.1 (make e2e)."""
