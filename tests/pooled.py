"""Connections as a long-running `dro run` takes them from its pool (`live.pool`), for the
tests of kept connections: on the emulator and against the e2e fleet's real clusters."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from reconciler.kube import client as kube
from reconciler.live.pool import Pool


def pooled(pool: Pool, cluster: str, kubeconfig: Path, timeout: float = 2.0) -> kube.Connection:
    """The pool's connection to `cluster` (its kubeconfig context of the same name), as a pass
    takes it: the kept one when it is sound, else a new one."""
    return pool.connection(
        cluster,
        context=cluster,
        kubeconfig=kubeconfig,
        timeout=timeout,
        make=lambda: kube.connect(cluster, context=cluster, kubeconfig=kubeconfig, timeout=timeout),
    )


@contextmanager
def watching_pool() -> Iterator[Pool]:
    """A pool whose kept connections watch their lists (`--watch-clusters`), closed after."""
    pool = Pool()
    pool.watching = True
    try:
        yield pool
    finally:
        pool.close()
