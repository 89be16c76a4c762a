"""A trace's series files: usage and replicas CSVs and Prometheus range-query exports are read
into per-step arrays, forward-filled, with every bad row reported at its FILE:LINE."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.domain import Origin
from reconciler.errors import ValidationFailed
from reconciler.kube import quantity
from reconciler.simulate import series

START, STEP = 1_736_121_600.0, 3600.0


def _usage(tmp_path: Path, text: str, steps: int = 6) -> dict[str, dict[str, np.ndarray]]:
    (tmp_path / "usage.csv").write_text(text)
    return series.load_usage({"csv": "usage.csv"}, tmp_path, steps=steps, start=START, step=STEP)


def _problems(call: object) -> list[str]:
    with pytest.raises(ValidationFailed) as failed:
        call()  # type: ignore[operator]
    return [str(problem) for problem in failed.value.problems]


def _reference(rows: list[tuple[int, int]], steps: int) -> list[float]:
    """Forward fill written the plain way: each step takes the latest row at or before it."""
    out, current = [], math.nan
    values = dict(rows)
    for t in range(steps):
        current = values.get(t, current)
        out.append(current)
    return out


def test_usage_forward_fills_and_is_nan_before_the_first_value(tmp_path: Path) -> None:
    got = _usage(
        tmp_path,
        "step,cluster,resource,value\n2,eu-1,cpu,10\n4,eu-1,cpu,3\n0,us-1,cpu,7\n",
    )
    assert sorted(got) == ["eu-1", "us-1"]
    eu = got["eu-1"]["cpu"]
    assert np.isnan(eu[:2]).all()
    assert eu[2:].tolist() == [10.0, 10.0, 3.0, 3.0]
    assert got["us-1"]["cpu"].tolist() == [7.0] * 6


def test_usage_values_are_kubernetes_quantities_in_base_units(tmp_path: Path) -> None:
    texts = ["250m", "1.5Gi", "2G", "1e3", "96", "0.1Mi", "+3Ki", "12.5"]
    rows = "".join(f"{t},c,r{t_i},{text}\n" for t_i, (t, text) in enumerate(enumerate(texts)))
    got = _usage(tmp_path, "step,cluster,resource,value\n" + rows, steps=len(texts))
    for i, text in enumerate(texts):
        assert got["c"][f"r{i}"][-1] == float(quantity.parse_quantity(text)), text


def test_columns_in_any_order_blank_lines_spaces_and_rows_past_the_end(tmp_path: Path) -> None:
    got = _usage(
        tmp_path,
        "\ufeffvalue,resource,step,cluster\n5, memory ,1, a\n\n9,memory,40,a\n",
        steps=3,
    )
    assert np.isnan(got["a"]["memory"][0])
    assert got["a"]["memory"][1:].tolist() == [5.0, 5.0]


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 30),
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 10**6)), max_size=30),
)
def test_forward_fill_matches_a_plain_loop(steps: int, rows: list[tuple[int, int]]) -> None:
    unique = list(dict(rows).items())  # one value per step
    with tempfile.TemporaryDirectory() as tmp:
        text = "step,workload,replicas\n" + "".join(f"{t},ns/Deployment/w,{v}\n" for t, v in unique)
        path = Path(tmp) / "replicas.csv"
        path.write_text(text)
        got = series.load_replicas(path, steps=steps)
    inside = [(t, v) for t, v in unique if t < steps]
    if not inside:
        assert got == {}
        return
    expected = [-1 if math.isnan(v) else int(v) for v in _reference(inside, steps)]
    assert got["ns/Deployment/w"].tolist() == expected


def test_replicas_are_minus_one_before_their_first_value(tmp_path: Path) -> None:
    path = tmp_path / "replicas.csv"
    path.write_text(
        "step,workload,replicas\n3,shop/Deployment/web,14\n1,shop/Deployment/web,2\n"
        "5,shop/Deployment/web,0\n0,batch/Job.batch/nightly,1\n"
    )
    got = series.load_replicas(path, steps=7)
    assert list(got) == ["batch/Job.batch/nightly", "shop/Deployment/web"]
    assert got["shop/Deployment/web"].tolist() == [-1, 2, 2, 14, 14, 0, 0]
    assert got["shop/Deployment/web"].dtype == np.int64
    assert got["batch/Job.batch/nightly"].tolist() == [1] * 7


def _export(result: list[object]) -> str:
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})


def test_prometheus_takes_the_last_sample_at_or_before_each_step(tmp_path: Path) -> None:
    t0 = START
    result = [
        {
            "metric": {"k8s_cluster": "eu-1", "job": "kubelet"},
            # out of order on purpose; one sample before the trace starts
            "values": [[t0 + 7200, "3"], [t0 - 60, "1.5"], [t0 + 3599, "2.25"]],
        },
        {"metric": {"k8s_cluster": "us-1"}, "values": [[t0 + 3600 * 3, "4e9"]]},
    ]
    (tmp_path / "mem.json").write_text(_export(result))
    spec = {
        "prometheus": [{"file": "mem.json", "resource": "memory", "clusterLabel": "k8s_cluster"}]
    }
    got = series.load_usage(spec, tmp_path, steps=5, start=START, step=STEP)
    assert got["eu-1"]["memory"].tolist() == [1.5, 2.25, 3.0, 3.0, 3.0]
    us = got["us-1"]["memory"]
    assert np.isnan(us[:3]).all()
    assert us[3:].tolist() == [4e9, 4e9]


def test_promtool_s_bare_list_of_series_reads_the_same(tmp_path: Path) -> None:
    result = [
        {"metric": {"cluster": "eu-1"}, "values": [[START, "2"], [START + 3600, "5"]]},
        {"metric": {"cluster": "us-1"}, "values": [[START + 3600, "1"], [START + 7200, 7]]},
    ]
    (tmp_path / "answer.json").write_text(_export(result))
    (tmp_path / "promtool.json").write_text(json.dumps(result))

    def read(name: str) -> dict[str, list[float]]:
        spec = {"prometheus": [{"file": name, "resource": "cpu"}]}
        got = series.load_usage(spec, tmp_path, steps=3, start=START, step=STEP)
        return {cluster: by["cpu"].tolist() for cluster, by in got.items()}

    assert json.dumps(read("promtool.json")) == json.dumps(read("answer.json"))
    assert read("answer.json")["eu-1"] == [2.0, 5.0, 5.0]
    assert read("answer.json")["us-1"][1:] == [1.0, 7.0]
    (tmp_path / "promtool.json").write_text(json.dumps([{"metric": {}, "values": []}]))
    assert _problems(lambda: read("promtool.json")) == [
        f"{tmp_path}/promtool.json:1: /0/metric: no 'cluster' label: name the cluster label "
        "with clusterLabel"
    ]


def test_csv_and_prometheus_combine_and_may_not_overlap(tmp_path: Path) -> None:
    (tmp_path / "usage.csv").write_text("step,cluster,resource,value\n0,eu-1,memory,1Gi\n")
    (tmp_path / "cpu.json").write_text(
        _export([{"metric": {"cluster": "eu-1"}, "values": [[START, "12"]]}])
    )
    spec = {"csv": "usage.csv", "prometheus": [{"file": "cpu.json", "resource": "cpu"}]}
    got = series.load_usage(spec, tmp_path, steps=2, start=START, step=STEP)
    assert got["eu-1"]["cpu"].tolist() == [12.0, 12.0]
    assert got["eu-1"]["memory"].tolist() == [2.0**30] * 2

    spec["prometheus"].append({"file": "cpu.json", "resource": "memory"})  # type: ignore[attr-defined]
    assert _problems(
        lambda: series.load_usage(spec, tmp_path, steps=2, start=START, step=STEP)
    ) == [
        f"{tmp_path}/cpu.json:1: /data/result/0/metric/cluster: memory of cluster 'eu-1' is "
        f"already given at {tmp_path}/usage.csv:2"
    ]


def test_bad_csv_rows_are_reported_at_their_lines(tmp_path: Path) -> None:
    text = (
        "step,cluster,resource,value\n"
        "0,eu-1,cpu,10\n"
        "x,eu-1,cpu,5\n"
        "1,EU_1,cpu,2cores\n"
        "0,eu-1,cpu,3\n"
        "2,eu-1\n"
        "3,eu-1,cpu,-1\n"
        "4,eu-1,c p u,1\n"
    )
    problems = _problems(lambda: _usage(tmp_path, text))
    csv_path = f"{tmp_path}/usage.csv"
    assert problems == [
        f"{csv_path}:3: /step: step 'x' is not a whole number >= 0",
        f"{csv_path}:4: /cluster: 'EU_1' is not a cluster name (lowercase DNS-1123)",
        f"{csv_path}:4: /value: '2cores' is not a Kubernetes quantity (did you mean '2'?)",
        f"{csv_path}:5: /step: a value for this step, cluster and resource is already given "
        "on line 2",
        f"{csv_path}:6: /: 2 fields; expected 4: step,cluster,resource,value",
        f"{csv_path}:7: /value: '-1' is not a finite amount >= 0",
        f"{csv_path}:8: /resource: 'c p u' is not a resource name (cpu, memory …)",
    ]


def test_bad_replicas_rows_and_headers(tmp_path: Path) -> None:
    path = tmp_path / "replicas.csv"
    path.write_text(
        "step,workload,replicas\n0,web,3\n1,shop/Deployment/web,2.5\n-1,shop/Deployment/web,1\n"
    )
    assert _problems(lambda: series.load_replicas(path, steps=4)) == [
        f"{path}:2: /workload: 'web' is not a workload: namespace/Kind/name (shop/Deployment/web)",
        f"{path}:3: /replicas: replicas '2.5' is not a whole number >= 0",
        f"{path}:4: /step: step '-1' is not a whole number >= 0",
    ]
    path.write_text("step,deployment,replicas\n")
    assert _problems(lambda: series.load_replicas(path, steps=4)) == [
        f"{path}:1: /: header is 'step,deployment,replicas'; expected "
        "'step,workload,replicas' (in any order)"
    ]


def test_a_file_wrong_on_every_row_is_reported_once_with_a_count(tmp_path: Path) -> None:
    rows = "".join(f"{t},c,cpu,{t}cores\n" for t in range(500))
    problems = _problems(lambda: _usage(tmp_path, "step,cluster,resource,value\n" + rows))
    assert len(problems) == series.cells.MAX_PROBLEMS + 1
    assert problems[-1].endswith(f"… and {500 - series.cells.MAX_PROBLEMS} more problems")


def test_bad_prometheus_exports_point_at_the_series(tmp_path: Path) -> None:
    path = tmp_path / "cpu.json"
    path.write_text(
        '{"status": "success", "data": {"resultType": "matrix", "result": [\n'
        '  {"metric": {"cluster": "c1"},\n'
        '   "values": [[100, "1.5"],\n'
        '              [200, "NaN"]]},\n'
        '  {"metric": {"instance": "c2"}, "values": [[50, "7"]]},\n'
        '  {"metric": {"cluster": "c1"}, "values": [[50, "7"]]},\n'
        '  {"metric": {"cluster": "c3"}, "values": [[50]]}\n'
        "]}}\n"
    )
    spec = {"prometheus": [{"file": "cpu.json", "resource": "cpu"}]}
    assert _problems(lambda: series.load_usage(spec, tmp_path, steps=2, start=0, step=60)) == [
        f"{path}:4: /data/result/0/values/1: 'NaN' at 200 is not an amount >= 0",
        f"{path}:5: /data/result/1/metric: no 'cluster' label: name the cluster label with "
        "clusterLabel",
        f"{path}:6: /data/result/2/metric/cluster: a second series for cluster 'c1' (the first "
        "is on line 2); aggregate by 'cluster', e.g. sum by (cluster) (…)",
        f'{path}:7: /data/result/3/values/0: expected [unix time, "value"]',
    ]
    path.write_text(
        json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}})
    )
    assert _problems(lambda: series.load_usage(spec, tmp_path, steps=2, start=0, step=60)) == [
        f"{path}:1: /data/resultType: resultType is 'vector': export a range query (a matrix)"
    ]
    path.write_text('{"status": "success",\n "data": {')
    assert _problems(lambda: series.load_usage(spec, tmp_path, steps=2, start=0, step=60)) == [
        f"{path}:2: /: not a Prometheus JSON export: Expecting property name enclosed in "
        "double quotes"
    ]


def test_problems_with_the_trace_itself_point_at_the_trace(tmp_path: Path) -> None:
    origin = Origin(
        path="trace.yaml",
        line=1,
        lines={"/spec/usage": 9, "/spec/usage/csv": 10, "/spec/usage/prometheus/0": 12},
    )

    def load(spec: dict[str, object]) -> list[str]:
        call = lambda: series.load_usage(  # noqa: E731
            spec, tmp_path, steps=1, start=0, step=60, origin=origin
        )
        return _problems(call)

    assert load({"csv": "missing.csv"}) == [
        f"trace.yaml:10: /spec/usage/csv: no such file: {tmp_path}/missing.csv"
    ]
    assert load({"prometheus": [{"file": "x.json"}]}) == [
        "trace.yaml:12: /spec/usage/prometheus/0: resource is required (cpu, memory …)"
    ]
    assert load({"cvs": "usage.csv"}) == [
        "trace.yaml:9: /spec/usage/cvs: unknown key (expected csv or prometheus)"
    ]
    assert _problems(lambda: series.load_replicas(tmp_path / "r.csv", steps=1, origin=origin)) == [
        f"trace.yaml:1: /spec/replicas/csv: no such file: {tmp_path}/r.csv"
    ]


_NUMBERS = st.from_regex(r"\A[+-]?([0-9]{1,6}(\.[0-9]{0,4})?|\.[0-9]{1,4})([eE][+-]?[0-9]{1,3})?\Z")
_TEXTS = st.one_of(
    _NUMBERS,
    st.tuples(
        _NUMBERS, st.sampled_from(["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "m", "k", "M", "E"])
    ).map("".join),
    st.sampled_from(["", ".", "e5", "1E", "1_000", "nan", "inf", "2cores", "1e3Mi", "0x10"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXTS, max_size=12))
def test_amounts_at_once_equal_amount_one_by_one(texts: list[str]) -> None:
    at_once = series.cells.amounts(texts)
    one_by_one = series.cells.each(series.cells.amount)(texts)
    assert at_once[1] == one_by_one[1]
    good = [i for i in range(len(texts)) if i not in one_by_one[1]]
    assert [at_once[0][i] for i in good] == [one_by_one[0][i] for i in good]
    for i in good:  # and both are Kubernetes' value
        assert one_by_one[0][i] == float(quantity.parse_quantity(texts[i]))
