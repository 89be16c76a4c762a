"""Drift as values: the fields where a live object differs from what dro applies there.

`live.drift` finds them (a server-side dry run compared with the live object, as `kubectl
diff` does); `branch.driftfiles` writes them to `status/drift/`; `dro diff` prints them. A
field that exists on one side only has `ABSENT` on the other. Nothing here does I/O.

Called by 10 modules, among them `branch.driftfiles`, `live`, `pipeline`,
`service.observations`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reconciler.domain.base import ResourceKey


class _Absent:
    """The side of a change where the field does not exist."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


@dataclass(frozen=True, slots=True)
class Change:
    """One field that differs: its JSON pointer (RFC 6901), and its live and rendered values
    (`ABSENT` where the field does not exist on that side)."""

    pointer: str
    live: Any = ABSENT
    rendered: Any = ABSENT

    def document(self) -> dict[str, Any]:
        """`{pointer, live, rendered}`, without the side where the field does not exist."""
        found: dict[str, Any] = {"pointer": self.pointer}
        if self.live is not ABSENT:
            found["live"] = self.live
        if self.rendered is not ABSENT:
            found["rendered"] = self.rendered
        return found


@dataclass(frozen=True, slots=True)
class Drifted:
    """An object dro applied whose live copy no longer is as applied: the changed fields,
    or `deleted` when it is gone from the cluster; or a `foreign` object dro may not adopt."""

    key: ResourceKey
    rule: str
    """The object's `placement.apply.drift` rule (Correct or Report); for one `foreign`, its
    `placement.apply.takeover` rule."""
    changes: tuple[Change, ...] = ()
    deleted: bool = False
    foreign: bool = False
    """It exists, dro did not create it, and its takeover rule does not adopt it: `changes`
    are what applying the manifest would change, which dro does not do."""
