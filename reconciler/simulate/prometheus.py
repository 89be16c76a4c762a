"""Prometheus range-query JSON exports as usage series: one series per cluster label.

The answer of `/api/v1/query_range` (`{"status": "success", "data": {"resultType": "matrix",
"result": [{"metric": {...}, "values": [[unix, "v"], ...]}]}}`), saved to a file, or its bare
list of series as `promtool query range -o json` prints it. Each step of the trace takes the last
sample at or before its time; before a series' first sample it is NaN.
A second series with the same cluster label is a problem (aggregate by the label first).

Called by `simulate.series`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from reconciler import yamlio
from reconciler.domain import Origin
from reconciler.errors import Problem, ValidationFailed
from reconciler.kube import quantity
from reconciler.simulate import cells

FloatArray = npt.NDArray[np.float64]


def source(source: object, base: Path, where: Origin, at: str) -> tuple[Path, str, str]:
    """One `prometheus` entry of the trace, `{file, resource, clusterLabel}` (the label
    defaults to `cluster`): (its file, the resource, the cluster label)."""
    if not isinstance(source, Mapping):
        raise ValidationFailed(
            [cells.at_trace(where, at, "must be a map: {file, resource, clusterLabel}")]
        )
    unknown = sorted(set(source) - {"file", "resource", "clusterLabel"})
    if unknown:
        message = "unknown key (expected file, resource or clusterLabel)"
        raise ValidationFailed([cells.at_trace(where, f"{at}/{unknown[0]}", message)])
    if "resource" not in source:
        raise ValidationFailed([cells.at_trace(where, at, "resource is required (cpu, memory …)")])
    resource, label = source["resource"], source.get("clusterLabel", "cluster")
    if not isinstance(resource, str) or cells.problem(cells.resource, resource):
        message = f"{quantity.shown(resource)} is not a resource name (cpu, memory …)"
        raise ValidationFailed([cells.at_trace(where, f"{at}/resource", message)])
    if not isinstance(label, str) or not label:
        raise ValidationFailed(
            [cells.at_trace(where, f"{at}/clusterLabel", "must be a label name")]
        )
    return cells.trace_file(source.get("file"), base, where, f"{at}/file"), resource, label


def series(
    path: Path, label: str, times: FloatArray
) -> tuple[dict[str, tuple[FloatArray, str]], Locator]:
    """Cluster → (the value at each of `times`: the last sample at or before it, NaN before the
    first; the JSON pointer of its cluster label) from one range-query export, and the
    export's `Locator` for problems about those pointers."""
    shown = str(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        reason = error.strerror or str(error)
        raise ValidationFailed(
            [Problem(path=shown, line=1, message=f"cannot read: {reason}")]
        ) from None
    try:
        body = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        line = getattr(error, "lineno", 1)
        message = f"not a Prometheus JSON export: {error}".split(": line ")[0]
        raise ValidationFailed([Problem(path=shown, line=line, message=message)]) from None
    locate = Locator(shown, data)
    result, under = _result(body, locate)
    found: dict[str, tuple[FloatArray, str]] = {}
    seen: dict[str, str] = {}
    problems: list[Problem] = []
    for index, series in enumerate(result):
        at = f"{under}/{index}"
        metric = series.get("metric") if isinstance(series, Mapping) else None
        cluster = metric.get(label) if isinstance(metric, Mapping) else None
        if not isinstance(cluster, str) or cells.problem(cells.cluster, cluster):
            message = (
                f"no {label!r} label: name the cluster label with clusterLabel"
                if cluster is None
                else f"label {label!r} is {quantity.shown(cluster)}, not a cluster name"
            )
            problems.append(locate.problem(f"{at}/metric", message))
            continue
        if cluster in seen:
            line = locate.line(seen[cluster])
            message = (
                f"a second series for cluster {cluster!r} (the first is on line {line}); "
                f"aggregate by {label!r}, e.g. sum by ({label}) (…)"
            )
            problems.append(locate.problem(f"{at}/metric/{label}", message))
            continue
        seen[cluster] = f"{at}/metric/{label}"
        samples = _samples(series.get("values"), f"{at}/values", locate)
        if isinstance(samples, Problem):
            problems.append(samples)
            continue
        stamps, values = samples
        order = np.argsort(stamps, kind="stable")
        stamps, values = stamps[order], values[order]
        index_at = np.searchsorted(stamps, times, side="right") - 1
        picked = np.where(index_at >= 0, values[np.maximum(index_at, 0)], np.nan)
        found[cluster] = (picked, seen[cluster])
    if problems:
        raise ValidationFailed(cells.capped(problems))
    return found, locate


def _result(body: object, locate: Locator) -> tuple[list[Any], str]:
    """`data.result` of a range-query answer, checked to be a matrix, and its pointer; or the
    answer's bare list of series (as `promtool query range -o json` prints it)."""
    if isinstance(body, list):
        return body, ""
    if not isinstance(body, Mapping) or not isinstance(body.get("data"), Mapping):
        raise ValidationFailed([locate.problem("/data", "no data: expected a range-query answer")])
    if body.get("status", "success") != "success":
        status = quantity.shown(body.get("status"))
        raise ValidationFailed([locate.problem("/status", f"status is {status}, not 'success'")])
    data = body["data"]
    kind = data.get("resultType", "matrix")
    if kind != "matrix":
        message = f"resultType is {quantity.shown(kind)}: export a range query (a matrix)"
        raise ValidationFailed([locate.problem("/data/resultType", message)])
    result = data.get("result")
    if not isinstance(result, list):
        raise ValidationFailed([locate.problem("/data/result", "must be a list of series")])
    return result, "/data/result"


def _samples(raw: object, at: str, locate: Locator) -> tuple[FloatArray, FloatArray] | Problem:
    """A series' `values` as (unix times, amounts ≥ 0), or the problem with the first bad one."""
    if not isinstance(raw, list):
        return locate.problem(at, 'must be a list of [unix time, "value"] pairs')
    try:
        pairs = np.array(raw, dtype=object).reshape(len(raw), 2) if raw else np.zeros((0, 2))
        stamps = pairs[:, 0].astype(np.float64)
        values = pairs[:, 1].astype(np.float64)
        if not all(isinstance(p, list) for p in raw):
            raise ValueError
    except (ValueError, TypeError):
        return locate.problem(f"{at}/{_first_bad_pair(raw)}", 'expected [unix time, "value"]')
    bad = np.flatnonzero(~np.isfinite(stamps) | ~np.isfinite(values) | (values < 0))
    if len(bad):
        j = int(bad[0])
        message = (
            f"{quantity.shown(raw[j][1])} at {quantity.shown(raw[j][0])} is not an amount >= 0"
        )
        return locate.problem(f"{at}/{j}", message)
    return stamps, values


def _first_bad_pair(raw: list[Any]) -> int:
    """The index of the first item that is no [number, "number"] pair."""
    for j, pair in enumerate(raw):
        try:
            if not isinstance(pair, list) or len(pair) != 2:
                return j
            float(pair[0])
            float(pair[1])
        except (TypeError, ValueError):
            return j
    return 0


class Locator:
    """Lines of JSON pointers in a JSON file, found (by the YAML reader, which records every
    node's line) only when a problem needs one."""

    def __init__(self, path: str, data: bytes) -> None:
        self.path = path
        self.data = data
        self._origin: Origin | None = None

    def line(self, pointer: str) -> int:
        """The line of the node at `pointer` (of its nearest recorded parent; 1 if unknown)."""
        if self._origin is None:
            try:
                documents = yamlio.parse_documents(self.path, self.data)
            except yamlio.YamlError:
                documents = []
            self._origin = documents[0].origin if documents else Origin(path=self.path, line=1)
        return self._origin.line_of(pointer)

    def problem(self, pointer: str, message: str) -> Problem:
        """A problem at `pointer`, with its line."""
        return Problem(path=self.path, line=self.line(pointer), pointer=pointer, message=message)
