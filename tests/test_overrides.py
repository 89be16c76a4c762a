"""Override operations, table by table: fieldPatch paths, plaintext, images, lists, maps."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from reconciler import overrides

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
                    {"name": "side", "image": "gcr.io/proj/side@sha256:abc"},
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
        ("nginx", ("", "nginx", "")),
        ("nginx:1.25", ("", "nginx", ":1.25")),
        ("library/nginx:1", ("", "library/nginx", ":1")),
        ("docker.io/library/nginx:1", ("docker.io", "library/nginx", ":1")),
        ("localhost/app", ("localhost", "app", "")),
        ("registry:5000/team/app:2@sha256:ff", ("registry:5000", "team/app", ":2@sha256:ff")),
    ],
)
def test_image_references_split_like_docker(image: str, parts: tuple[str, str, str]) -> None:
    assert overrides.split_image(image) == parts
    assert overrides.join_image(*parts) == image


@pytest.mark.parametrize(
    ("op", "images"),
    [
        (
            {"component": "Registry", "operator": "replace", "value": "mirror.io"},
            ["mirror.io/nginx:1.25", "mirror.io/proj/side@sha256:abc"],
        ),
        (
            {"component": "Registry", "operator": "add", "value": "-eu"},
            ["-eu/nginx:1.25", "gcr.io-eu/proj/side@sha256:abc"],
        ),
        (
            {"component": "Tag", "operator": "replace", "value": "2.0"},
            ["nginx:2.0", "gcr.io/proj/side:2.0"],
        ),
        (
            {"component": "Repository", "operator": "replace", "value": "base"},
            ["base:1.25", "gcr.io/base@sha256:abc"],
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
