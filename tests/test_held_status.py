"""The status hold reads back only the `status/` files that differ from the new tree.

A pass compares its status files with the last pass's to decide whether a status-only change
waits for `--status-interval`; at 10,000 workloads reading every file back cost more than a
second, so the comparison is by git blob id, and only a file that differs is read."""

from __future__ import annotations

from reconciler.branch import readback, status
from reconciler.git import packfile
from reconciler.laststate import LastPass


def _blobs(files: dict[str, bytes], read: list[str]) -> readback.Blobs:
    ids = {path: packfile.object_id("blob", data).hex() for path, data in files.items()}
    by_id = {ids[path]: data for path, data in files.items()}

    def fetch(blob: str) -> bytes:
        read.append(blob)
        return by_id[blob]

    return readback.Blobs(ids, fetch)


FILES = {f"status/workloads/bench/app-{i}.yaml": f"n: {i}\n".encode() for i in range(50)}


def test_an_unchanged_status_tree_is_never_held_and_no_blob_is_read() -> None:
    read: list[str] = []
    last = LastPass(files=_blobs(FILES, read))
    assert last.held_status(dict(FILES), now=10.0, interval=3600.0) is None
    assert read == []


def test_blob_ids_tell_a_changed_file_from_an_unchanged_one_without_reading_it() -> None:
    read: list[str] = []
    last = LastPass(files=_blobs(FILES, read))
    assert readback.holds(last.files, "status/workloads/bench/app-7.yaml", b"n: 7\n")
    assert not readback.holds(last.files, "status/workloads/bench/app-7.yaml", b"n: 700\n")
    assert read == []


OBSERVED = {"c1": {"observedAt": "1970-01-01T00:00:05Z", "source": status.OBSERVED}}
"""The last committed observation, at 5 s: an interval of an hour is not over at 10 s."""


def test_a_removed_status_file_counts_as_a_difference() -> None:
    read: list[str] = []
    last = LastPass(files=_blobs(FILES, read), statuses=OBSERVED)
    fewer = {p: d for p, d in FILES.items() if not p.endswith("app-3.yaml")}
    assert last.held_status(fewer, now=10.0, interval=3600.0) is None  # urgent: a file went
    assert len(read) == 1


def test_when_the_interval_is_over_nothing_is_held_or_read() -> None:
    read: list[str] = []
    last = LastPass(files=_blobs(FILES, read), statuses=OBSERVED)
    changed = {**FILES, "status/workloads/bench/app-7.yaml": b"n: 700\n"}
    assert last.held_status(changed, now=3605.0, interval=3600.0) is None
    assert read == []


def test_the_blob_id_is_gits() -> None:
    assert readback.blob_id(b"n: 1\n") == packfile.object_id("blob", b"n: 1\n").hex()


def test_a_plain_mapping_compares_bytes() -> None:
    assert readback.holds(FILES, "status/workloads/bench/app-1.yaml", b"n: 1\n")
    assert not readback.holds(FILES, "status/workloads/bench/app-1.yaml", b"n: 2\n")
    assert not readback.holds(FILES, "status/workloads/bench/new.yaml", b"n: 1\n")


def test_a_status_only_change_within_the_interval_keeps_every_last_file() -> None:
    read: list[str] = []
    last = LastPass(files=_blobs(FILES, read), statuses=OBSERVED)
    changed = {**FILES, "status/workloads/bench/app-7.yaml": b"n: 700\n"}
    assert last.held_status(changed, now=10.0, interval=3600.0) == FILES
    assert len(read) == 1
