"""A trace's series: cluster usage and workload replicas over the steps of a `dro simulate` run.

A trace (`kind: Trace`) names its series in files beside it:

- usage, the background load of each cluster per resource (load dro does not place), from a CSV
  with the header `step,cluster,resource,value` (a value is a Kubernetes quantity or a plain
  number, in base units: cores, bytes) or from Prometheus range-query JSON exports (`data.result[]`
  with the cluster in a label, `values: [[unix, "v"], …]`; a step takes the last sample at or
  before its time);
- replicas, the desired replicas of each workload, from a CSV with the header
  `step,workload,replicas` (a workload is `namespace/Kind/name`).

Series are forward-filled: a value holds until the next one. Before its first value a usage
series is NaN and a replicas series is −1, so the caller keeps the source repo's figure there.
Rows for steps at or past the trace's `steps` are ignored (a trace may be cut short); a bad row
is a `Problem` at its FILE:LINE, all of a file's problems raised at once (the first
`MAX_PROBLEMS`, then a count). Columns may come in any order; blank lines are skipped.

The work is numpy: each distinct text of a column is checked and parsed once, and the series are
filled as one (series × steps) array; a file without quotes is split in one go, and plain
numbers (and binary suffixes) are read by one float() pass. The 7-day trace at 10-minute steps
(100 clusters × 2 resources × 1,008 steps, 202,508 rows) reads in about 0.6 s.

Called by `simulate.trace`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from reconciler.domain import Origin
from reconciler.errors import Problem, ValidationFailed
from reconciler.simulate import cells, csvtable, prometheus

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

USAGE_COLUMNS = ("step", "cluster", "resource", "value")
REPLICAS_COLUMNS = ("step", "workload", "replicas")


def load_usage(
    spec_usage: Mapping[str, Any],
    base: Path,
    *,
    steps: int,
    start: float,
    step: float,
    origin: Origin | None = None,
) -> dict[str, dict[str, FloatArray]]:
    """Cluster → resource → (steps,) background usage in base units, NaN before its first value.

    `spec_usage` is the trace's `spec.usage` (`csv: FILE` and/or `prometheus: [{file, resource,
    clusterLabel}]`), its files relative to `base`; step k is at `start + k × step` (seconds).
    `origin`, where the trace was read, locates problems with `spec.usage` itself. Raises
    `ValidationFailed` with every problem found. Clusters and resources come sorted.
    """
    where = origin or Origin(path=str(base), line=1)
    pointer = "/spec/usage"
    known = {"csv", "prometheus"}
    unknown = sorted(set(spec_usage) - known)
    if unknown:
        message = f"unknown key (expected {cells.either(known)})"
        problem = cells.at_trace(where, f"{pointer}/{unknown[0]}", message)
        raise ValidationFailed([problem])
    found: dict[tuple[str, str], tuple[FloatArray, Callable[[], str]]] = {}
    problems: list[Problem] = []
    if "csv" in spec_usage:
        path = cells.trace_file(spec_usage["csv"], base, where, f"{pointer}/csv")
        for key, (values, line) in _usage_csv(path, steps).items():
            found[key] = (values, partial("{}:{}".format, path, line))
    sources = spec_usage.get("prometheus", [])
    if not isinstance(sources, list):
        raise ValidationFailed([cells.at_trace(where, f"{pointer}/prometheus", "must be a list")])
    times = start + step * np.arange(steps, dtype=np.float64)
    for index, source in enumerate(sources):
        at = f"{pointer}/prometheus/{index}"
        path, resource, label = prometheus.source(source, base, where, at)
        exported, locate = prometheus.series(path, label, times)
        for cluster, (values, label_at) in exported.items():
            here = partial(_where, path, locate, label_at)
            earlier = found.setdefault((cluster, resource), (values, here))
            if earlier[0] is not values:
                message = f"{resource} of cluster {cluster!r} is already given at {earlier[1]()}"
                problems.append(locate.problem(label_at, message))
    if problems:
        raise ValidationFailed(problems)
    result: dict[str, dict[str, FloatArray]] = {}
    for (cluster, resource), (values, _) in sorted(found.items()):
        result.setdefault(cluster, {})[resource] = values
    return result


def _where(path: Path, locate: prometheus.Locator, pointer: str) -> str:
    """`FILE:LINE` of a node of a Prometheus export."""
    return f"{path}:{locate.line(pointer)}"


def load_replicas(
    path: Path, *, steps: int, origin: Origin | None = None, pointer: str = "/spec/replicas/csv"
) -> dict[str, IntArray]:
    """Workload (`namespace/Kind/name`) → (steps,) desired replicas, −1 before its first value.

    Reads the CSV `step,workload,replicas`. A file that cannot be read is reported at `origin`
    (where the trace names it) and `pointer`, or at the file itself. Raises `ValidationFailed`
    with every bad row's FILE:LINE. Workloads come sorted.
    """
    if origin is not None:
        cells.readable(path, origin, pointer)
    table = csvtable.Table.read(path, REPLICAS_COLUMNS)
    workloads = table.distinct("workload", cells.workload)
    counts = table.distinct("replicas", cells.replicas)
    at_step = table.steps()
    keys, filled = _fill(
        table,
        workloads.codes,
        at_step,
        counts.values[counts.codes].astype(np.float64),
        steps,
        "replicas for this step and workload",
    )
    whole = np.where(np.isnan(filled), -1.0, filled).astype(np.int64)
    named = sorted((workloads.texts[key], i) for i, key in enumerate(keys.tolist()))
    return {name: whole[i] for name, i in named}


def _usage_csv(path: Path, steps: int) -> dict[tuple[str, str], tuple[FloatArray, int]]:
    """(cluster, resource) → (filled series, line of its first row) from a usage CSV."""
    table = csvtable.Table.read(path, USAGE_COLUMNS)
    clusters = table.distinct("cluster", cells.cluster)
    resources = table.distinct("resource", cells.resource)
    amounts = table.distinct("value", cells.amount, cells.amounts)
    at_step = table.steps()
    width = max(1, len(resources.texts))
    keys, filled = _fill(
        table,
        clusters.codes * width + resources.codes,
        at_step,
        amounts.values[amounts.codes].astype(np.float64),
        steps,
        "a value for this step, cluster and resource",
    )
    first = _first_lines(table, clusters.codes * width + resources.codes, at_step < steps, keys)
    return {
        (clusters.texts[key // width], resources.texts[key % width]): (filled[i], first[i])
        for i, key in enumerate(keys.tolist())
    }


def _fill(
    table: csvtable.Table,
    key: IntArray,
    at_step: IntArray,
    values: FloatArray,
    steps: int,
    what: str,
) -> tuple[IntArray, FloatArray]:
    """The distinct keys of the good rows before `steps`, and a (keys × steps) array of their
    values, forward-filled, NaN before each key's first value. A second row for the same key
    and step is a problem; raises `ValidationFailed` with every problem of the table."""
    keep = ~table.bad & (at_step < steps)
    keys, series = np.unique(key[keep], return_inverse=True)
    series = series.astype(np.int64).reshape(-1)
    steps_of, lines = at_step[keep], table.lines[keep]
    cell = series * steps + steps_of
    order = np.argsort(cell, kind="stable")
    repeated = np.flatnonzero(cell[order][1:] == cell[order][:-1]) + 1
    for at in repeated[: cells.MAX_PROBLEMS + 1].tolist():
        message = f"{what} is already given on line {int(lines[order[at - 1]])}"
        line = int(lines[order[at]])
        table.problems.append(
            Problem(path=str(table.path), line=line, pointer="/step", message=message)
        )
    table.more += max(0, len(repeated) - cells.MAX_PROBLEMS - 1)
    table.raise_problems()
    dense = np.full((len(keys), steps), np.nan)
    dense[series, steps_of] = values[keep]
    last = np.where(~np.isnan(dense), np.arange(steps), 0)
    np.maximum.accumulate(last, axis=1, out=last)
    filled: FloatArray = np.take_along_axis(dense, last, axis=1)
    result: IntArray = keys.astype(np.int64)
    return result, filled


def _first_lines(
    table: csvtable.Table, key: IntArray, keep: npt.NDArray[np.bool_], keys: IntArray
) -> list[int]:
    """The line of each key's first row."""
    first = np.full(len(keys), np.iinfo(np.int64).max)
    np.minimum.at(first, np.searchsorted(keys, key[keep]), table.lines[keep])
    return [int(line) for line in first.tolist()]
