"""Triggers and move reasons are codes plus detail; their prose is rendered in one place and
read back (a move's reason) into the same value."""

from __future__ import annotations

import pytest

from reconciler.domain import MoveCode, MoveReason, Trigger, TriggerCode


@pytest.mark.parametrize(
    ("reason", "text"),
    [
        (MoveReason(MoveCode.DRAINED), "cluster drained"),
        (MoveReason(MoveCode.WATER_LEVEL, "0.90 > 0.85 (cpu)"), "water level 0.90 > 0.85 (cpu)"),
        (
            MoveReason(MoveCode.FORECAST, "0.89 > 0.85 (cpu) by 2026-11-24T14:00:00Z"),
            "forecast water level 0.89 > 0.85 (cpu) by 2026-11-24T14:00:00Z",
        ),
        (
            MoveReason(MoveCode.FILLING, "c: water level 0.60 vs 0.10 (cpu)"),
            "filling c: water level 0.60 vs 0.10 (cpu)",
        ),
        (
            MoveReason(MoveCode.FAILOVER, "5m; runs whole on b (stateful)"),
            "failover after 5m; runs whole on b (stateful)",
        ),
        (MoveReason(MoveCode.PENDING, "5m"), "pods pending over 5m"),
        (MoveReason(MoveCode.REQUESTED), "rebalance requested"),
        (MoveReason(MoveCode.OTHER, "moved by hand"), "moved by hand"),
    ],
)
def test_a_move_reason_reads_back_as_the_value_it_was_written_from(
    reason: MoveReason, text: str
) -> None:
    assert reason.text == text
    assert MoveReason.read(text) == reason


def test_a_forced_move_is_worded_as_its_trigger() -> None:
    trigger = Trigger(TriggerCode.FAILOVER, "5m").noting("runs whole on b (stateful)")
    forced = MoveReason.forced(trigger)
    assert forced is not None
    assert forced.code is MoveCode.FAILOVER
    assert forced.text == trigger.text == "failover after 5m; runs whole on b (stateful)"
    assert MoveReason.forced(Trigger(TriggerCode.SCALED, "4 to 6")) is None


def test_a_set_aside_trigger_names_the_division_made_instead() -> None:
    instead = Trigger(TriggerCode.SCALED, "4 to 6")
    trigger = Trigger(TriggerCode.SET_ASIDE, "it lists target cluster a twice", then=instead)
    assert trigger.text == (
        "previous decision set aside (it lists target cluster a twice): divided again by its "
        "policy; replicas changed from 4 to 6"
    )
    assert Trigger().text == ""
