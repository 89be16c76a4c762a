"""`dro diff` against three emulated clusters: rendered (as the next pass would apply it) vs
live, as a unified diff per object or one JSON document; exit 0 when nothing differs, 2 when
something does, 1 on errors. Secret values are never printed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler import cli
from tests.livefleet import Fleet, deployment, running_fleet

SECRET = """apiVersion: v1
kind: Secret
metadata: {name: web, namespace: shop}
data: {password: aHVudGVyMg==}
"""


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    with running_fleet(tmp_path) as running:
        running.reconcile()
        yield running


def diff(fleet: Fleet, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    """`dro diff --repo … --kubeconfig …` with `extra` flags: (exit code, stdout, stderr)."""
    capsys.readouterr()
    args = ["diff", "--repo", str(fleet.repo.bare), "--state-dir", str(fleet.settings.state_dir)]
    args += ["--kubeconfig", str(fleet.settings.kubeconfig), *extra]
    code = cli.main(args)
    out, err = capsys.readouterr()
    return code, out, err


def edit_greeting(fleet: Fleet, cluster: str, value: str) -> None:
    live = fleet.live(cluster, "ConfigMap", "web")
    live["data"]["greeting"] = value
    fleet.apis[cluster].put(live)


def test_nothing_differs_after_a_pass(fleet: Fleet, capsys: pytest.CaptureFixture[str]) -> None:
    fleet.reset_counters()
    code, out, _ = diff(fleet, capsys)
    assert (code, out) == (0, "")
    assert fleet.writes() == 0, "a dry run writes nothing"
    code, out, _ = diff(fleet, capsys, "-o", "json")
    document = json.loads(out)
    assert code == 0
    assert document["differences"] == 0
    assert [c["name"] for c in document["clusters"]] == ["a", "b", "c"]


def test_a_live_edit_is_a_unified_diff_and_exit_2(
    fleet: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    edit_greeting(fleet, "b", "hacked")
    code, out, _ = diff(fleet, capsys)
    assert code == 2
    lines = out.splitlines()
    assert lines[:3] == [
        "diff -u -N live/b/v1.ConfigMap.shop.web rendered/b/v1.ConfigMap.shop.web",
        "--- live/b/v1.ConfigMap.shop.web",
        "+++ rendered/b/v1.ConfigMap.shop.web",
    ]
    assert "-  greeting: hacked" in lines
    assert "+  greeting: hello" in lines
    assert not any(line.startswith(("-", "+")) and "resourceVersion" in line for line in lines)
    code, out, _ = diff(fleet, capsys, "-o", "json", "--cluster", "b")
    assert code == 2
    document = json.loads(out)
    assert document["differences"] == 1
    (cluster,) = document["clusters"]
    assert cluster["name"] == "b"
    assert cluster["objects"] == [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "namespace": "shop",
            "name": "web",
            "state": "modified",
            "changes": [{"pointer": "/data/greeting", "live": "hacked", "rendered": "hello"}],
        }
    ]
    code, out, _ = diff(fleet, capsys, "--cluster", "a")
    assert (code, out) == (0, ""), "only the cluster asked for is compared"


def test_missing_and_no_longer_rendered_objects_differ(
    fleet: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    web = (fleet.repo.work / "workloads/web.yaml").read_text()
    fleet.repo.write(
        {
            "workloads/web.yaml": web.rsplit("---", 1)[0],  # the ConfigMap goes
            "workloads/api.yaml": deployment("api", 3),
        }
    )
    fleet.repo.commit("api in, the ConfigMap out")
    code, out, _ = diff(fleet, capsys, "-o", "json")
    assert code == 2
    states: dict[str, Any] = {}
    for cluster in json.loads(out)["clusters"]:
        for obj in cluster["objects"]:
            states.setdefault((obj["kind"], obj["name"]), set()).add(obj["state"])
    assert states[("Deployment", "api")] == {"missing"}
    assert states[("ConfigMap", "web")] == {"extra"}
    code, text, _ = diff(fleet, capsys, "--cluster", "a")
    assert "+++ rendered/a/apps.v1.Deployment.shop.api" in text
    assert "--- live/a/v1.ConfigMap.shop.web" in text
    fleet.reconcile()
    assert diff(fleet, capsys)[0] == 0, "once applied, nothing differs"


def test_secret_values_are_never_printed(fleet: Fleet, capsys: pytest.CaptureFixture[str]) -> None:
    fleet.repo.write({"workloads/secret.yaml": SECRET})
    fleet.repo.commit("a Secret")
    fleet.reconcile()
    live = fleet.apis["c"].get("", "v1", "secrets", "shop", "web")
    live["data"] = {"password": "aGFja2Vk", "extra": "aGFja2Vk"}
    fleet.apis["c"].put(live)
    for output in ("text", "json"):
        code, out, err = diff(fleet, capsys, "-o", output)
        assert code == 2
        assert "aGFja2Vk" not in out + err
        assert "aHVudGVyMg" not in out + err
        assert "<redacted: live value>" in out
        assert "<redacted: rendered value>" in out


def test_errors_exit_1(fleet: Fleet, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = diff(fleet, capsys, "--cluster", "nope")
    assert (code, out) == (1, "")
    assert "--cluster nope: no such cluster in the source (clusters: a, b, c)" in err
    capsys.readouterr()
    assert cli.main(["diff", "--repo", str(fleet.repo.bare)]) == 1
    assert "diff needs --kubeconfig" in capsys.readouterr().err
    edit_greeting(fleet, "a", "hacked")
    fleet.apis["b"].fail_next(count=100, status=500)
    code, out, err = diff(fleet, capsys)
    assert code == 1, "an unreachable cluster is an error, even beside a difference"
    assert "--- live/a/v1.ConfigMap.shop.web" in out
    assert any(line.startswith("b: ") for line in err.splitlines()), err


def test_an_object_dro_did_not_create_is_unowned(
    fleet: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    legacy = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "legacy", "namespace": "shop"},
        "data": {"mode": "old"},
    }
    fleet.apis["a"].put(legacy)
    rendered = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: legacy, namespace: shop}\n"
    fleet.repo.write({"workloads/legacy.yaml": rendered + "data: {mode: new}\n"})
    fleet.repo.commit("manage legacy")
    code, out, _ = diff(fleet, capsys, "-o", "json")
    assert code == 2
    states = {
        cluster["name"]: [o["state"] for o in cluster["objects"] if o["name"] == "legacy"]
        for cluster in json.loads(out)["clusters"]
    }
    assert states == {"a": ["unowned"], "b": ["missing"], "c": ["missing"]}
