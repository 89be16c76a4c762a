"""Filter: a spread constraint by provider, region or zone needs that field on the cluster.

This is Karmada's SpreadConstraint filter; the selection among groups happens later, in
`schedule.spread`.

Called by `schedule.plugins`.
"""

from __future__ import annotations

import numpy as np

from reconciler.schedule import framework
from reconciler.schedule.fleet import Fleet


@framework.register_filter("SpreadConstraint", order=40, karmada=True, static=True)
def spread_fields(fleet: Fleet, subject: framework.Subject) -> framework.Verdict:
    """Reject clusters that lack a field a spread constraint groups by."""
    passed = np.ones(fleet.size, dtype=bool)
    missing = []
    for constraint in subject.placement.spread:
        if constraint.by == "cluster" or constraint.by_label:
            continue  # Karmada's filter checks spreadByField only
        lacking = fleet.topology(constraint.by) == None  # noqa: E711 - elementwise
        passed &= ~lacking
        missing.append((constraint.by, lacking))

    def label(row: int) -> tuple[str, str]:
        field = next(by for by, lacking in missing if lacking[row])
        return f"no {field} to spread by", f"the cluster has no {field}, which spread needs"

    return framework.Verdict(passed=passed, label=label)
