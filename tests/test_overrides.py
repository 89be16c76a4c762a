"""Override operations, table by table: fieldPatch paths, plaintext, images, lists, maps."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from reconciler.render import imageref, overrides

DIGEST = "sha256:" + "5" * 64
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {
        "replicas": 1,
        "template": {
            "spec": {
                "initContainers": [{"name": "init", "image": "busybox:1"}],
                "containers": [
                    {"name": "web", "image": "nginx:1.25", "args": ["--a"]},
                    {"name": "side", "image": f"gcr.io/proj/side@{DIGEST}"},
                ],
            }
        },
    },
}


def applied(operation: str, op: dict[str, Any]) -> dict[str, Any]:
    manifest = copy.deepcopy(DEPLOYMENT)
    overrides.apply(manifest, operation, op)
    return manifest


@pytest.mark.parametrize(
    ("path", "tokens"),
    [
        ("spec.replicas", ["spec", "replicas"]),
        (
            "spec.template.spec.containers[0].image",
            ["spec", "template", "spec", "containers", 0, "image"],
        ),
        (
            'metadata.annotations["example.com/owner"]',
            ["metadata", "annotations", "example.com/owner"],
        ),
        ('a["quote \\" and \\\\ slash"].b', ["a", 'quote " and \\ slash', "b"]),
        ("a[1][2]", ["a", 1, 2]),
    ],
)
def test_field_paths_parse(path: str, tokens: list[object]) -> None:
    assert overrides.parse_field_path(path) == tokens


@pytest.mark.parametrize("path", ["", ".a", "a..b", "a[x]", 'a["open', "a]"])
def test_bad_field_paths_are_rejected(path: str) -> None:
    with pytest.raises(overrides.OverrideError):
        overrides.parse_field_path(path)


def test_field_patch_creates_maps_and_sets_list_items() -> None:
    result = applied("fieldPatch", {"path": 'metadata.annotations["a.b/c"]', "value": "x"})
    assert result["metadata"]["annotations"] == {"a.b/c": "x"}
    result = applied(
        "fieldPatch", {"path": "spec.template.spec.containers[1].image", "value": "other:2"}
    )
    assert result["spec"]["template"]["spec"]["containers"][1]["image"] == "other:2"
    with pytest.raises(overrides.OverrideError, match=r"no list item \[5\]"):
        applied("fieldPatch", {"path": "spec.template.spec.containers[5].image", "value": 1})


@pytest.mark.parametrize(
    ("op", "check"),
    [
        (
            {"operator": "add", "path": "/spec/paused", "value": True},
            lambda m: m["spec"]["paused"] is True,
        ),
        (
            {"operator": "replace", "path": "/spec/replicas", "value": 9},
            lambda m: m["spec"]["replicas"] == 9,
        ),
        (
            {"operator": "remove", "path": "/metadata/labels/app"},
            lambda m: m["metadata"]["labels"] == {},
        ),
    ],
)
def test_plaintext_is_json_patch(op: dict[str, Any], check: Any) -> None:
    assert check(applied("plaintext", op))


def test_plaintext_errors_name_the_path() -> None:
    with pytest.raises(overrides.OverrideError, match="/spec/missing"):
        applied("plaintext", {"operator": "remove", "path": "/spec/missing"})


@pytest.mark.parametrize(
    ("image", "parts"),
    [
        ("nginx", ("", "nginx", "", "")),
        ("nginx:1.25", ("", "nginx", "1.25", "")),
        ("library/nginx:1", ("", "library/nginx", "1", "")),
        ("docker.io/library/nginx:1", ("docker.io", "library/nginx", "1", "")),
        ("localhost/app", ("localhost", "app", "", "")),
        (f"registry:5000/team/app@{DIGEST}", ("registry:5000", "team/app", "", DIGEST)),
        # a tag and a digest: Karmada's parser keeps the tag only
        (f"registry:5000/team/app:2@{DIGEST}", ("registry:5000", "team/app", "2", "")),
    ],
)
def test_image_references_split_like_karmada(image: str, parts: tuple[str, str, str, str]) -> None:
    parsed = imageref.parse(image)
    assert (parsed.registry, parsed.repository, parsed.tag, parsed.digest) == parts


@pytest.mark.parametrize("image", ["Nginx:1", "nginx:", "app@sha256:abc", "a//b", ""])
def test_bad_image_references_fail_the_override(image: str) -> None:
    pod = {"kind": "Pod", "spec": {"containers": [{"name": "c", "image": image}]}}
    with pytest.raises(overrides.OverrideError, match="not a valid image reference"):
        overrides.apply(
            pod, "imageOverrider", {"component": "Tag", "operator": "replace", "value": "2"}
        )


@pytest.mark.parametrize(
    ("op", "images"),
    [
        (
            {"component": "Registry", "operator": "replace", "value": "mirror.io"},
            ["mirror.io/nginx:1.25", f"mirror.io/proj/side@{DIGEST}"],
        ),
        (
            {"component": "Registry", "operator": "add", "value": "-eu"},
            ["-eu/nginx:1.25", f"gcr.io-eu/proj/side@{DIGEST}"],
        ),
        (
            {"component": "Tag", "operator": "replace", "value": "2.0"},
            ["nginx:2.0", "gcr.io/proj/side:2.0"],
        ),
        (
            {"component": "Repository", "operator": "replace", "value": "base"},
            ["base:1.25", f"gcr.io/base@{DIGEST}"],
        ),
    ],
)
def test_image_overrider_rewrites_app_containers_only(
    op: dict[str, Any], images: list[str]
) -> None:
    result = applied("imageOverrider", op)
    spec = result["spec"]["template"]["spec"]
    assert [c["image"] for c in spec["containers"]] == images
    assert spec["initContainers"][0]["image"] == "busybox:1"


def test_image_overrider_with_predicate_changes_one_path() -> None:
    result = applied(
        "imageOverrider",
        {
            "predicate": {"path": "/spec/template/spec/containers/1/image"},
            "component": "Tag",
            "operator": "replace",
            "value": "v9",
        },
    )
    images = [c["image"] for c in result["spec"]["template"]["spec"]["containers"]]
    assert images == ["nginx:1.25", "gcr.io/proj/side:v9"]


def test_args_and_command_overriders() -> None:
    added = applied("argsOverrider", {"containerName": "web", "operator": "add", "value": ["--b"]})
    assert added["spec"]["template"]["spec"]["containers"][0]["args"] == ["--a", "--b"]
    removed = applied(
        "argsOverrider", {"containerName": "web", "operator": "remove", "value": ["--a"]}
    )
    assert removed["spec"]["template"]["spec"]["containers"][0]["args"] == []
    command = applied(
        "commandOverrider", {"containerName": "side", "operator": "add", "value": ["run"]}
    )
    assert command["spec"]["template"]["spec"]["containers"][1]["command"] == ["run"]


@pytest.mark.parametrize(
    ("operator", "value", "expected"),
    [
        ("add", {"tier": "web"}, {"app": "web", "tier": "web"}),
        ("replace", {"app": "api", "absent": "x"}, {"app": "api"}),
        ("remove", {"app": "", "absent": ""}, {}),
    ],
)
def test_labels_overrider(operator: str, value: dict[str, str], expected: dict[str, str]) -> None:
    result = applied("labelsOverrider", {"operator": operator, "value": value})
    assert result["metadata"]["labels"] == expected


def test_annotations_overrider_creates_the_map() -> None:
    result = applied("annotationsOverrider", {"operator": "add", "value": {"a/b": "c"}})
    assert result["metadata"]["annotations"] == {"a/b": "c"}


WORKLOADS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "ReplicaSet": ("spec", "template", "spec"),
    "Deployment": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
}


def _workload(kind: str, path: tuple[str, ...]) -> dict[str, Any]:
    pod_spec = {"containers": [{"name": "myapp", "image": "myapp:1.0.0", "args": ["-v"]}]}
    manifest: dict[str, Any] = {"kind": kind, "metadata": {"name": "myapp"}}
    node = manifest
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = pod_spec
    return manifest


def _pod_spec(manifest: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        manifest = manifest[key]
    return manifest


@pytest.mark.parametrize("kind", sorted(WORKLOADS))
def test_image_command_and_args_overriders_on_every_kind_karmada_supports(kind: str) -> None:
    """https://karmada.io/docs/userguide/scheduling/override-policy: image, command and args
    overriders rewrite `containers` of Pod (`/spec/containers/N`), ReplicaSet, Deployment,
    DaemonSet, StatefulSet and Job (`/spec/template/spec/containers/N`); Karmada's
    overridemanager (imageoverride.go, commandargsoverride.go) lists exactly these kinds."""
    path = WORKLOADS[kind]
    manifest = _workload(kind, path)
    overrides.apply(
        manifest,
        "imageOverrider",
        {"component": "Registry", "operator": "replace", "value": "test-repo"},
    )
    overrides.apply(
        manifest,
        "commandOverrider",
        {"containerName": "myapp", "operator": "add", "value": ["/entrypoint.sh"]},
    )
    overrides.apply(
        manifest, "argsOverrider", {"containerName": "myapp", "operator": "add", "value": ["-q"]}
    )
    (container,) = _pod_spec(manifest, path)["containers"]
    assert container == {
        "name": "myapp",
        "image": "test-repo/myapp:1.0.0",
        "command": ["/entrypoint.sh"],
        "args": ["-v", "-q"],
    }


def test_a_cronjob_is_not_rewritten_without_a_predicate_as_in_karmada() -> None:
    """Karmada's imageOverrider and command/args overriders leave a CronJob's jobTemplate
    alone (no case for it in overridemanager); a predicate path reaches it."""
    path = ("spec", "jobTemplate", "spec", "template", "spec")
    cronjob = _workload("CronJob", path)
    op = {"component": "Tag", "operator": "replace", "value": "2.0.0"}
    overrides.apply(cronjob, "imageOverrider", op)
    assert _pod_spec(cronjob, path)["containers"][0]["image"] == "myapp:1.0.0"
    pointer = "/spec/jobTemplate/spec/template/spec/containers/0/image"
    overrides.apply(cronjob, "imageOverrider", {**op, "predicate": {"path": pointer}})
    assert _pod_spec(cronjob, path)["containers"][0]["image"] == "myapp:2.0.0"


KARMADA_DIGEST = "sha256:dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9c"


@pytest.mark.parametrize(
    ("image", "operator", "value", "expected"),
    [
        # Karmada's pkg/util/overridemanager/imageoverride_test.go, "component: Tag,
        # operator: replace" with a digest value
        (
            "fictional.registry.example/imagename:v1.0.0",
            "replace",
            KARMADA_DIGEST,
            f"fictional.registry.example/imagename@{KARMADA_DIGEST}",
        ),
        # a digest replaced by a tag, and a digest removed
        (f"nginx@{KARMADA_DIGEST}", "replace", "1.27", "nginx:1.27"),
        (f"nginx@{KARMADA_DIGEST}", "remove", "", "nginx"),
        ("nginx:1.27", "add", "-alpine", "nginx:1.27-alpine"),
    ],
)
def test_a_tag_override_with_a_digest_writes_name_at_digest(
    image: str, operator: str, value: str, expected: str
) -> None:
    pod = {"kind": "Pod", "spec": {"containers": [{"name": "c", "image": image}]}}
    overrides.apply(
        pod, "imageOverrider", {"component": "Tag", "operator": operator, "value": value}
    )
    assert pod["spec"]["containers"][0]["image"] == expected


def test_a_tag_value_that_is_neither_tag_nor_digest_is_an_error() -> None:
    """Karmada would silently keep the old tag (SetTagOrDigest); dro says so at validate."""
    pod = {"kind": "Pod", "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}
    with pytest.raises(overrides.OverrideError, match="neither a tag"):
        overrides.apply(
            pod, "imageOverrider", {"component": "Tag", "operator": "replace", "value": "a b"}
        )
