"""The clusters of an online pass: connected when the pass observes them, closed when it ends.

Called by `pipeline`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from reconciler import live
from reconciler.branch import driftfiles
from reconciler.domain import Spec, durations, fence
from reconciler.domain.drift import Drifted
from reconciler.laststate import LastPass
from reconciler.live import takeover
from reconciler.settings import Settings

Observer = Callable[[Spec], "live.Observed"]
"""Observes the clusters of a validated spec (between validate and schedule)."""


class Clusters:
    """The clusters of an online pass: connected when the pass observes them (after validate,
    once the spec names them), closed when the pass ends. Offline, nothing is observed."""

    def __init__(self, settings: Settings, fenced: fence.Fence) -> None:
        self._settings = settings
        self._fenced = fenced
        self.members: live.Members | None = None
        """The open connections; None until observed, and always offline."""

    def observer(self, before: LastPass, now: float) -> Observer | None:
        """Observes the clusters at `now` against their last committed status; None offline."""
        if not self._settings.online:
            return None

        def observe(spec: Spec) -> live.Observed:
            self.members = live.Members(spec, self._access()).open()
            return self.members.observe(before.statuses, now)

        return observe

    def _access(self) -> live.Access:
        settings = self._settings
        return live.Access(
            fence=self._fenced,
            kubeconfig=settings.kubeconfig,
            sops_age_key_file=settings.sops_age_key_file,
            in_cluster=settings.in_cluster,
            timeout=settings.cluster_timeout,
            parallel=settings.parallel,
            move_wait=settings.move_wait,
        )

    def __enter__(self) -> Clusters:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.members is not None:
            self.members.close()


def drift_surveyed(
    members: live.Members,
    tree: Mapping[str, bytes],
    spec: Spec,
    before: LastPass,
    now: float,
    others: Mapping[str, Sequence[Drifted]],
) -> dict[str, bytes]:
    """Observe, after render: `tree` with each reachable cluster's drift from it, in
    `status/drift/` (`others`: as the members that own them surveyed them)."""
    surveyed = {**others, **members.survey(tree, takeover.provenance(spec))}
    names = [cluster.name for cluster in spec.clusters]
    return driftfiles.merged(tree, surveyed, before.files, durations.rfc3339(now), names)
