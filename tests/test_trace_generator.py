"""bench/traces/diurnal.py: the seeded diurnal trace for `dro simulate` is the same bytes for
the same seed, its source repo validates, and it holds what the issue asks for."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from bench.traces import diurnal
from bench.traces import diurnal_load as load_model
from reconciler import errors, load, validate
from reconciler.kube import quantity
from reconciler.simulate import series

ROOT = Path(__file__).resolve().parents[1]


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("small") / "trace"
    assert diurnal.main([str(out), "--small", "--no-prediction"]) == 0
    return out


def _spec(repo: Path) -> object:
    try:
        return validate.spec(load.from_directory(repo))
    except errors.ValidationFailed as failed:  # show every problem, not only a count
        pytest.fail("\n".join(str(p) for p in failed.problems))


def test_the_same_seed_gives_the_same_bytes(tmp_path: Path, small: Path) -> None:
    again = tmp_path / "again"
    assert diurnal.main([str(again), "--small", "--no-prediction"]) == 0
    assert _files(again) == _files(small)
    other = tmp_path / "other"
    assert diurnal.main([str(other), "--small", "--no-prediction", "--seed", "8"]) == 0
    assert _files(other)["usage.csv"] != _files(small)["usage.csv"]


def test_the_small_trace_validates_with_the_joining_cluster_too(
    tmp_path: Path, small: Path
) -> None:
    spec = _spec(small / "repo")
    assert len(spec.clusters) == 8  # type: ignore[attr-defined]
    repo = tmp_path / "repo"
    shutil.copytree(small / "repo", repo)
    for extra in (small / "extra").glob("*.yaml"):
        shutil.copy(extra, repo / "clusters" / extra.name)
    assert len(_spec(repo).clusters) == 9  # type: ignore[attr-defined]


def test_prediction_is_on_by_default(tmp_path: Path) -> None:
    out = tmp_path / "trace"
    assert diurnal.main([str(out), "--small", "--step", "10m"]) == 0
    config = yaml.safe_load((out / "repo" / "dro.yaml").read_text())
    assert config["spec"]["prediction"] == {
        "enabled": True,
        "horizon": "2h",
        "window": "7d",
        "step": "10m",
    }
    schema = json.loads((ROOT / "schemas" / "schedulerconfiguration.json").read_text())
    if "prediction" not in schema["properties"]["spec"]["properties"]:
        pytest.skip("dro.yaml has no spec.prediction yet: the trace validates with --no-prediction")
    _spec(out / "repo")


def test_the_trace_document_names_its_files_and_events(small: Path) -> None:
    trace = yaml.safe_load((small / "trace.yaml").read_text())
    spec = trace["spec"]
    assert (trace["apiVersion"], trace["kind"]) == ("multicluster.io/v1alpha1", "Trace")
    assert (spec["source"], spec["step"], spec["steps"]) == ("repo", "1h", 48)
    for entry in (spec["usage"], spec["replicas"]):
        assert (small / entry["csv"]).is_file()
    drains = [e for e in spec["events"] if "clusters" in e]
    (added,) = [e for e in spec["events"] if "add" in e]
    assert [next(iter(e["clusters"].values())) for e in drains] == [
        {"drain": True},
        {"drain": False},
    ]
    assert 0 < drains[0]["step"] < added["step"] < 48
    assert drains[1]["step"] - drains[0]["step"] == 12
    (path,) = added["add"]
    joining = yaml.safe_load((small / path).read_text())
    assert not (small / "repo" / "clusters" / Path(path).name).exists()
    assert joining["kind"] == "Cluster"


def _clusters(folder: Path) -> list[dict]:
    return [yaml.safe_load(p.read_text()) for p in sorted(folder.glob("*.yaml"))]


@pytest.mark.parametrize(
    ("flags", "clusters", "workloads", "steps"),
    [(["--small"], 8, 40, 48), ([], 100, 2000, 168)],
)
def test_counts_regions_providers_prices_and_sizes(
    tmp_path: Path, flags: list[str], clusters: int, workloads: int, steps: int
) -> None:
    out = tmp_path / "trace"
    assert diurnal.main([str(out), "--no-prediction", *flags]) == 0
    fleet = _clusters(out / "repo" / "clusters")
    assert len(fleet) == clusters
    assert len(_clusters(out / "extra")) == 1
    labels = [c["metadata"]["labels"] for c in fleet]
    assert {x["region"] for x in labels} == set(load_model.REGIONS)
    assert {x["provider"] for x in labels} == set(load_model.PROVIDERS)
    cores = np.array([float(quantity.parse_quantity(c["spec"]["capacity"]["cpu"])) for c in fleet])
    memory = np.array(
        [float(quantity.parse_quantity(c["spec"]["capacity"]["memory"])) for c in fleet]
    )
    assert cores.min() >= 64
    assert cores.max() <= 256
    assert (memory == cores * 4 * 2**30).all()
    # Providers differ in price by 10–30 % in the same region.
    by = {
        (x["region"], x["provider"]): c["spec"]["cost"]["cpu"]
        for x, c in zip(labels, fleet, strict=True)
    }
    for region in load_model.REGIONS:
        here = [by[region, p] for p in load_model.PROVIDERS if (region, p) in by]
        if len(here) > 1:
            assert 1.10 <= max(here) / min(here) <= 1.30

    docs = [
        d
        for p in (out / "repo" / "workloads").rglob("*.yaml")
        for d in yaml.load_all(p.read_text(), Loader=yaml.CSafeLoader)
    ]
    assert len(docs) == workloads
    patterns = [d["metadata"]["labels"]["pattern"] for d in docs]
    assert {p: patterns.count(p) for p in set(patterns)} == {
        "web": workloads * 8 // 10,
        "burst": workloads // 10,
        "batch": workloads // 10,
    }
    policies = list(yaml.safe_load_all((out / "repo" / "policies" / "placement.yaml").read_text()))
    divisions = {
        p["metadata"]["name"]: p["spec"]["placement"]["replicaScheduling"]["division"]
        for p in policies
    }
    assert divisions == {
        **{f"web-{r}": "DynamicWeight" for r in load_model.REGIONS},
        "batch": "Aggregated",
    }
    assert yaml.safe_load((out / "trace.yaml").read_text())["spec"]["steps"] == steps


def test_series_follow_the_local_day_and_read_back(small: Path) -> None:
    spec = yaml.safe_load((small / "trace.yaml").read_text())["spec"]
    start = load_model.START
    usage = series.load_usage(spec["usage"], small, steps=48, start=start, step=3600.0)
    fleet = {c["metadata"]["name"]: c for c in _clusters(small / "repo" / "clusters")}
    (joining,) = _clusters(small / "extra")
    (added,) = [e for e in spec["events"] if "add" in e]
    name = joining["metadata"]["name"]
    assert np.isnan(usage[name]["cpu"][: added["step"]]).all()
    assert not np.isnan(usage[name]["cpu"][added["step"] :]).any()
    hours = np.arange(48)
    for cluster, doc in fleet.items():
        cpu = usage[cluster]["cpu"]
        capacity = float(quantity.parse_quantity(doc["spec"]["capacity"]["cpu"]))
        allocated = float(quantity.parse_quantity(doc["spec"]["allocated"]["cpu"]))
        assert cpu[0] == pytest.approx(allocated, abs=1e-3)  # step 0 is the repo's figure
        share = cpu / capacity
        assert share.min() >= 0.25 - 1e-9
        assert share.max() <= 0.97 + 1e-9
        offset = load_model.OFFSETS[load_model.REGIONS.index(doc["metadata"]["labels"]["region"])]
        day = load_model.daylight(hours + offset)
        assert np.corrcoef(share, day)[0, 1] > 0.6, cluster

    replicas = series.load_replicas(small / spec["replicas"]["csv"], steps=48)
    docs = {
        f"{d['metadata']['namespace']}/Deployment/{d['metadata']['name']}": d
        for p in (small / "repo" / "workloads").rglob("*.yaml")
        for d in yaml.load_all(p.read_text(), Loader=yaml.CSafeLoader)
    }
    assert set(replicas) <= set(docs)
    for key, doc in docs.items():
        over_time = replicas.get(key, np.full(48, -1))
        over_time = np.where(over_time < 0, doc["spec"]["replicas"], over_time)
        assert (over_time >= 1).all()
        labels = doc["metadata"]["labels"]
        if labels["pattern"] == "web":
            offset = load_model.OFFSETS[load_model.REGIONS.index(labels["home"])]
            assert np.corrcoef(over_time, load_model.daylight(hours + offset))[0, 1] > 0.8, key


def test_prometheus_exports_read_back_as_the_usage_csv_does(tmp_path: Path, small: Path) -> None:
    out = tmp_path / "trace"
    assert diurnal.main([str(out), "--small", "--no-prediction", "--usage", "prometheus"]) == 0
    assert not (out / "usage.csv").exists()
    assert (out / "replicas.csv").read_bytes() == (small / "replicas.csv").read_bytes()

    def usage(folder: Path) -> dict[str, dict[str, list[float]]]:
        spec = yaml.safe_load((folder / "trace.yaml").read_text())["spec"]
        read = series.load_usage(spec["usage"], folder, steps=48, start=load_model.START, step=3600)
        return {c: {r: v.tolist() for r, v in by.items()} for c, by in read.items()}

    from_csv = usage(small)
    assert len(from_csv) == 9
    assert json.dumps(usage(out), sort_keys=True) == json.dumps(from_csv, sort_keys=True)


def test_an_existing_folder_is_never_written_into(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    assert diurnal.main([str(tmp_path), "--small"]) == 1
    assert "exists and is not an empty folder" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--step", "7m"], "--step 7m does not divide a day"),
        (["--step", "1x"], "not a duration: '1x'"),
        (["--days", "0"], "the trace needs at least 2 steps"),
        (["--tightness", "2"], "--tightness must be in (0, 1]"),
    ],
)
def test_bad_options_exit_1_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], said: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        diurnal.main([str(tmp_path / "out"), *flags])
    assert exited.value.code == 1
    assert said in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
