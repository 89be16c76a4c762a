"""Waiting on real clusters: poll a probe against a deadline, never sleep as synchronisation."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def eventually(what: str, probe: Callable[[], T | None], timeout: float = 90.0) -> T:
    """Poll `probe` until it returns something other than None; fail at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.25)
