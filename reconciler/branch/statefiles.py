"""State files: what dro reads back from its output branch, sealed and checked.

The output branch is state, never authority. dro reads back only `decisions/` (the previous
placement) and `status/` (the last observations), and trusts neither blindly:

- Every such file dro writes starts with a seal, a comment line holding the sha256 of the rest
  of the file (`seal`). A file whose seal is missing or does not match was edited outside dro.
- Every field dro reads back is checked for the type and range dro writes: names are strings,
  counts integers within int32, times RFC 3339, amounts Kubernetes quantities (or the finite
  numbers of earlier versions), phases known ones.

A status file that fails either check is skipped with a warning naming it (the cluster then
counts as never observed). A decision that fails either check is not used as the previous
placement: when its resource is still readable, it comes back as a stand-in with no clusters
and `Decision.distrusted` saying why, so the scheduler divides the workload again by its
policy and its trigger says so (`schedule.standing`); otherwise it is skipped. A hand edit on
the output branch therefore never moves production: the next pass restores the policy's
division.

The seal detects edits, not forgery: anyone who can push to the output branch can also
recompute a sha256. Protect the branch so that only dro pushes to it. This module is pure.

Called by 8 modules, among them `branch.driftfiles`, `load`, `render`, `web.branchfiles`.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from reconciler import yamlio
from reconciler.branch import paths, phases, summary
from reconciler.domain import Decision, ResourceKey, durations, group_of
from reconciler.domain.decision import MOVE_PHASES
from reconciler.kube import quantity

SEAL_PREFIX = b"# dro state sha256:"
SEAL_SUFFIX = b" (written by dro; an edited file is ignored: change the source repo)\n"
INT32_MAX = 2**31 - 1


class StateError(ValueError):
    """A state file that is not as dro wrote it; the message names the field and why."""


def seal(data: bytes) -> bytes:
    """`data` with the seal line in front: the sha256 of `data` itself."""
    return SEAL_PREFIX + hashlib.sha256(data).hexdigest().encode() + SEAL_SUFFIX + data


def unseal(data: bytes) -> bytes:
    """The file without its seal line; raises `StateError` when the seal is missing or does
    not match (the file was edited outside dro, or written by an older dro)."""
    if not data.startswith(SEAL_PREFIX):
        raise StateError("no dro seal line (edited outside dro, or written by an older dro)")
    line, _, body = data.partition(b"\n")
    digest = line[len(SEAL_PREFIX) : len(SEAL_PREFIX) + 64]
    if line + b"\n" != SEAL_PREFIX + digest + SEAL_SUFFIX or (
        hashlib.sha256(body).hexdigest().encode() != digest
    ):
        raise StateError("edited outside dro (its seal does not match its content)")
    return body


def adopt_unsealed(files: Mapping[str, bytes]) -> Mapping[str, bytes]:
    """The output branch's files, with the state files of a branch written before seals
    existed sealed as they are: when no `decisions/` or `status/` file carries a seal, the
    branch predates them, and upgrading dro must not divide every workload again (nor forget
    an unreachable cluster's last observation). Their fields are still checked when read.
    Once any state file carries a seal, an unsealed one is an edit made outside dro."""
    if any(files[path].startswith(SEAL_PREFIX) for path in files if paths.is_state(path)):
        return files  # found at the first state file of any branch dro wrote since
    state = {path for path in files if paths.is_state(path)}
    if not state:
        return files
    return {path: seal(data) if path in state else data for path, data in files.items()}


# --- decisions ----------------------------------------------------------------------------------


def decision(path: str, data: bytes) -> Decision:
    """One `decisions/` file read back. A file that is not as dro wrote it comes back as a
    stand-in with no clusters and `distrusted` set, when its resource can still be read;
    otherwise `StateError` (or `yamlio.YamlError`) is raised."""
    return read_decision(path, data)[0]


def read_decision(path: str, data: bytes) -> tuple[Decision, Any | None]:
    """`decision`, and for a decision as dro wrote it (sealed, every field checked) its
    document without the diagnosis block, which a cache keeps to give the decision again
    without the seal's digest or a parse (`decision_again`). None for a stand-in."""
    try:
        body = unseal(data)
    except StateError as error:
        return _stand_in(path, data, str(error)), None
    text = _text_of(body)
    rest, diagnosis = yamlio.cut_block(text, "diagnosis", 2)
    document = yamlio.load_own(path, rest.encode())
    try:
        found = checked_decision(document)
    except StateError as error:
        return _stand_in(path, data, str(error)), None
    return (found if diagnosis is None else replace(found, recorded=diagnosis)), document


def decision_again(document: Any, diagnosis: str | None) -> Decision:
    """The decision `read_decision` read, from what a cache kept of it: its document, whose
    fields are checked again, and its diagnosis block as `cut_block` cut it (None without)."""
    found = checked_decision(document)
    if diagnosis is None:
        return found
    return replace(found, recorded=yamlio.Verbatim(diagnosis))


def _text_of(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise StateError(f"it is not UTF-8 ({error.reason})") from error


def _stand_in(path: str, data: bytes, why: str) -> Decision:
    """A decision that is not trusted: its resource, no clusters, and why."""
    reason = f"{path}: {why}"
    without_seal = data.partition(b"\n")[2] if data.startswith(SEAL_PREFIX) else data
    try:
        document = yamlio.load_own(path, without_seal)
        key, api_version = _resource(_mapping(_mapping(document, "")["status"], "/status"))
    except (yamlio.YamlError, StateError, KeyError, TypeError) as error:
        raise StateError(why) from error
    return Decision(key=key, api_version=api_version, policy=None, clusters=(), distrusted=reason)


def checked_decision(document: Any) -> Decision:
    """A PlacementDecision document checked field by field, then read back; raises
    `StateError` naming the first field that dro would not have written."""
    root = _mapping(document, "")
    if root.get("kind") != "PlacementDecision":
        raise StateError("/kind: not a PlacementDecision")
    status = _mapping(root.get("status"), "/status")
    _resource(status)
    policy = status.get("policy")
    if policy is not None:
        owner = _mapping(policy, "/status/policy")
        _text(owner, "kind", "/status/policy")
        _text(owner, "name", "/status/policy")
        _optional_text(owner, "namespace", "/status/policy")
    for index, entry in enumerate(_list(status, "clusters")):
        where = f"/status/clusters/{index}"
        item = _mapping(entry, where)
        _text(item, "name", where)
        if item.get("replicas") is not None:
            _count(item, "replicas", where)
        if item.get("effectiveReplicas") is not None:
            _count(item, "effectiveReplicas", where, minimum=0)
    for index, entry in enumerate(_list(status, "retiring")):
        where = f"/status/retiring/{index}"
        item = _mapping(entry, where)
        _text(item, "name", where)
        _count(item, "replicas", where)
        if item.get("effectiveReplicas") is not None:
            _count(item, "effectiveReplicas", where, minimum=0)
        if item.get("phase") is not None and item["phase"] not in MOVE_PHASES:
            raise StateError(f"{where}/phase: {item['phase']!r} is not a move phase")
        if item.get("phase") is not None or item.get("since") is not None:
            _time(item, "since", where)
    for index, entry in enumerate(_list(status, "moves")):
        where = f"/status/moves/{index}"
        item = _mapping(entry, where)
        for field in ("from", "to", "reason"):
            _text(item, field, where)
        _count(item, "replicas", where)
        _time(item, "at", where)
    for index, entry in enumerate(_list(status, "overLimit")):
        where = f"/status/overLimit/{index}"
        item = _mapping(entry, where)
        _text(item, "cluster", where)
        _count(item, "replicas", where, minimum=0)
    if status.get("pending") is not None:
        _count(status, "pending", "/status", minimum=0)
    for field in ("unschedulable", "placementDigest", "affinityTerm"):
        _optional_text(status, field, "/status")
    if status.get("rebalanceServed") is not None:
        _time(status, "rebalanceServed", "/status")
    _accounts(status)
    diagnosis = status.get("diagnosis")
    if diagnosis is not None and not isinstance(diagnosis, Mapping | str):
        raise StateError("/status/diagnosis: not a mapping")
    return summary.decision_from_document(root)


def _accounts(status: Mapping[str, Any]) -> None:
    """What a decision's status adds up: its cost, and where it stands against its budget."""
    if status.get("costPerHour") is not None:
        _price(status, "costPerHour", "/status")
    if status.get("unpricedReplicas") is not None:
        _count(status, "unpricedReplicas", "/status", minimum=0)
    _disruption(status)


def _disruption(status: Mapping[str, Any]) -> None:
    """`status.disruption`, when there is one, as `summary.disruption_status` writes it."""
    where = "/status/disruption"
    if status.get("disruption") is None:
        return
    entry = _mapping(status["disruption"], where)
    budget = entry.get("maxUnavailableClusters")
    if isinstance(budget, bool) or not isinstance(budget, int | str):
        raise StateError(f"{where}/maxUnavailableClusters: not a count or a percentage")
    if isinstance(budget, str) and not re.fullmatch(r"[0-9]{1,3}(\.[0-9]+)?%", budget):
        raise StateError(f"{where}/maxUnavailableClusters: {budget!r} is not a percentage")
    if isinstance(budget, int):
        _count(entry, "maxUnavailableClusters", where, minimum=1)
    _count(entry, "allowed", where, minimum=1)
    for field in ("leaving", "entering"):
        for index, name in enumerate(_list(entry, field)):
            if not isinstance(name, str):
                raise StateError(f"{where}/{field}/{index}: not a cluster name")
    for index, waiting in enumerate(_list(entry, "waiting")):
        item = _mapping(waiting, f"{where}/waiting/{index}")
        _text(item, "cluster", f"{where}/waiting/{index}")
        _text(item, "reason", f"{where}/waiting/{index}")
        _count(item, "replicas", f"{where}/waiting/{index}", minimum=0)


def _resource(status: Mapping[str, Any]) -> tuple[ResourceKey, str]:
    resource = _mapping(status.get("resource"), "/status/resource")
    where = "/status/resource"
    api_version = _text(resource, "apiVersion", where)
    kind = _text(resource, "kind", where)
    name = _text(resource, "name", where)
    namespace = _optional_text(resource, "namespace", where) or ""
    return ResourceKey(group_of(api_version), kind, namespace, name).shared(), api_version


# --- status -------------------------------------------------------------------------------------

_QUANTITIES = ("capacity", "allocated", "used", "largestNodeFree")
"""Resource maps written as Kubernetes quantities (plain numbers in earlier versions)."""
_FLAGS = ("reachable", "stale", "suspended")
_TEXTS = ("source", "phase", "health", "message", "resource")


def status_of(path: str, data: bytes) -> Mapping[str, Any]:
    """The `status` of one `status/` file read back and checked; raises `StateError` (or
    `yamlio.YamlError`) when it is not as dro wrote it."""
    return checked_status(path, status_document(path, data))


def status_document(path: str, data: bytes) -> Any:
    """The document of a `status/` file, its seal checked; raises `StateError` (or
    `yamlio.YamlError`) when the seal is missing or does not match."""
    return yamlio.load_own(path, unseal(data))


def checked_status(path: str, document: Any) -> Mapping[str, Any]:
    """The `status` of the document of the `status/` file at `path`, checked field by field;
    raises `StateError` naming the first field that dro would not have written."""
    status = _mapping(_mapping(document, "").get("status"), "/status")
    for field in _TEXTS:
        _optional_text(status, field, "/status")
    phase = status.get("phase")
    if paths.status_cluster(path) is not None and phase and phase not in phases.KNOWN:
        raise StateError(f"/status/phase: {phase!r} is not a cluster phase")
    for field in _FLAGS:
        if field in status and not isinstance(status[field], bool):
            raise StateError(f"/status/{field}: not true or false")
    for field in ("observedAt", "unreachableSince"):
        if status.get(field) is not None:
            _time(status, field, "/status")
    for field in _QUANTITIES:
        if field in status:
            _quantities(status[field], f"/status/{field}")
    if "waterLevel" in status:
        _amounts(status["waterLevel"], "/status/waterLevel")
    if "workloads" in status:
        _amounts(status["workloads"], "/status/workloads")
    for index, entry in enumerate(_list(status, "pending")):
        where = f"/status/pending/{index}"
        item = _mapping(entry, where)
        _text(item, "workload", where)
        _count(item, "pods", where, minimum=0)
        _time(item, "since", where)
    for index, entry in enumerate(_list(status, "clusters")):
        where = f"/status/clusters/{index}"
        item = _mapping(entry, where)
        for field in ("name", "health"):
            _text(item, field, where)
        _optional_text(item, "message", where)
    for index, entry in enumerate(_list(status, "objects")):
        where = f"/status/objects/{index}"
        item = _mapping(entry, where)
        _text(item, "resource", where)
        _text(item, "takeover" if item.get("notAdopted") else "rule", where)
        _time(item, "firstSeen", where)
        for number, change in enumerate(_list(item, "fields", where)):
            _text(_mapping(change, f"{where}/fields/{number}"), "pointer", where)
    return status


# --- field checks -------------------------------------------------------------------------------


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise StateError(f"{where or '/'}: not a mapping")
    return value


def _list(parent: Mapping[str, Any], field: str, where: str = "/status") -> list[Any]:
    value = parent.get(field)
    if value is None:
        return []
    if not isinstance(value, list):
        raise StateError(f"{where}/{field}: not a list")
    return value


def _text(parent: Mapping[str, Any], field: str, where: str) -> str:
    value = parent.get(field)
    if not isinstance(value, str) or not value:
        raise StateError(f"{where}/{field}: missing, empty or not a string")
    return value


def _optional_text(parent: Mapping[str, Any], field: str, where: str) -> str | None:
    value = parent.get(field)
    if value is not None and not isinstance(value, str):
        raise StateError(f"{where}/{field}: not a string")
    return value


def _count(parent: Mapping[str, Any], field: str, where: str, *, minimum: int = -INT32_MAX) -> int:
    """An integer within int32 (a negative count is read, and `schedule.standing` rejects
    it as a contradiction, naming it)."""
    value = parent.get(field)
    if isinstance(value, bool) or not isinstance(value, int):
        raise StateError(f"{where}/{field}: not an integer")
    if not minimum <= value <= INT32_MAX:
        shown = value if abs(value) < 10**30 else "a huge number"
        raise StateError(f"{where}/{field}: {shown} is out of range")
    return value


def _price(parent: Mapping[str, Any], field: str, where: str) -> float:
    """A finite, non-negative number (a cost per hour)."""
    value = parent.get(field)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StateError(f"{where}/{field}: not a number")
    if not _finite(float(value)) or value < 0:
        raise StateError(f"{where}/{field}: {value} is not a cost")
    return float(value)


def _time(parent: Mapping[str, Any], field: str, where: str) -> float:
    value = parent.get(field)
    if not isinstance(value, str):
        raise StateError(f"{where}/{field}: not an RFC 3339 time")
    try:
        return durations.epoch(value)
    except (ValueError, OverflowError) as error:
        raise StateError(f"{where}/{field}: {value[:60]!r} is not an RFC 3339 time") from error


def _amounts(value: Any, where: str) -> None:
    for key, amount in _mapping(value, where).items():
        number = isinstance(amount, int | float) and not isinstance(amount, bool)
        if not isinstance(key, str) or not number or not _finite(amount) or amount < 0:
            raise StateError(f"{where}: {str(key)[:60]!r} is not a finite amount >= 0")


def _quantities(value: Any, where: str) -> None:
    for key, amount in _mapping(value, where).items():
        if not isinstance(key, str):
            raise StateError(f"{where}: {str(key)[:60]!r} is not a resource name")
        try:
            quantity.amount(amount)
        except ValueError as error:
            raise StateError(f"{where}/{key[:60]}: {error}") from None


def _finite(amount: float) -> bool:
    try:
        return math.isfinite(amount) and abs(amount) < 1e300
    except OverflowError:  # an integer too large for a float
        return False
