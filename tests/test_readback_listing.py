"""`ReadBack.decisions` brought from its last call (`readback._Listing.patched`) gives what a
read of every file gives, and leaves the cache holding and exporting the same entries,
whatever the files did in between: unchanged, edited by hand, unreadable, gone or back."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import make_source_repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler import cli, load
from reconciler.branch import lastpass, readback


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The example repo's output branch state files, as a reconcile wrote them."""
    tmp = tmp_path_factory.mktemp("readback")
    repo = make_source_repo(tmp / "src")
    state = tmp / "state"
    command = ["reconcile", "--once", "--repo", str(repo.bare), "--state-dir", str(state)]
    assert cli.main(command) == 0
    files = load.previous_blobs(str(repo.bare), "dro/rendered", state)
    return {path: files[path] for path in files}


VARIANTS = ["as written", "as written", "seal broken", "not yaml"]


def variant(data: bytes, how: str) -> bytes:
    if how == "seal broken":
        return data.replace(b"replicas: ", b"replicas:  ", 1) + b"\n"
    if how == "not yaml":
        return b"not: [a decision\n"
    return data


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.tuples(st.lists(st.sampled_from(VARIANTS), min_size=12, max_size=12), st.booleans()),
        max_size=5,
    )
)
def test_a_patched_listing_equals_a_full_read(
    written: dict[str, bytes], steps: list[tuple[list[str], bool]]
) -> None:
    decision_paths = sorted(p for p in written if p.startswith("decisions/"))[:12]
    kept, fresh = readback.ReadBack(), readback.ReadBack()
    for step, one_gone in steps:
        data: dict[str, bytes] = dict(written)
        for path, how in zip(decision_paths, step, strict=False):
            data[path] = variant(written[path], how)
        if one_gone:  # the files' paths change too: every file is visited again
            del data[decision_paths[0]]
        by_blob = {readback.blob_id(d): d for d in data.values()}
        blobs = {p: readback.blob_id(d) for p, d in data.items()}
        kept.begin()
        fresh.begin()
        fresh._listing = None  # every file read, as at a process's first pass
        got = lastpass.decisions(readback.Blobs(blobs, by_blob.__getitem__), kept)
        want = lastpass.decisions(readback.Blobs(blobs, by_blob.__getitem__), fresh)
        assert got == want
        assert got == lastpass.decisions(data)
        assert kept.changed == fresh.changed
        assert exported(kept) == exported(fresh)


def exported(cache: readback.ReadBack) -> set[str]:
    entries: dict[str, Any] = cache.exported()
    return set(entries)
