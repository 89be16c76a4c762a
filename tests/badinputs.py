"""Bad-input cases: (id, files to write or delete, expected file, line, message fragment).

Each case starts from the valid example repo. Files map to new text, or None to delete.
"""

from __future__ import annotations

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: shop\n"
RPP = (
    "apiVersion: multicluster.io/v1alpha1\nkind: ResourcePlacementPolicy\nmetadata:\n"
    "  name: {name}\nspec:\n"
)
CLUSTER = (
    "apiVersion: multicluster.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: {name}\n"
    "  labels: {{region: eu-west}}\nspec:\n"
)
KPP = (
    "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n"
    "  name: {name}\n  namespace: shop\nspec:\n"
)
DRO_YAML = (
    "apiVersion: multicluster.io/v1alpha1\nkind: SchedulerConfiguration\nmetadata:\n"
    "  name: dro\nspec:\n"
)
DEPLOYMENT = (
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n  namespace: shop\n"
    "spec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{a: b}}}}\n"
    "  template:\n    metadata: {{labels: {{a: b}}}}\n"
    "    spec:\n      containers:\n        - name: c\n          image: i\n"
    "          resources: {{requests: {{cpu: {cpu}}}}}\n"
)
RPP_ROLLOUT = (
    RPP.format(name="p")
    + "  resourceSelector: {apiVersion: apps/v1, kind: Deployment}\n  placement:\n    rollout:\n"
)
RPP_LOCATIONS = (
    RPP.format(name="p")
    + "  resourceSelector: {apiVersion: apps/v1, kind: Deployment}\n  placement:\n"
)

SOPS_SECRET = (
    "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: shop}\ntype: Opaque\n"
    "data:\n  password: ENC[AES256_GCM,data:eA==,iv:aQ==,tag:dA==,type:str]\nsops:\n"
    "  age: [{recipient: age1x, enc: x}]\n  lastmodified: '2026-01-01T00:00:00Z'\n"
    "  mac: ENC[AES256_GCM,data:bWFj,type:str]\n  version: 3.11.0\n"
)
"""A Secret in sops' shape (not decryptable: validation does not decrypt)."""
W = "workloads/shop/bad.yaml"
P = "policies/bad.yaml"
C = "clusters/eu-west-3.yaml"
H = "workloads/web/dro-helm.yaml"
HELM_RELEASE = (
    "apiVersion: multicluster.io/v1alpha1\nkind: HelmRelease\nmetadata:\n  name: web\nspec:\n"
)

CASES: list[tuple[str, dict[str, str | None], str, int, str]] = [
    ("malformed-yaml", {W: CM.format(name="x") + "data: {a: [1\n"}, W, 7, "malformed YAML"),
    ("unclosed-quote", {W: 'apiVersion: v1\nkind: "ConfigMap\n'}, W, 3, "malformed YAML"),
    (
        "tab-indent",
        {W: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: x\n"},
        W,
        4,
        "malformed YAML",
    ),
    (
        "duplicate-key",
        {W: "apiVersion: v1\nkind: ConfigMap\nkind: Secret\n"},
        W,
        3,
        "duplicate key 'kind'",
    ),
    (
        "duplicate-nested-key",
        {W: CM.format(name="x") + "data:\n  a: '1'\n  a: '2'\n"},
        W,
        8,
        "duplicate key 'a'",
    ),
    (
        "alias-bomb",
        {
            W: "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
            + "".join(
                f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n"
                for p, c in zip("abcdef", "bcdefg", strict=True)
            )
        },
        W,
        1,
        "alias bomb",
    ),
    ("oversized", {W: "# " + "x" * (4 * 1024 * 1024 + 10) + "\n"}, W, 1, "over the limit"),
    (
        "python-tag",
        {W: "apiVersion: v1\nkind: !!python/object:os.system ConfigMap\n"},
        W,
        2,
        "unsupported YAML tag",
    ),
    ("merge-key", {W: "base: &b {a: 1}\nother:\n  <<: *b\n"}, W, 3, "merge keys"),
    ("not-a-mapping", {W: "- apiVersion: v1\n- kind: ConfigMap\n"}, W, 1, "must be a mapping"),
    ("missing-kind", {W: "apiVersion: v1\nmetadata:\n  name: x\n"}, W, 1, "missing or empty kind"),
    (
        "empty-apiversion",
        {W: "apiVersion: ''\nkind: ConfigMap\nmetadata: {name: x}\n"},
        W,
        1,
        "missing or empty apiVersion",
    ),
    (
        "missing-name",
        {W: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: shop\n"},
        W,
        3,
        "missing metadata.name",
    ),
    ("name-with-slash", {W: CM.format(name="a/b")}, W, 4, "would escape its folder"),
    ("name-dot-dot", {W: CM.format(name="'..'")}, W, 4, "would escape its folder"),
    (
        "namespace-escape",
        {W: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: ../etc\n"},
        W,
        5,
        "would escape its folder",
    ),
    ("name-not-string", {W: CM.format(name="123")}, W, 4, "must be a string"),
    (
        "unknown-core-field",
        {W: CM.format(name="x") + "dataa:\n  a: b\n"},
        W,
        6,
        "unknown field 'dataa'",
    ),
    (
        "unknown-nested-core-field",
        {
            W: CM.format(name="x").replace(
                "  namespace: shop\n", "  namespace: shop\n  lables: {a: b}\n"
            )
        },
        W,
        6,
        "unknown field 'lables'",
    ),
    (
        "wrong-type",
        {
            W: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n"
            "  namespace: shop\nspec:\n  replicas: three\n"
            "  selector: {matchLabels: {a: b}}\n"
            "  template:\n    metadata: {labels: {a: b}}\n"
            "    spec: {containers: [{name: c, image: i}]}\n"
        },
        W,
        7,
        "'three'",
    ),
    (
        "secret-value-hidden",
        {
            W: "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: shop}\n"
            "data:\n  password: {nested: hunter2}\n"
        },
        W,
        5,
        "the value is not shown",
    ),
    (
        "cluster-scoped-with-namespace",
        {W: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: extra\n  namespace: shop\n"},
        W,
        5,
        "cluster-scoped",
    ),
    (
        "duplicate-object",
        {"workloads/shop/zz-dup.yaml": CM.format(name="frontend-config")},
        "workloads/shop/zz-dup.yaml",
        4,
        "declared twice: first at workloads/shop/frontend.yaml",
    ),
    ("not-utf8", {W: None}, W, 2, "not valid UTF-8"),
    (
        "unknown-policy-kind",
        {
            P: "apiVersion: multicluster.io/v1alpha1\nkind: Placement\n"
            "metadata: {name: p}\nspec: {}\n"
        },
        P,
        2,
        "unknown policy kind",
    ),
    (
        "unknown-rpp-field",
        {
            P: RPP.format(name="p") + "  resourceSelector: {apiVersion: v1, kind: "
            "ConfigMap}\n  targets: []\n"
        },
        P,
        7,
        "unknown field 'targets'",
    ),
    (
        "rpp-unknown-cluster",
        {
            P: RPP.format(name="p") + "  resourceSelector: {apiVersion: batch/v1, "
            "kind: Job}\n  targetClusters:\n    - {selectorType: name, "
            "values: [mars-1]}\n"
        },
        P,
        5,
        "unknown cluster 'mars-1'",
    ),
    (
        "rpp-weight-unknown-cluster",
        {
            P: RPP.format(name="p") + "  resourceSelector: {apiVersion: "
            "batch/v1, kind: Job}\n  placement:\n    replicaScheduling:"
            "\n      type: Divided\n      weights: [{clusters: [venus],"
            " weight: 1}]\n"
        },
        P,
        5,
        "unknown cluster 'venus'",
    ),
    (
        "rpp-bad-label-target",
        {
            P: RPP.format(name="p") + "  resourceSelector: {apiVersion: batch/v1,"
            " kind: Job}\n  targetClusters:\n    - {selectorType: label, "
            "values: [region]}\n"
        },
        P,
        8,
        "must look like key=value",
    ),
    (
        "rpp-bad-division",
        {
            P: RPP.format(name="p") + "  resourceSelector: {apiVersion: batch/v1, "
            "kind: Job}\n  placement:\n    replicaScheduling: {type: Divided, "
            "division: Random}\n"
        },
        P,
        8,
        "'Random' is not one of",
    ),
    (
        "override-unknown-cluster",
        {
            P: "apiVersion: multicluster.io/v1alpha1\nkind: "
            "ClusterOverridePolicy\nmetadata: {name: o}\nspec:\n  "
            "overrides:\n    - clusterSelector: {names: [pluto]}\n      "
            "fieldPatches: [{path: spec.replicas, value: 1}]\n"
        },
        P,
        4,
        "unknown cluster 'pluto'",
    ),
    (
        "karmada-unknown-cluster",
        {
            P: KPP.format(name="k") + "  resourceSelectors: [{apiVersion: "
            "batch/v1, kind: Job}]\n  placement:\n    clusterAffinity:"
            " {clusterNames: [saturn]}\n"
        },
        P,
        6,
        "unknown cluster 'saturn'",
    ),
    (
        "karmada-other-namespace",
        {
            P: KPP.format(name="k") + "  resourceSelectors:\n    - "
            "{apiVersion: batch/v1, kind: Job, namespace: payments}\n"
        },
        P,
        8,
        "cannot select resources in 'payments'",
    ),
    (
        "karmada-spread-max-below-min",
        {
            P: KPP.format(name="k") + "  resourceSelectors: "
            "[{apiVersion: batch/v1, kind: Job}]\n  placement:\n"
            "    spreadConstraints:\n      - {spreadByField: cluster,"
            " minGroups: 3, maxGroups: 2}\n"
        },
        P,
        8,
        "maxGroups is lower than minGroups",
    ),
    (
        "karmada-spread-without-cluster",
        {
            P: KPP.format(name="k") + "  resourceSelectors: "
            "[{apiVersion: batch/v1, kind: Job}]\n  placement:\n"
            "    spreadConstraints:\n      - {spreadByField: region,"
            " minGroups: 1, maxGroups: 2}\n"
        },
        P,
        9,
        "needs a 'cluster' constraint",
    ),
    (
        "karmada-bad-field-selector",
        {
            P: KPP.format(name="k") + "  resourceSelectors: "
            "[{apiVersion: batch/v1, kind: Job}]\n  placement:\n"
            "    clusterAffinity:\n      fieldSelector:\n        "
            "matchExpressions: [{key: city, operator: In, values: "
            "[x]}]\n"
        },
        P,
        11,
        "'city' is not one of",
    ),
    (
        "draft-pp-unknown-cluster",
        {
            P: "apiVersion: multicluster.io/v1alpha1\nkind: "
            "PropagationPolicy\nmetadata: {name: d}\nspec: {resourceType: "
            "Job, targetClusters: [neptune]}\n"
        },
        P,
        4,
        "unknown cluster 'neptune'",
    ),
    (
        "ambiguous-claim",
        {
            P: RPP.format(name="first") + "  resourceSelector: {apiVersion: apps/v1, "
            "kind: Deployment, namespace: shop, name: cart}\n---\n"
            + RPP.format(name="second")
            + "  resourceSelector: {apiVersion: "
            "apps/v1, kind: Deployment, namespace: shop, name: cart}\n"
        },
        P,
        12,
        "both claim shop/Deployment.apps/cart",
    ),
    (
        "dataset-unknown-cluster",
        {
            "datasets/clickstream.yaml": "apiVersion: multicluster.io/v1alpha1"
            "\nkind: DataSet\nmetadata: {name: clickstream}\nspec:\n  size: "
            "1Ti\n  locations:\n    - {cluster: eu-west-9, role: primary}\n"
        },
        "datasets/clickstream.yaml",
        7,
        "unknown cluster 'eu-west-9'",
    ),
    (
        "topology-unknown-cluster",
        {
            "topology.yaml": "apiVersion: multicluster.io/v1alpha1\nkind: "
            "Topology\nmetadata: {name: t}\nspec:\n  links:\n    - {from: "
            "eu-west-1, to: moon-1}\n"
        },
        "topology.yaml",
        6,
        "unknown cluster 'moon-1'",
    ),
    (
        "cluster-file-name-mismatch",
        {
            "clusters/eu-west-3.yaml": CLUSTER.format(name="eu-west-4")
            + "  kubeconfig: {context: eu-west-4}\n"
        },
        "clusters/eu-west-3.yaml",
        4,
        "must be declared in clusters/eu-west-4.yaml",
    ),
    (
        "cluster-bad-quantity",
        {"clusters/eu-west-3.yaml": CLUSTER.format(name="eu-west-3") + "  capacity: {cpu: lots}\n"},
        "clusters/eu-west-3.yaml",
        7,
        "'lots' is not a Kubernetes quantity",
    ),
    (
        "cluster-over-allocated",
        {
            "clusters/eu-west-3.yaml": CLUSTER.format(name="eu-west-3")
            + "  capacity: {cpu: '4'}\n  allocated: {cpu: '5'}\n"
        },
        "clusters/eu-west-3.yaml",
        8,
        "exceeds the cluster's capacity",
    ),
    (
        "cluster-unknown-field",
        {"clusters/eu-west-3.yaml": CLUSTER.format(name="eu-west-3") + "  kubeContext: x\n"},
        "clusters/eu-west-3.yaml",
        7,
        "unknown field 'kubeContext'",
    ),
    (
        "cluster-bad-taint",
        {
            "clusters/eu-west-3.yaml": CLUSTER.format(name="eu-west-3")
            + "  taints:\n    - {key: a, effect: Sometimes}\n"
        },
        "clusters/eu-west-3.yaml",
        8,
        "'Sometimes' is not one of",
    ),
    (
        "cluster-wrong-kind",
        {"clusters/eu-west-3.yaml": CM.format(name="eu-west-3")},
        "clusters/eu-west-3.yaml",
        2,
        "must hold a multicluster.io/v1alpha1 Cluster",
    ),
    (
        "dro-yaml-operational-key",
        {"dro.yaml": DRO_YAML + "  interval: 60\n"},
        "dro.yaml",
        6,
        "unknown field 'interval'",
    ),
    (
        "dro-yaml-unknown-k8s-version",
        {"dro.yaml": DRO_YAML + "  kubernetesVersion: '1.99'\n"},
        "dro.yaml",
        6,
        "no bundled schema",
    ),
    (
        "dro-yaml-water-level-above-one",
        {"dro.yaml": DRO_YAML + "  waterLevelLimit: {cpu: 1.5}\n"},
        "dro.yaml",
        6,
        "1.5 is greater than the maximum",
    ),
    (
        "dro-yaml-ceiling-below-limit",
        {"dro.yaml": DRO_YAML + "  waterLevelLimit: {cpu: 0.9}\n  waterLevelCeiling: {cpu: 0.8}\n"},
        "dro.yaml",
        7,
        "waterLevelCeiling 0.8 is below the water-level limit 0.9 (cpu)",
    ),
    (
        "dro-yaml-prediction-band-negative",
        {"dro.yaml": DRO_YAML + "  prediction: {enabled: true, band: -1}\n"},
        "dro.yaml",
        6,
        "-1 is less than the minimum of 0",
    ),
    (
        "dro-yaml-output-karmada-text",
        {"dro.yaml": DRO_YAML + "  output:\n    karmada: yes please\n"},
        "dro.yaml",
        7,
        "'yes please' is not of type 'boolean'",
    ),
    (
        "dro-yaml-output-profile-namespace",
        {"dro.yaml": DRO_YAML + "  output:\n    clusterProfileNamespace: Fleet_System\n"},
        "dro.yaml",
        7,
        "'Fleet_System': a namespace name",
    ),
    (
        "dro-yaml-output-unknown-key",
        {"dro.yaml": DRO_YAML + "  output: {argo: true}\n"},
        "dro.yaml",
        6,
        "argo",
    ),
    (
        "dro-yaml-prediction-band-text",
        {"dro.yaml": DRO_YAML + "  prediction:\n    band: wide\n"},
        "dro.yaml",
        7,
        "'wide' is not of type 'number'",
    ),
    (
        "dro-yaml-ceiling-zero",
        {"dro.yaml": DRO_YAML + "  waterLevelCeiling: {cpu: 0}\n"},
        "dro.yaml",
        6,
        "less than or equal to the minimum",
    ),
    (
        "rpp-ceiling-below-limit",
        {
            P: RPP.format(name="p") + "  resourceSelector: {apiVersion: v1, kind: ConfigMap}\n"
            "  placement:\n    waterLevelLimit: {cpu: 0.7}\n"
            "    waterLevelCeiling: {cpu: 0.6}\n"
        },
        P,
        9,
        "waterLevelCeiling 0.6 is below the water-level limit 0.7 (cpu)",
    ),
    (
        "rpp-limit-above-dro-yaml-ceiling",
        {
            "dro.yaml": DRO_YAML + "  waterLevelCeiling: {cpu: 0.9}\n",
            P: RPP.format(name="p") + "  resourceSelector: {apiVersion: v1, kind: ConfigMap}\n"
            "  placement:\n    waterLevelLimit: {cpu: 0.95}\n",
        },
        P,
        8,
        "waterLevelCeiling 0.9 is below the water-level limit 0.95 (cpu)",
    ),
    (
        "rpp-overflow-unknown",
        {
            P: RPP.format(name="p") + "  resourceSelector: {apiVersion: v1, kind: ConfigMap}\n"
            "  placement:\n    overflow: Sometimes\n"
        },
        P,
        8,
        "'Sometimes' is not one of 'Always', 'Never'",
    ),
    (
        "rpp-apply-drift-unknown",
        {
            P: RPP.format(name="p") + "  resourceSelector: {apiVersion: v1, kind: ConfigMap}\n"
            "  placement:\n    apply:\n      drift: Ignore\n"
        },
        P,
        9,
        "'Ignore' is not one of 'Correct', 'Report'",
    ),
    (
        "rpp-apply-drift-not-a-string",
        {
            P: RPP.format(name="p") + "  resourceSelector: {apiVersion: v1, kind: ConfigMap}\n"
            "  placement:\n    apply: {takeover: Never, drift: true}\n"
        },
        P,
        8,
        "true is not one of 'Correct', 'Report'",
    ),
    (
        "dro-yaml-default-drift-unknown",
        {"dro.yaml": DRO_YAML + "  defaultPlacement:\n    apply: {drift: report}\n"},
        "dro.yaml",
        7,
        "'report' is not one of 'Correct', 'Report'",
    ),
    (
        "dro-yaml-two-documents",
        {"dro.yaml": DRO_YAML + "  pluginWeights: {Balance: 1}\n---\n" + DRO_YAML},
        "dro.yaml",
        8,
        "exactly one document",
    ),
    (
        "field-patch-bad-path",
        {
            P: "apiVersion: multicluster.io/v1alpha1\nkind: "
            "ClusterOverridePolicy\nmetadata: {name: o}\nspec:\n  "
            "resourceSelector: {apiVersion: apps/v1, kind: Deployment, "
            "name: cart, namespace: shop}\n  overrides:\n    - fieldPatches:"
            " [{path: 'spec..replicas', value: 1}]\n"
        },
        P,
        7,
        "bad field path 'spec..replicas'",
    ),
    (
        "plaintext-remove-missing",
        {
            P: "apiVersion: policy.karmada.io/v1alpha1\nkind: "
            "OverridePolicy\nmetadata: {name: o, namespace: shop}\nspec:\n"
            "  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment,"
            " name: cart}]\n  overrideRules:\n    - overriders:\n        "
            "plaintext: [{path: /spec/nothing, operator: remove}]\n"
        },
        P,
        8,
        "plaintext remove /spec/nothing",
    ),
    (
        "sync-hook-for-a-stateless-workload",
        {
            W: "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: sync\n  namespace: shop\n"
            "  annotations:\n    multicluster.io/data-sync-for: Deployment/cart\n"
            "spec:\n  template:\n    spec:\n      restartPolicy: Never\n"
            "      containers: [{name: s, image: 's:1'}]\n"
        },
        W,
        7,
        "is not stateful",
    ),
    ("nesting-30000-deep", {W: "a: " + "[" * 30000 + "]" * 30000 + "\n"}, W, 1, "deeper than 100"),
    ("block-nesting-30000-deep", {W: "- " * 30000 + "x\n"}, W, 1, "nesting deeper than 100"),
    (
        "integer-5000-digits",
        {W: DEPLOYMENT.format(replicas="9" * 5000, cpu="1")},
        W,
        7,
        "(5000 characters) is outside int64",
    ),
    (
        "integer-beyond-int64",
        {W: DEPLOYMENT.format(replicas="9223372036854775808", cpu="1")},
        W,
        7,
        "is outside int64",
    ),
    (
        "replicas-negative",
        {W: DEPLOYMENT.format(replicas="-1", cpu="1")},
        W,
        7,
        "-1 is less than the minimum of 0",
    ),
    (
        "replicas-above-int32",
        {W: DEPLOYMENT.format(replicas="2147483648", cpu="1")},
        W,
        7,
        "2147483648 is greater than the maximum of 2147483647",
    ),
    (
        "request-not-a-quantity",
        {W: DEPLOYMENT.format(replicas="1", cpu="lots")},
        W,
        15,
        "'lots' is not a Kubernetes quantity",
    ),
    (
        "request-beyond-float64",
        {W: DEPLOYMENT.format(replicas="1", cpu="'1e309'")},
        W,
        15,
        "'1e309' is out of range",
    ),
    (
        "request-negative",
        {W: DEPLOYMENT.format(replicas="1", cpu="'-2'")},
        W,
        15,
        "must be greater than or equal to 0",
    ),
    (
        "static-weight-10-to-the-30",
        {
            P: RPP.format(name="p") + "  resourceSelector: {apiVersion: apps/v1, kind: "
            "Deployment}\n  placement:\n    replicaScheduling:\n      type: Divided\n"
            "      division: StaticWeight\n      weights:\n        - clusters: [eu-west-1]\n"
            "          weight: 1000000000000000000000000000000\n"
        },
        P,
        13,
        "is outside int64",
    ),
    (
        "capacity-nan",
        {C: CLUSTER.format(name="eu-west-3") + "  capacity: {cpu: .nan}\n"},
        C,
        7,
        ".nan is not a finite number",
    ),
    (
        "capacity-1e309",
        {C: CLUSTER.format(name="eu-west-3") + "  capacity: {cpu: '1e309'}\n"},
        C,
        7,
        "'1e309' is out of range",
    ),
    (
        "allocated-infinite",
        {C: CLUSTER.format(name="eu-west-3") + "  allocated:\n    memory: 1.0e+309\n"},
        C,
        8,
        "1.0e+309 is not a finite number",
    ),
    (
        "cost-nan",
        {C: CLUSTER.format(name="eu-west-3") + "  cost: {cpu: .NaN}\n"},
        C,
        7,
        "not a finite number",
    ),
    (
        "requested-at-not-a-date",
        {
            P: RPP.format(name="p") + "  resourceSelector: {apiVersion: apps/v1, kind: "
            "Deployment, name: cart, namespace: shop}\n  placement:\n    rebalance:\n"
            "      requestedAt: '2026-13-45T10:00:00Z'\n"
        },
        P,
        9,
        "is not a valid time: month must be in 1..12",
    ),
    (
        "max-moves-5000-digits",
        {"dro.yaml": DRO_YAML + "  rebalance: {maxMovesPerPass: '" + "9" * 5000 + "'}\n"},
        "dro.yaml",
        6,
        "(5000 characters) does not match",
    ),
    (
        "cooldown-400-digits",
        {"dro.yaml": DRO_YAML + "  rebalance:\n    cooldown: " + "9" * 400 + "h\n"},
        "dro.yaml",
        7,
        "does not match",
    ),
    (
        "disruption-zero-clusters",
        {
            P: RPP.format(name="p") + "  resourceSelector: {apiVersion: apps/v1, kind: "
            "Deployment}\n  placement:\n    disruption: {maxUnavailableClusters: 0}\n"
        },
        P,
        8,
        "0 is less than the minimum of 1",
    ),
    (
        "disruption-percent-over-100",
        {
            P: RPP.format(name="p") + "  resourceSelector: {apiVersion: apps/v1, kind: "
            "Deployment}\n  placement:\n    disruption:\n      maxUnavailableClusters: '150%'\n"
        },
        P,
        9,
        "'150%': a number of clusters (1 or more) or a percentage",
    ),
    (
        "disruption-zero-percent-in-dro-yaml",
        {"dro.yaml": DRO_YAML + "  disruption: {maxUnavailableClusters: '0%'}\n"},
        "dro.yaml",
        6,
        "from 1% to 100%",
    ),
    (
        "disruption-fraction",
        {"dro.yaml": DRO_YAML + "  disruption: {maxUnavailableClusters: 0.5}\n"},
        "dro.yaml",
        6,
        "0.5 is not of type 'integer', 'string'",
    ),
    (
        "disruption-misspelt",
        {"dro.yaml": DRO_YAML + "  defaultPlacement:\n    disruption: {maxUnavailable: 1}\n"},
        "dro.yaml",
        7,
        "unknown field 'maxUnavailable' (expected one of: maxUnavailableClusters)",
    ),
    ("set-tag", {W: CM.format(name="x") + "data: !!set {a, b}\n"}, W, 6, "unsupported YAML tag"),
    (
        "python-apply-tag-on-a-sequence",
        {W: CM.format(name="x") + "data: !!python/object/apply:os.system [id]\n"},
        W,
        6,
        "tag:yaml.org,2002:python/object/apply:os.system",
    ),
    (
        "local-tag-on-a-mapping",
        {W: CM.format(name="x") + "data: !mine {a: b}\n"},
        W,
        6,
        "unsupported YAML tag !mine",
    ),
    (
        "control-character",
        {W: "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: b\x07c\n"},
        W,
        4,
        "malformed YAML: control characters are not allowed (#x0007)",
    ),
    (
        "spec-not-a-mapping",
        {
            W: "apiVersion: apps/v1\nkind: Deployment\n"
            "metadata: {name: x, namespace: shop}\nspec: 5\n"
        },
        W,
        4,
        "is not of type 'object'",
    ),
    (
        "request-is-a-list",
        {W: DEPLOYMENT.format(replicas="1", cpu="[1]")},
        W,
        15,
        "[1] is not of type",
    ),
    (
        "rpp-without-selector",
        {P: RPP.format(name="p") + "  resourceSelectors: []\n"},
        P,
        6,
        "should be non-empty",
    ),
    (
        "removed-api-cronjob",
        {
            W: "apiVersion: batch/v1beta1\nkind: CronJob\nmetadata: {name: c, namespace: shop}\n"
            "spec:\n  schedule: '* * * * *'\n  jobTemplate: {spec: {template: {spec: "
            "{restartPolicy: Never, containers: [{name: c, image: 'c:1'}]}}}}\n"
        },
        W,
        1,
        "batch/v1beta1 CronJob was removed in Kubernetes 1.25",
    ),
    (
        "removed-api-pdb",
        {
            W: "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\n"
            "metadata: {name: p, namespace: shop}\nspec: {minAvailable: 1}\n"
        },
        W,
        1,
        "use apiVersion: policy/v1",
    ),
    (
        "rollout-bad-on-failure",
        {P: RPP_ROLLOUT + "      maxClusters: 2\n      onFailure: Retry\n"},
        P,
        10,
        "Retry",
    ),
    (
        "rollout-bad-soak",
        {P: RPP_ROLLOUT + "      maxClusters: 2\n      soak: ten minutes\n"},
        P,
        10,
        "soak",
    ),
    (
        "rollout-bad-max-clusters",
        {P: RPP_ROLLOUT + "      maxClusters: 25 percent\n"},
        P,
        9,
        "maxClusters",
    ),
    (
        "rollout-zero-max-clusters",
        {P: RPP_ROLLOUT + "      maxClusters: '0%'\n"},
        P,
        9,
        "maxClusters must be at least 1",
    ),
    (
        "rollout-waves-and-max-clusters",
        {
            P: RPP_ROLLOUT
            + "      maxClusters: 2\n      waves: [{name: a, clusters: [eu-west-1]}]\n"
        },
        P,
        9,
        "waves or maxClusters, not both",
    ),
    (
        "rollout-empty",
        {P: RPP_ROLLOUT + "      soak: 5m\n"},
        P,
        8,
        "rollout needs waves or maxClusters",
    ),
    (
        "rollout-wave-named-twice",
        {
            P: RPP_ROLLOUT + "      waves:\n        - {name: a, clusters: [eu-west-1]}\n"
            "        - {name: a, labels: {region: eu-west}}\n"
        },
        P,
        11,
        "wave 'a' is named twice",
    ),
    (
        "rollout-wave-unknown-cluster",
        {
            P: RPP_ROLLOUT
            + "      waves:\n        - name: a\n          clusters: [eu-west-1, mars-1]\n"
        },
        P,
        11,
        "unknown cluster 'mars-1'",
    ),
    (
        "rollout-wave-named-rest",
        {P: RPP_ROLLOUT + "      waves:\n        - {name: rest, clusters: [eu-west-1]}\n"},
        P,
        10,
        "reserved",
    ),
    (
        "rollout-wave-without-clusters",
        {P: RPP_ROLLOUT + "      waves:\n        - {name: a, approval: true}\n"},
        P,
        10,
        "wave 'a' names no clusters or labels",
    ),
    (
        "rollout-wave-bad-name",
        {P: RPP_ROLLOUT + "      waves:\n        - {name: First Wave, clusters: [eu-west-1]}\n"},
        P,
        10,
        "First Wave",
    ),
    (
        "rollout-promote-unknown-wave",
        {
            "dro.yaml": DRO_YAML + "  rollout: {waves: [{name: prod, labels: {a: b}, "
            "approval: true}]}\n",
            W: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: shop\n"
            "  annotations:\n    multicluster.io/rollout-promote: prdo\n",
        },
        W,
        7,
        "names no approval wave",
    ),
    (
        "dro-yaml-rollout-bad-timeout",
        {"dro.yaml": DRO_YAML + "  rollout: {maxClusters: 1, healthTimeout: 15 minutes}\n"},
        "dro.yaml",
        6,
        "15 minutes",
    ),
    (
        "rpp-locations-empty",
        {P: RPP_LOCATIONS + "    locations: []\n"},
        P,
        8,
        "should be non-empty",
    ),
    (
        "rpp-locations-empty-codes",
        {P: RPP_LOCATIONS + "    locations: [{cityCodes: []}]\n"},
        P,
        8,
        "should be non-empty",
    ),
    (
        "rpp-locations-bad-code",
        {P: RPP_LOCATIONS + "    locations:\n      - cityCodes: [DFW, dfw]\n"},
        P,
        9,
        "'dfw': a city code: three upper-case letters",
    ),
    (
        "rpp-locations-duplicate-code",
        {
            P: RPP_LOCATIONS
            + "    locations:\n      - cityCodes: [DFW]\n      - cityCodes: [ORD, DFW]\n"
        },
        P,
        10,
        "city code DFW is listed twice (first at /spec/placement/locations/0/cityCodes/0)",
    ),
    (
        "rpp-locations-unknown-field",
        {P: RPP_LOCATIONS + "    locations:\n      - {cityCodes: [DFW], weight: 2}\n"},
        P,
        9,
        "unknown field 'weight'",
    ),
    (
        "karmada-locations",
        {
            P: KPP.format(name="p")
            + "  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n"
            "  placement:\n    locations: [{cityCodes: [DFW]}]\n"
        },
        P,
        9,
        "placement.locations is dro's (ResourcePlacementPolicy)",
    ),
    (
        "cluster-city-code-lowercase",
        {
            C: CLUSTER.format(name="eu-west-3").replace(
                "{region: eu-west}", "{topology.datum.net/city-code: dub}"
            )
            + "  capacity: {cpu: '1'}\n"
        },
        C,
        5,
        "'dub': a city code: three upper-case letters",
    ),
    (
        "helm-release-missing-namespace",
        {H: HELM_RELEASE + "  releaseName: web\n"},
        H,
        5,
        "'namespace' is a required field",
    ),
    (
        "helm-release-name-too-long",
        {H: HELM_RELEASE + "  releaseName: " + "w" * 54 + "\n  namespace: web\n"},
        H,
        6,
        "is too long",
    ),
    (
        "helm-release-bad-namespace",
        {H: HELM_RELEASE + "  releaseName: web\n  namespace: Web_Tier\n"},
        H,
        7,
        "Web_Tier",
    ),
    (
        "helm-release-unknown-key",
        {H: HELM_RELEASE + "  releaseName: web\n  namespace: web\n  valueFiles: [a.yaml]\n"},
        H,
        8,
        "valueFiles",
    ),
    (
        "helm-release-values-outside",
        {H: HELM_RELEASE + "  releaseName: web\n  namespace: web\n  valuesFiles: [../x.yaml]\n"},
        H,
        8,
        "../x.yaml",
    ),
    (
        "helm-release-include-crds-not-bool",
        {H: HELM_RELEASE + "  releaseName: web\n  namespace: web\n  includeCRDs: yes please\n"},
        H,
        8,
        "is not of type 'boolean'",
    ),
    (
        "helm-release-wrong-kind",
        {H: HELM_RELEASE.replace("HelmRelease", "HelmChart") + "  releaseName: web\n"},
        H,
        2,
        "must hold a multicluster.io/v1alpha1 HelmRelease",
    ),
    (
        "helm-release-values-file-missing",
        {
            "workloads/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
            "workloads/web/values.yaml": "replicas: 1\n",
            "workloads/web/dro-helm.yaml": HELM_RELEASE
            + "  releaseName: web\n  namespace: web\n  valuesFiles: [prod.yaml]\n",
        },
        "workloads/web/dro-helm.yaml",
        8,
        "values file 'prod.yaml' is not in workloads/web/",
    ),
    (
        "helm-chart-without-dro-helm-yaml",
        {
            "workloads/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
            "workloads/web/values.yaml": "replicas: 1\n",
        },
        "workloads/web/Chart.yaml",
        1,
        "needs a dro-helm.yaml",
    ),
    (
        "kustomization-remote-resource",
        {"workloads/web/kustomization.yaml": "resources:\n  - https://example.com/x.yaml\n"},
        "workloads/web/kustomization.yaml",
        2,
        "is remote",
    ),
    (
        "kustomization-broken",
        {"workloads/web/kustomization.yaml": "resources:\n  - missing.yaml\n"},
        "workloads/web/kustomization.yaml",
        2,
        "kustomize could not build workloads/web/",
    ),
    (
        "sops-no-mac",
        {W: SOPS_SECRET.replace("  mac: ENC[AES256_GCM,data:bWFj,type:str]\n", "")},
        W,
        7,
        "sops metadata has no mac",
    ),
    (
        "sops-no-key",
        {W: SOPS_SECRET.replace("  age: [{recipient: age1x, enc: x}]\n", "")},
        W,
        7,
        "names no key",
    ),
    (
        "sops-mac-plain",
        {W: SOPS_SECRET.replace("ENC[AES256_GCM,data:bWFj,type:str]", "abc")},
        W,
        10,
        "sops mac must be an ENC[...] string",
    ),
    (
        "sops-metadata-encrypted",
        {
            W: SOPS_SECRET.replace(
                "namespace: shop}", "namespace: shop, labels: {a: 'ENC[AES256_GCM,data:eA]'}}"
            )
        },
        W,
        3,
        "metadata is encrypted",
    ),
    (
        "sops-with-other-documents",
        {W: SOPS_SECRET + "---\n" + CM.format(name="x")},
        W,
        1,
        "must be the only document of its file",
    ),
    (
        "sops-bad-type",
        {W: SOPS_SECRET.replace("type: Opaque", "type: [Opaque]")},
        W,
        4,
        "must be of type",
    ),
]
