"""The demand matrix and node fit kept between passes (`schedule.batch.Rows`) equal the ones
made afresh, whichever demands, resources and largest free nodes change between calls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.schedule import batch


@dataclass
class Stand:
    """The three things the batch functions read of a `Fleet`."""

    resources: tuple[str, ...]
    largest_free: Any

    @property
    def size(self) -> int:
        return int(self.largest_free.shape[0])


AMOUNT = st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0])
DEMAND = st.dictionaries(st.sampled_from(["cpu", "memory", "pods"]), AMOUNT, max_size=3)
ROOMS = [[[1.0, 1.0, 4.0, 9.0], [2.0, 0.5, 0.5, 9.0]], [[1.0, 2.0, 4.0, 9.0]]]
STEP = st.tuples(
    st.lists(st.tuples(DEMAND, st.booleans()), min_size=2, max_size=3),
    st.sampled_from([("cpu", "memory", "pods"), ("cpu", "gpu", "memory", "pods")]),
    st.sampled_from(ROOMS),
)


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(STEP, max_size=6))
def test_kept_rows_equal_fresh_ones(steps: list[Any]) -> None:
    rows = batch.Rows()
    kept: list[dict[str, float]] = []
    for demands, resources, room in steps:
        made = []
        for i, (demand, keep) in enumerate(demands):
            # the very mapping of the last call where asked, else a new one (equal or not)
            made.append(kept[i] if keep and i < len(kept) else dict(demand))
        kept = made
        fleet = Stand(resources, np.array(room)[:, : len(resources)])
        matrix = batch.demand_matrix(fleet, made, rows)  # type: ignore[arg-type]
        fresh = batch.demand_matrix(fleet, made)  # type: ignore[arg-type]
        assert np.array_equal(matrix, fresh)
        fits = batch.node_fit(fleet, matrix, rows)  # type: ignore[arg-type]
        assert np.array_equal(fits, batch.node_fit(fleet, fresh))  # type: ignore[arg-type]


def test_kept_arrays_cannot_be_changed_by_a_caller() -> None:
    fleet = Stand(("cpu", "memory"), np.array([[1.0, 1.0]]))
    rows = batch.Rows()
    matrix = batch.demand_matrix(fleet, [{"cpu": 1.0}], rows)  # type: ignore[arg-type]
    fits = batch.node_fit(fleet, matrix, rows)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="read-only"):
        matrix[0, 0] = 9.0
    with pytest.raises(ValueError, match="read-only"):
        fits[0, 0] = False
