"""Filter: single-node fit, the draft's "single node maximum resource query".

One replica must fit the cluster's largest free node on every resource it requests, or the
cluster could only run it by fragmenting. The (workloads × clusters) fit matrix is computed
for the whole pass at once, in `schedule.batch`.

Called by `schedule.plugins`.
"""

from __future__ import annotations

import numpy as np

from reconciler.kube import quantity
from reconciler.schedule import framework
from reconciler.schedule.fleet import Fleet, IntArray


@framework.register_filter("NodeFit", order=60)
def node_fit(fleet: Fleet, subject: framework.Subject) -> framework.Verdict:
    """Reject clusters where no node has room for one replica."""
    passed = subject.node_fit | subject.holders

    columns = subject.requested

    def short_of(rows: IntArray) -> IntArray:
        short = fleet.largest_free[rows][:, columns] < subject.demand[columns]
        picked: IntArray = columns[np.argmax(short, axis=1)]
        return picked

    def category(j: int) -> str:
        return f"no node fits {quantity.describe(fleet.resources[j], float(subject.demand[j]))}"

    def label(row: int) -> tuple[str, str]:
        j = int(short_of(np.array([row]))[0])
        resource = fleet.resources[j]
        need = quantity.describe(resource, float(subject.demand[j]))
        has = quantity.describe(resource, float(fleet.largest_free[row, j]))
        return category(j), f"the largest free node has {has}; one replica needs {need}"

    return framework.Verdict(
        passed=passed,
        label=label,
        tally=lambda rows: framework.tally_of(short_of(rows), category),
    )
