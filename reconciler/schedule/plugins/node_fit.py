"""Filter: single-node fit, the draft's "single node maximum resource query".

One replica must fit the cluster's largest free node on every resource it requests, or the
cluster could only run it by fragmenting. The (workloads × clusters) fit matrix is computed
for the whole pass at once, in `schedule.batch`.
"""

from __future__ import annotations

import numpy as np

from reconciler.schedule import framework, units
from reconciler.schedule.fleet import Fleet


@framework.register_filter("NodeFit", order=60)
def node_fit(fleet: Fleet, subject: framework.Subject) -> framework.Verdict:
    """Reject clusters where no node has room for one replica."""
    passed = subject.node_fit | subject.holders

    def label(row: int) -> tuple[str, str]:
        columns = subject.requested
        short = fleet.largest_free[row, columns] < subject.demand[columns]
        j = int(columns[int(np.argmax(short))])
        resource = fleet.resources[j]
        need = units.describe(resource, float(subject.demand[j]))
        has = units.describe(resource, float(fleet.largest_free[row, j]))
        return f"no node fits {need}", f"the largest free node has {has}; one replica needs {need}"

    return framework.Verdict(passed=passed, label=label)
