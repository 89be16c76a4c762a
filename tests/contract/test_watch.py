"""WATCH through the official client's `watch.Watch`: the emulator streams a collection's
changes as the apiserver does; `make e2e` runs these against a real cluster too (the
emulator-only ones, bookmarks, 410 Gone and a stopping server, are in `test_emulator`)."""

from __future__ import annotations

from collections.abc import Callable

from kubernetes import client

from tests.contract.watching import OURS, events, ours, seen


def test_a_watch_without_a_version_lists_then_follows(
    core: client.CoreV1Api, make_namespace: Callable[[], str]
) -> None:
    namespace = make_namespace()
    core.create_namespaced_config_map(namespace, ours("a"))
    stream = events(core, namespace)
    assert seen(next(stream)) == ("ADDED", "a")
    core.create_namespaced_config_map(namespace, ours("b"))
    core.patch_namespaced_config_map("a", namespace, {"data": {"k": "w"}})
    core.delete_namespaced_config_map("b", namespace)
    got = [next(stream) for _ in range(3)]
    assert [seen(e) for e in got] == [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    assert got[1]["object"]["data"] == {"k": "w"}
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in got]
    assert versions == sorted(versions)


def test_a_watch_from_a_version_sends_only_later_changes(
    core: client.CoreV1Api, make_namespace: Callable[[], str]
) -> None:
    namespace = make_namespace()
    created = core.create_namespaced_config_map(namespace, ours("a"))
    core.create_namespaced_config_map(namespace, ours("b"))
    core.patch_namespaced_config_map("a", namespace, {"data": {"k": "w"}})
    stream = events(core, namespace, resource_version=created.metadata.resource_version)
    assert seen(next(stream)) == ("ADDED", "b")
    assert seen(next(stream)) == ("MODIFIED", "a")


def test_an_object_entering_or_leaving_the_selection_is_added_or_deleted(
    core: client.CoreV1Api, make_namespace: Callable[[], str]
) -> None:
    namespace = make_namespace()
    stream = events(core, namespace, label_selector=f"{OURS},team=blue")
    core.create_namespaced_config_map(namespace, ours("other", {"team": "red"}))
    core.create_namespaced_config_map(namespace, ours("mine", {"team": "blue"}))
    assert seen(next(stream)) == ("ADDED", "mine")
    core.patch_namespaced_config_map("other", namespace, {"metadata": {"labels": {"team": "blue"}}})
    assert seen(next(stream)) == ("ADDED", "other")
    core.patch_namespaced_config_map("mine", namespace, {"metadata": {"labels": {"team": "red"}}})
    assert seen(next(stream)) == ("DELETED", "mine")
