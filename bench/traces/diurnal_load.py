"""The content of the diurnal trace (bench/traces/diurnal.py writes it into files): the fleet,
its background load over the days, the workloads and their desired replicas, from one seed.

Four regions whose local days are UTC−5, UTC, UTC+5:30 and UTC+9, on three providers whose
prices differ; background load follows the local day; web workloads follow their home region's
day; bursty ones have flash crowds; batch ones burst rarely. See diurnal.py for the figures.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

START = 1_736_121_600.0  # 2025-01-06T00:00:00Z, a Monday
START_TEXT = "2025-01-06T00:00:00Z"
REGIONS = ("us-east", "eu-west", "ap-south", "ap-northeast")
OFFSETS = (-5.0, 0.0, 5.5, 9.0)  # hours from UTC of each region's local day
REGION_PRICE = (1.0, 1.06, 0.92, 1.1)
PROVIDERS = ("aws", "gcp", "azure")
PROVIDER_PRICE = (1.0, 0.88, 1.12)
CPU_PRICE, MEMORY_PRICE = 0.031, 0.0041  # per core-hour and per GiB-hour, on aws in us-east
CPU_REQUESTS = (0.1, 0.25, 0.5, 1.0, 2.0)  # cores per replica, small ones the most common
CPU_SHARES = (0.3, 0.3, 0.2, 0.15, 0.05)
LIMIT = 0.85
GIB = 2**30
MIB = 2**20


@dataclass(frozen=True)
class Preset:
    """The size of a trace."""

    clusters: int
    workloads: int
    days: float


FULL = Preset(clusters=100, workloads=2000, days=7)
SMALL = Preset(clusters=8, workloads=40, days=2)


@dataclass(frozen=True)
class Trace:
    """The seeded content: the fleet, its background load, the workloads and their replicas."""

    names: list[str]  # clusters; the last one joins mid-trace
    region: np.ndarray  # cluster → region index
    provider: np.ndarray  # cluster → provider index
    cpu: np.ndarray  # cores
    background: np.ndarray  # steps × clusters, cores
    background_mem: np.ndarray  # steps × clusters, bytes
    kind: np.ndarray  # workload → "web" | "burst" | "batch"
    home: np.ndarray  # workload → region index
    cpu_req: np.ndarray  # cores per replica
    mem_req: np.ndarray  # MiB per replica
    desired: np.ndarray  # steps × workloads
    drained: tuple[int, int, int]  # (cluster, from step, to step)
    joined: tuple[int, int]  # (cluster, at step)
    tightness: float  # the peak of demand / room under the limit, as scaled


def daylight(local_hour: np.ndarray) -> np.ndarray:
    """0 at night (22:00–06:00), 1 in the working day (10:00–18:00), linear in between."""
    return np.interp(local_hour % 24, [0, 6, 10, 18, 22, 24], [0, 0, 1, 1, 0, 0])


def _events(
    rng: np.random.Generator, steps: int, rate: float, hours: tuple[float, float], step_h: float
) -> list[tuple[int, int]]:
    """Random (start step, length in steps) windows: `rate` per hour, `hours` long."""
    count = rng.poisson(rate * steps * step_h)
    starts = rng.integers(0, steps, count)
    lengths = np.maximum(1, np.round(rng.uniform(*hours, count) / step_h)).astype(int)
    return list(zip(starts.tolist(), lengths.tolist(), strict=True))


def background(
    rng: np.random.Generator, n: int, hours: np.ndarray, day: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cores per cluster, and the background cpu and memory shares (steps × clusters): the
    local day with a per-cluster amplitude that changes from day to day, AR(1) noise with an
    hour's correlation, and bursts of +10–25 % for an hour or two."""
    steps, step_h = len(hours), float(hours[1] - hours[0])
    region = np.arange(n) % len(REGIONS)
    cpu = rng.integers(1, 5, n) * 64.0
    amplitude = rng.uniform(0.7, 1.0, n)
    days = int(hours[-1] // 24) + 1
    daily = np.clip(rng.normal(1.0, 0.05, (days, n)), 0.85, 1.15)[(hours // 24).astype(int)]
    phi = float(np.exp(-step_h))
    shocks = rng.normal(0, 0.02 * np.sqrt(1 - phi**2), (steps, n))
    noise = np.zeros((steps, n))
    noise[0] = rng.normal(0, 0.02, n)
    for t in range(1, steps):
        noise[t] = phi * noise[t - 1] + shocks[t]
    share = np.clip(0.25 + 0.5 * amplitude * daily * day[:, region] + noise, 0.25, 0.75)
    for start, length in _events(rng, steps, 0.019 * n, (1.0, 2.0), step_h):
        c = rng.integers(0, n)
        share[start : start + length, c] += rng.uniform(0.10, 0.25)
    share = np.minimum(share, 0.97)  # a burst fills a cluster, never beyond its capacity
    mem_share = np.clip(0.8 * share + rng.normal(0, 0.01, (steps, n)), 0.05, 0.95)
    return cpu, share, mem_share


@dataclass(frozen=True)
class Workloads:
    """The workloads before their peaks are scaled to the fleet."""

    kind: np.ndarray  # "web" | "burst" | "batch"
    home: np.ndarray  # region index
    cpu_req: np.ndarray  # cores per replica
    mem_req: np.ndarray  # MiB per replica
    web: np.ndarray  # steps × workloads: unscaled replicas of web ones (0 for batch)
    batch: np.ndarray  # steps × workloads: replicas of batch ones (0 for web)


def workloads(rng: np.random.Generator, w: int, hours: np.ndarray, day: np.ndarray) -> Workloads:
    """Web ones follow their home region's day (a peak of 2–30, 20 % of it at night, ±5 % from
    day to day); bursty ones also have about two flash crowds a week (×2–3 for 1–3 hours);
    batch ones run one replica, and 10–30 for an hour or two about every two days."""
    steps, step_h = len(hours), float(hours[1] - hours[0])
    kind = np.array(["web"] * w, dtype=object)
    picks = rng.permutation(w)
    kind[picks[: w // 10]] = "batch"
    kind[picks[w // 10 : w // 5]] = "burst"
    home = np.arange(w) % len(REGIONS)
    cpu_req = rng.choice(CPU_REQUESTS, w, p=CPU_SHARES)
    mem_req = np.clip(np.round(cpu_req * rng.uniform(512, 2048, w) / 64) * 64, 128, 4096)
    peak = np.exp(rng.uniform(np.log(2), np.log(30), w))
    days = int(hours[-1] // 24) + 1
    wobble = np.clip(rng.normal(1.0, 0.05, (days, w)), 0.85, 1.15)[(hours // 24).astype(int)]
    web = (0.2 + 0.8 * day[:, home]) * wobble * peak
    for b in np.flatnonzero(kind == "burst").tolist():
        for start, length in _events(rng, steps, 2 / (7 * 24), (1.0, 3.0), step_h):
            web[start : start + length, b] *= rng.uniform(2.0, 3.0)
    batch = np.zeros((steps, w))
    for b in np.flatnonzero(kind == "batch").tolist():
        batch[:, b] = 1
        for start, length in _events(rng, steps, 0.02, (1.0, 2.0), step_h):
            batch[start : start + length, b] = rng.integers(10, 31)
    web[:, kind == "batch"] = 0
    return Workloads(kind, home, cpu_req, mem_req, web, batch)


def make_trace(preset: Preset, seed: int, step_s: float, tightness: float) -> Trace:
    """The whole trace from one `default_rng(seed)`. The web peaks are scaled so that the
    fleet's tightest step asks for `tightness` of the room under the cpu limit (the drained
    cluster out, the joining one in only from its step)."""
    rng = np.random.default_rng(seed)
    step_h = step_s / 3600
    steps = round(preset.days * 86400 / step_s)
    n = preset.clusters + 1  # the last one joins mid-trace
    hours = np.arange(steps) * step_h
    day = np.stack([daylight(hours + o) for o in OFFSETS], axis=1)  # steps × regions
    region = np.arange(n) % len(REGIONS)
    provider = np.arange(n) % len(PROVIDERS)
    cpu, share, mem_share = background(rng, n, hours, day)
    load = workloads(rng, preset.workloads, hours, day)
    drained = (
        int(rng.integers(0, preset.clusters)),
        int(0.45 * steps),
        int(0.45 * steps + 12 / step_h),
    )
    joined = (n - 1, int(0.55 * steps))
    present = np.ones((steps, n), dtype=bool)
    present[: joined[1], joined[0]] = False
    present[drained[1] : drained[2], drained[0]] = False
    room = (np.maximum(LIMIT * cpu - share * cpu, 0) * present).sum(axis=1)
    batch = load.kind == "batch"
    scale = np.min((tightness * room - load.batch @ load.cpu_req) / (load.web @ load.cpu_req))
    desired = np.where(batch, load.batch, np.maximum(1, np.round(load.web * scale)))
    desired = desired.astype(np.int64)
    reached = float(np.max(desired @ load.cpu_req / room))
    names = _names(region, provider)
    memory = np.round(mem_share * cpu * 4 * GIB / MIB) * MIB
    return Trace(
        names,
        region,
        provider,
        cpu,
        share * cpu,
        memory,
        load.kind,
        load.home,
        load.cpu_req,
        load.mem_req,
        desired,
        drained,
        joined,
        reached,
    )


def _names(region: np.ndarray, provider: np.ndarray) -> list[str]:
    """`us-east-aws-01`: region, provider, and a number within the two."""
    seen: dict[tuple[int, int], int] = {}
    names = []
    for r, p in zip(region.tolist(), provider.tolist(), strict=True):
        seen[r, p] = seen.get((r, p), 0) + 1
        names.append(f"{REGIONS[r]}-{PROVIDERS[p]}-{seen[r, p]:02d}")
    return names
