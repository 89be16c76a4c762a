"""The soak test's analysis: the passes of a run cut from its logs, and what each prune needed
(see `tests/soak.py`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import git

# --- analysis -------------------------------------------------------------------------------
from tests.soak_parts import INVENTORY_NAME, INVENTORY_NAMESPACE, Event, when


@dataclass
class SubPass:
    """One `_one_pass` of a pass (a pass is two when it retires moved replicas): its events
    from `source_loaded` (or `pass_idle`: an idle pass still applies and prunes) to the next
    one or the end of the pass."""

    instance: int
    number: int
    start: float
    end: float | None
    source: str
    follow_up: bool
    idle: bool = False
    """Begun by `pass_idle`: nothing changed, the last plan stands and is applied again."""
    planned: Event | None = None
    committed: Event | None = None
    applied: list[Event] = field(default_factory=list)
    prunes: list[Event] = field(default_factory=list)

    @property
    def key(self) -> str:
        """How a message names it."""
        return f"instance {self.instance} pass {self.number}" + (" (follow-up)" * self.follow_up)


def sub_passes(index: int, events: list[Event], ended: float | None) -> list[SubPass]:
    """The sub-passes of one instance's events, in order; the last one of a killed instance
    ends when it was killed."""
    found: list[SubPass] = []
    for event in events:
        name = event.get("event")
        if name in ("source_loaded", "pass_idle"):
            if found and found[-1].end is None:
                found[-1].end = when(event)
            found.append(
                SubPass(
                    instance=index,
                    number=event["pass"],
                    start=when(event),
                    end=None,
                    source=event["source"],
                    follow_up=bool(event.get("follow_up")),
                    idle=name == "pass_idle",
                )
            )
            if name == "pass_idle":
                # it stands on the last plan, committed as the output branch's tip; what it
                # could not reach it says when it finishes
                found[-1].planned = {"unreachable": []}
                found[-1].committed = {**event, "commit": event.get("output")}
            continue
        current = found[-1] if found and found[-1].number == event.get("pass") else None
        if name == "pass_ended" and current is not None:
            current.end = when(event)
        if name == "pass_finished" and current is not None and current.idle:
            current.planned = {**current.planned, "unreachable": event.get("unreachable", [])}
        if current is None:
            continue
        if name == "planned":
            current.planned = event
        elif name == "committed":
            current.committed = event
        elif name == "applied":
            current.applied.append(event)
        elif name == "audit" and event.get("action") == "prune":
            current.prunes.append(event)
    if found and found[-1].end is None:
        found[-1].end = ended
    return found


FAILURE = re.compile(r"^cluster (?P<cluster>[^:]+): (?P<verb>[a-z]+) (?P<what>[^:]*): ")


def rendered_objects(tree: Mapping[str, str], cluster: str) -> set[tuple[str, str, str]]:
    """(kind in lower case, namespace or "", name) of what a rendered tree holds for a
    cluster (`clusters/<cluster>/<namespace or _cluster>/<kind>-<name>.yaml`)."""
    found = set()
    prefix = f"clusters/{cluster}/"
    for path in tree:
        if not path.startswith(prefix) or path.count("/") != 3:
            continue
        folder, file = path[len(prefix) :].split("/")
        kind, _, name = file.removesuffix(".yaml").partition("-")
        found.add((kind, "" if folder == "_cluster" else folder, name))
    return found


def failure_object(what: str) -> tuple[str, str, str]:
    """`Deployment shop/web` → ("deployment", "shop", "web"); `Namespace shop` → (…, "", …)."""
    kind, _, where = what.partition(" ")
    namespace, _, name = where.rpartition("/")
    return kind.lower(), namespace, name


def prune_phase(failure: str, rendered: set[tuple[str, str, str]]) -> bool:
    """Whether a cluster's failure can only come from the prune phase (after the gate):
    a delete, the inventory's write, or a read of an object that is not rendered there
    (the apply phase reads rendered objects only; the prune phase reads stale ones)."""
    match = FAILURE.match(failure)
    if match is None:
        return False
    verb, obj = match["verb"], failure_object(match["what"])
    inventory = {
        ("configmap", INVENTORY_NAMESPACE, INVENTORY_NAME),
        ("namespace", "", INVENTORY_NAMESPACE),
    }
    if verb == "delete":
        return True
    if verb == "apply":
        return obj in inventory
    if verb == "get":
        return obj not in inventory and obj[2] != "" and obj not in rendered
    return False


def tree_at(repo: Path, commit: str, cache: dict[str, dict[str, str]]) -> dict[str, str]:
    """path → blob of a commit's tree."""
    if commit not in cache:
        listing = git(repo, "ls-tree", "-r", commit)
        cache[commit] = {
            line.split("\t", 1)[1]: line.split()[2] for line in listing.splitlines() if line
        }
    return cache[commit]


def tip_at(tips: list[tuple[float, str]], moment: float) -> str | None:
    """The output branch's tip at a moment, from the hook's log."""
    found = None
    for stamp, sha in tips:
        if stamp <= moment:
            found = sha
    return found


def pass_of(subs: list[SubPass], moment: float) -> SubPass | None:
    """The sub-pass running at `moment` (the latest to start before it)."""
    found = None
    for sub in subs:
        if sub.start <= moment:
            found = sub
    return found
