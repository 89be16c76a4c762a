"""The clusters of an online pass: connected when the pass observes them, closed when it ends.

An idle pass (`pipeline.idle`) observes them first, against the fixed point's spec and the
last committed status, and surveys their drift against the fixed point's tree; when they are
not as the fixed point saw them, the full pass that follows uses that same observation rather
than observe twice.

Called by `pipeline` and `pipeline.sharded`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reconciler import audit, live
from reconciler.branch import driftfiles
from reconciler.domain import Source, Spec, durations, fence
from reconciler.domain.drift import Drifted
from reconciler.laststate import LastPass
from reconciler.live import takeover
from reconciler.pipeline import idle
from reconciler.settings import Settings

Observer = Callable[[Spec], "live.Observed"]
"""Observes the clusters of a validated spec (between validate and schedule)."""


def applied(
    members: live.Members,
    planned: Any,
    observed: live.Observed,
    source: Source,
    on_stage: Callable[[str], None],
) -> live.Applied:
    """Apply: `planned`'s tree (a `pipeline.Planned`) to every cluster, told to the operators;
    prune is held back while a cluster could not be listed."""
    on_stage("apply")
    down = ", ".join(sorted(observed.unreachable))
    done = members.apply(
        planned.tree,
        held_back=f"clusters could not be listed ({down})" if down else None,
        provenance=takeover.provenance(planned.spec),
    )
    audit.applied("apply", source, done)
    return done


class Surveying(live.Members):
    """Members that keep their last drift survey, for the fixed point (`pipeline.idle`)."""

    drifted: dict[str, list[Drifted]] | None = None

    def survey(
        self, tree: Mapping[str, bytes], provenance: Mapping[Any, takeover.Provenance]
    ) -> dict[str, list[Drifted]]:
        """`live.Members.survey`, kept."""
        self.drifted = super().survey(tree, provenance)
        return self.drifted


class Clusters:
    """The clusters of an online pass: connected when the pass observes them (after validate,
    once the spec names them), closed when the pass ends. Offline, nothing is observed."""

    def __init__(
        self, settings: Settings, fenced: fence.Fence, pool: live.Pool | None = None
    ) -> None:
        self._settings = settings
        self._fenced = fenced
        self._pool = pool
        """The connections kept between passes (`live.pool`); None: made for this pass."""
        if pool is not None:
            pool.watching = settings.watch_clusters
        self.members: live.Members | None = None
        """The open connections; None until observed, and always offline."""
        self._made: tuple[Mapping[str, Mapping[str, Any]], float, live.Observed] | None = None
        """The last observation: the statuses and the time it was made against, and it."""

    def observer(self, before: LastPass, now: float) -> Observer | None:
        """Observes the clusters at `now` against their last committed status; None offline."""
        if not self._settings.online:
            return None
        return lambda spec: self._observed(spec, before.statuses, now)

    def standing(
        self, found: idle.FixedPoint[Any] | None, now: float, on_stage: Callable[[str], None]
    ) -> live.Observed | None:
        """What an idle pass on the fixed point `found` observed (nothing, offline), or None
        when the pass must run whole: there is no fixed point, or the clusters, observed and
        surveyed against its tree, are not as it saw them."""
        if found is None or not self._settings.online:
            return live.Observed() if found is not None else None
        planned = found.planned
        on_stage("observe")
        observed = self._observed(planned.spec, found.statuses, now)
        assert isinstance(self.members, Surveying)
        self.members.survey(planned.tree, takeover.provenance(planned.spec))
        return observed if idle.standing(found, observed, self.members.drifted or {}) else None

    def seen(self, observed: live.Observed) -> idle.Seen | None:
        """What this pass saw of the clusters, for its fixed point; None offline."""
        if not isinstance(self.members, Surveying):
            return None
        return idle.Seen.of(observed, self.members.drifted or {})

    def _observed(
        self, spec: Spec, statuses: Mapping[str, Mapping[str, Any]], now: float
    ) -> live.Observed:
        """The clusters of `spec` observed at `now` against `statuses`: once per pass (the
        full pass after an idle one that did not stand reuses its observation: the same
        source and settings give the same spec)."""
        made = self._made
        if made is not None and made[1] == now and made[0] == statuses:
            return made[2]
        if self.members is not None:
            self.members.close()
        self.members = Surveying(spec, self._access(), self._pool).open()
        observed = self.members.observe(statuses, now)
        self._made = (statuses, now, observed)
        return observed

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
