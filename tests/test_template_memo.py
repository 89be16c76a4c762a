"""A rollout's old template commit is read and validated once per process, not on every pass:
`laststate.MEMO` keeps what each old commit gave across the passes of `dro run`, bounded."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from reconciler import laststate, validate
from reconciler.domain import ResourceKey, Source
from reconciler.validate import Result
from tests.rolloutfleet import NAMES, rollout_fleet, web

KEY = ResourceKey("apps", "Deployment", "shop", "web")


def counting(monkeypatch: pytest.MonkeyPatch) -> Counter[str | None]:
    """Count `validate.check` calls by the source commit they validate."""
    calls: Counter[str | None] = Counter()
    real = validate.check

    def check(source: Source, **kwargs: object) -> Result:
        calls[source.commit] += 1
        return real(source, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(validate, "check", check)
    return calls


def test_a_second_pass_does_not_validate_the_old_commit_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout_fleet(tmp_path, monkeypatch, "{maxClusters: 1, soak: 1h}") as fleet:
        fleet.reconcile(0)
        old = fleet.rollout()["commit"]
        fleet.change({"workloads/web.yaml": web("web:2")}, "web:2")
        laststate.MEMO.clear()
        calls = counting(monkeypatch)
        fleet.reconcile(100)  # wave 1: the other three clusters keep web:1, from `old`
        assert calls[old] == 1
        fleet.reconcile(200)  # still soaking: the old template is needed again
        fleet.reconcile(300)
        assert fleet.rendered_images()[NAMES[-1]] == "web:1", "the old template is in force"
        assert calls[old] == 1, "validated once across passes"
        laststate.MEMO.clear()
        fleet.reconcile(400)
        assert calls[old] == 2, "without the memo every pass validates it again"


def test_the_memo_is_bounded_and_forgets_the_commit_used_longest_ago() -> None:
    memo = laststate.TemplateMemo(size=2)
    reads: Counter[str] = Counter()

    def read(sha: str) -> Source | None:
        reads[sha] += 1
        return Source(files=(), commit=sha) if sha != "gone" else None

    for commit in ("a", "b", "a", "c", "a", "b"):
        laststate.templates(read, memo=memo, repo="r")(commit, KEY)
    # a, b read; a from the memo; c read (b forgotten); a from the memo; b read again
    assert reads == Counter({"a": 1, "b": 2, "c": 1})
    assert [memo.get("r", c)[0] for c in "abc"] == [True, True, False], "c used longest ago"
    laststate.templates(read, memo=memo, repo="r")("gone", KEY)
    laststate.templates(read, memo=memo, repo="r")("gone", KEY)
    assert reads["gone"] == 2, "a commit the cache does not hold is not remembered"
    assert laststate.templates(read, memo=memo, repo="other")("a", KEY) is None
    assert reads["a"] == 2, "another repository's commit is its own"
