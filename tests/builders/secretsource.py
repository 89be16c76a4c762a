"""Source files that hold a planted secret value; shared by test_secret_errors and
test_secret_runs."""

from __future__ import annotations

import json

from tests import leaks

CONFIG = "workloads/shop/config.yaml"
"""Not named like a Secret: masking must go by kind."""


def secret(planted: leaks.Planted, secret_text: leaks.Planted, extra: str = "") -> str:
    """A ConfigMap and a Secret in one file; the Secret holds `planted` base64 in `data`, and
    `secret_text` in `stringData` and in a last-applied-configuration annotation."""
    last = json.dumps(
        {"apiVersion": "v1", "kind": "Secret", "stringData": {"pw": secret_text.value}}
    )
    return f"""apiVersion: v1
kind: ConfigMap
metadata: {{name: settings, namespace: shop}}
data: {{mode: plain}}
---
apiVersion: v1
kind: Secret
metadata:
  name: credentials
  namespace: shop
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{last}'
type: Opaque
data:
  token: {planted.base64}
stringData:
  pw: {secret_text.value}
{extra}"""


OVERRIDE_PLAINTEXT = """apiVersion: policy.karmada.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: bad-path}
spec:
  resourceSelectors: [{apiVersion: v1, kind: Secret, namespace: shop, name: credentials}]
  overrideRules:
    - overriders:
        plaintext: [{path: /data/missing/x, operator: replace, value: y}]
"""
