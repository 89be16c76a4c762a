"""Fault injection: failing the next N matching requests, delaying every request, and holding
one request until the test releases it."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from .errors import ApiError


@dataclass
class FailureRule:
    """Answer the next `remaining` requests matching method and path prefix with `status`."""

    remaining: int
    status: int
    method: str | None
    path_prefix: str
    message: str

    def matches(self, method: str, path: str) -> bool:
        """Tell whether a request is one this rule fails."""
        if self.method is not None and self.method.upper() != method:
            return False
        return path.startswith(self.path_prefix)


@dataclass
class DelayRule:
    """Hold every matching request for `seconds` before answering it."""

    seconds: float
    method: str | None
    path_prefix: str


@dataclass
class Hold:
    """Hold the next matching write (not a dry run) until `release()`: `arrived` is set when it
    is being held, `answered` once the server has handled it after the release."""

    method: str
    path_prefix: str
    arrived: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)
    answered: threading.Event = field(default_factory=threading.Event)

    def release(self) -> None:
        """Let the held request through."""
        self.released.set()


class Faults:
    """The active fault rules of one emulator; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: list[FailureRule] = []
        self._delay: DelayRule | None = None
        self._holds: list[Hold] = []

    def fail_next(
        self,
        count: int = 1,
        status: int = 500,
        method: str | None = None,
        path_prefix: str = "",
        message: str = "injected fault",
    ) -> None:
        """Fail the next `count` requests (optionally only one method / path prefix)."""
        with self._lock:
            self._failures.append(FailureRule(count, status, method, path_prefix, message))

    def delay(self, seconds: float, method: str | None = None, path_prefix: str = "") -> None:
        """Delay every matching request by `seconds` until cleared (0 clears)."""
        with self._lock:
            self._delay = DelayRule(seconds, method, path_prefix) if seconds > 0 else None

    def hold(self, method: str, path_prefix: str) -> Hold:
        """Hold the next write matching method and path prefix (see `Hold`)."""
        rule = Hold(method.upper(), path_prefix)
        with self._lock:
            self._holds.append(rule)
        return rule

    def hold_for(self, method: str, path: str, dry_run: bool) -> Hold | None:
        """Take the hold rule a request matches, if any (each rule holds one request)."""
        if dry_run:
            return None
        with self._lock:
            for rule in self._holds:
                if rule.method == method and path.startswith(rule.path_prefix):
                    self._holds.remove(rule)
                    return rule
        return None

    def clear(self) -> None:
        """Drop every fault rule, and let every held request through."""
        with self._lock:
            self._failures.clear()
            self._delay = None
            for rule in self._holds:
                rule.release()
            self._holds.clear()

    def delay_for(self, method: str, path: str) -> float:
        """Return how long to hold a request before handling it."""
        with self._lock:
            rule = self._delay
        if rule is None:
            return 0.0
        if rule.method is not None and rule.method.upper() != method:
            return 0.0
        return rule.seconds if path.startswith(rule.path_prefix) else 0.0

    def injected_failure(self, method: str, path: str) -> ApiError | None:
        """Consume one matching failure rule and return the error to answer with, if any."""
        with self._lock:
            for rule in self._failures:
                if rule.remaining > 0 and rule.matches(method, path):
                    rule.remaining -= 1
                    self._failures = [r for r in self._failures if r.remaining > 0]
                    return ApiError(rule.status, rule.message)
        return None

    @property
    def pending_failures(self) -> int:
        """Return how many injected failures are still to be served."""
        with self._lock:
            return sum(rule.remaining for rule in self._failures)
