"""Cost benchmark: `bench/rebalance.py`'s two diurnal days, priced, played with the Cost scorer on
and off.

The trace is `rebalance.make_trace` (40 clusters in 4 regions, 400 Deployments following their
region's day, bursts, batch), and each cluster gets a provider (cluster index mod 3) whose prices
are 1.00, 1.15 and 1.30 × (0.03 per core-hour, 0.004 per GiB-hour). Both variants are dro's
DynamicWeight policies through `pipeline.plan`, step after step with the decisions carried:

- `cost-on`: dro.yaml as shipped, `pluginWeights.Cost` at its default (1, automatic weights);
- `cost-off`: `pluginWeights: {Cost: 0}`, which divides as dro did before prices counted.

Cost is computed here from the running replicas and the prices (not by `schedule.pricing`),
summed over the steps (2 h each). Also: overload events, pending and moves as
`bench/rebalance.py` counts them, and what cost steering adds to the time per step.

`--spill 0.1 0.2 0.4` plays cost-on once per value of `economy.SPILL` (how far above the fleet's
water level cost steering fills a cheap cluster at full pull): the trade-off between cost and
overload.

Run: `.venv/bin/python bench/cost.py [--seed N] [--steps N] [--spill X …]`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import rebalance

from reconciler.schedule import economy

CPU_PRICE = 0.03
MEMORY_PRICE = 0.004  # per GiB-hour
FACTORS = (1.0, 1.15, 1.3)
PROVIDERS = ("aws", "gcp", "azure")
SHIPPED = rebalance.CONFIG
OFF = SHIPPED.replace("  rebalance:", "  pluginWeights: {Cost: 0}\n  rebalance:")
_plain_cluster_doc = rebalance.cluster_doc


def priced_cluster_doc(
    trace: rebalance.Trace, c: int, cpu_used: float, mem_used: float
) -> dict[str, object]:
    """`rebalance.cluster_doc` with a provider label and its prices."""
    doc = _plain_cluster_doc(trace, c, cpu_used, mem_used)
    factor = FACTORS[c % len(FACTORS)]
    doc["metadata"]["labels"]["provider"] = PROVIDERS[c % len(PROVIDERS)]  # type: ignore[index]
    doc["spec"]["cost"] = {  # type: ignore[index]
        "cpu": round(CPU_PRICE * factor, 5),
        "memory": round(MEMORY_PRICE * factor, 6),
    }
    return doc


def price_factor(steps: list[rebalance.Step]) -> float:
    """The mean price factor of the running replica-steps (1.00: all on the cheapest)."""
    weighted = replicas = 0
    for step in steps:
        for counts in step.running:
            for c, n in counts.items():
                weighted += n * FACTORS[c % len(FACTORS)]
                replicas += n
    return weighted / max(1, replicas)


def cost_of(trace: rebalance.Trace, steps: list[rebalance.Step]) -> float:
    """Σ over steps of what the running replicas cost per hour × 2 h, from the prices."""
    factor = np.array([FACTORS[c % len(FACTORS)] for c in range(rebalance.CLUSTERS)])
    per_replica = (
        trace.cpu_req[:, None] * CPU_PRICE + trace.mem_req[:, None] / 1024 * MEMORY_PRICE
    ) * factor[None, :]
    total = 0.0
    for step in steps:
        for w, counts in enumerate(step.running):
            for c, n in counts.items():
                total += n * per_replica[w, c]
    return total * rebalance.STEP_S / 3600


def main() -> None:
    """Play both variants and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--steps", type=int, default=rebalance.STEPS)
    parser.add_argument("--spill", type=float, nargs="*", default=[economy.SPILL])
    args = parser.parse_args()
    trace = rebalance.make_trace(args.seed, args.steps)
    rebalance.cluster_doc = priced_cluster_doc  # type: ignore[assignment]
    variants = [("cost-off", OFF, economy.SPILL)]
    variants += [(f"cost-on {spill:g}", SHIPPED, spill) for spill in args.spill]
    rows = {}
    for name, config, spill in variants:
        rebalance.CONFIG = config
        economy.SPILL = spill
        steps = rebalance.play_dro(trace, "dro", args.steps)
        rows[name] = {
            **rebalance.metrics(trace, steps),
            "cost": cost_of(trace, steps),
            "factor": price_factor(steps),
        }
        print(f"{name}: done", file=sys.stderr)
    print(
        "variant (spill)  cost (2 days)  price factor  overload  peak WL  pending  moved  "
        "moved %  s/step"
    )
    for name, m in rows.items():
        print(
            f"{name:<16} {m['cost']:>13.2f} {m['factor']:>13.3f} {m['overload']:>9} "
            f"{m['peak']:>8.2f} {m['pending']:>8} {m['moved']:>6} {m['moved_pct']:>7.2f}% "
            f"{m['step_s']:>7.3f}"
        )
    print(
        "price factor: the mean price of the running replica-steps relative to the cheapest "
        "provider (1.00: all on it);\nits floor says what any placement could save at these "
        "prices.\n"
    )
    off = rows["cost-off"]
    for name, on in rows.items():
        if name != "cost-off":
            print(
                f"{name}: cost {on['cost'] / off['cost']:.1%} of Cost off "
                f"({1 - on['cost'] / off['cost']:.1%} lower), overload "
                f"{on['overload']} vs {off['overload']}, time per step "
                f"{on['step_s'] / off['step_s']:.2f}×"
            )


if __name__ == "__main__":
    main()
