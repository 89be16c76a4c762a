"""The REST API's git-backed policy store against a real `git daemon` serving the example
repo: reads at the tip, every error code, writes that are validated commits, and nothing on
the remote after a refused write."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from reconciler import load, settings, validate, yamlio
from reconciler.errors import Severity, UsageError
from reconciler.service.api import bodies, model, policyfile, snapshot, store
from tests.conftest import SourceRepo, git

ALICE = model.Caller(subject="user-42", name="Alice Doe", email="alice@example.com")
RPP = "resourceplacementpolicies"
COP = "clusteroverridepolicies"
PP = "propagationpolicies"


def _rpp(name: str, cluster: str = "eu-west-1") -> dict[str, Any]:
    return {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "ResourcePlacementPolicy",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {
            "resourceSelector": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "targetClusters": [{"selectorType": "name", "values": [cluster]}],
        },
    }


@pytest.fixture
def served(served_repo: tuple[SourceRepo, str], tmp_path: Path) -> tuple[SourceRepo, str]:
    return served_repo


def _store(url: str, tmp_path: Path, **options: Any) -> store.GitPolicyStore:
    return store.GitPolicyStore(url, "main", tmp_path / "api", **options)


def _show(repo: SourceRepo, what: str) -> str:
    return git(repo.bare, "show", what)


def _error(call: Any) -> model.ApiError:
    with pytest.raises(model.ApiError) as caught:
        call()
    return caught.value


def test_reads_serve_every_policy_of_a_resource_at_the_tip(
    served: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served
    policies = _store(url, tmp_path)
    placement = policies.list(RPP)
    names = [p.name for p in placement]
    assert names == sorted(names)
    assert {"warehouse", "europe", "orders"} <= set(names)
    europe = policies.get(RPP, "europe")
    assert europe.path == "policies/analytics.yaml"
    assert europe.etag == git(repo.bare, "rev-parse", "main:policies/analytics.yaml")
    assert europe.document["spec"]["placement"]["replicaScheduling"]["division"] == "Aggregated"
    draft = policies.get(PP, "cross-region-policy")
    assert draft.document == {
        "name": "cross-region-policy",
        "resourceType": "CronJob",
        "namespace": "platform",
        "targetClusters": ["eu-west-1", "us-east-1", "ap-south-1"],
    }
    assert [p.name for p in policies.list(PP)] == ["cross-region-policy"]
    assert _error(lambda: policies.get(RPP, "nope")).code == model.POLICY_NOT_FOUND
    assert "ledger" not in [p.name for p in policies.list(PP)], "Karmada's kind is not served"


def test_a_create_is_one_commit_by_the_caller_with_the_request_in_its_trailers(
    served: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served
    before = repo.branch_sha("main")
    policies = _store(url, tmp_path, clock=lambda: 1_800_000_000.0)
    written = policies.create(RPP, _rpp("storefront-api"), ALICE)
    assert written.branch == "main"
    assert repo.branch_sha("main") == written.sha
    assert git(repo.bare, "rev-parse", f"{written.sha}^") == before
    assert git(repo.bare, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%at", written.sha) == (
        "Alice Doe <alice@example.com>|dro <dro@localhost>|1800000000"
    )
    assert git(repo.bare, "log", "-1", "--format=%B", written.sha) == (
        "api: create ResourcePlacementPolicy storefront-api\n\n"
        "Dro-Api-Caller: user-42\n"
        "Dro-Api-Request: POST /apis/multicluster.io/v1alpha1/resourceplacementpolicies"
    )
    changed = git(repo.bare, "diff", "--name-status", before, written.sha)
    assert changed == "A\tpolicies/storefront-api.yaml"
    stored = _show(repo, f"{written.sha}:policies/storefront-api.yaml")
    assert yamlio.parse_documents("x", stored.encode())[0].body == _rpp("storefront-api")
    assert written.policy is not None
    assert written.policy.etag == git(
        repo.bare, "rev-parse", f"{written.sha}:policies/storefront-api.yaml"
    )
    assert policies.get(RPP, "storefront-api").etag == written.policy.etag, "read your write"


def test_a_create_whose_file_name_is_taken_uses_the_kind_in_the_name(
    served: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served
    body = {"name": "ml", "resourceType": "Job", "namespace": "ml", "targetClusters": ["eu-west-1"]}
    written = _store(url, tmp_path).create(PP, body, ALICE)
    assert written.policy is not None
    assert written.policy.path == "policies/propagationpolicy-ml.yaml"
    assert written.policy.document == body
    assert _show(repo, f"{written.sha}:policies/propagationpolicy-ml.yaml") == (
        "apiVersion: multicluster.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: ml\n"
        "spec:\n  namespace: ml\n  resourceType: Job\n  targetClusters:\n    - eu-west-1"
    )


@pytest.mark.parametrize(
    ("resource", "body", "said"),
    [
        (RPP, [], "must be a JSON object, got an array"),
        (PP, "x", "must be a JSON object, got a string"),
        (PP, {"resourceType": "Deployment"}, "needs a name"),
        (PP, {"name": "Web"}, "RFC 1123 subdomain"),
        (PP, {"name": "a/b"}, "may not contain '/'"),
        (PP, {"name": ".."}, "may not be '..'"),
        (PP, {"name": "web\nx"}, "control characters"),
        (RPP, {**_rpp("web"), "kind": "ClusterOverridePolicy"}, "must be a multicluster.io"),
        (RPP, {**_rpp("web"), "apiVersion": "policy.karmada.io/v1alpha1"}, "must be a"),
        (COP, {"apiVersion": "multicluster.io/v1alpha1", "kind": "ClusterOverridePolicy"}, "name"),
    ],
)
def test_a_bad_body_is_400_and_commits_nothing(
    served: tuple[SourceRepo, str], tmp_path: Path, resource: str, body: Any, said: str
) -> None:
    repo, url = served
    before = repo.branch_sha("main")
    error = _error(lambda: _store(url, tmp_path).create(resource, body, ALICE))
    assert (error.status, error.code) == (400, model.INVALID_BODY)
    assert said in error.message
    assert repo.branch_sha("main") == before


def test_a_create_of_an_existing_name_is_409_with_the_drafts_details(
    served: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served
    before = repo.branch_sha("main")
    error = _error(lambda: _store(url, tmp_path).create(RPP, _rpp("europe"), ALICE))
    assert (error.status, error.code) == (409, model.POLICY_CONFLICT)
    assert error.as_json()["details"] == {"policyName": "europe"}
    assert repo.branch_sha("main") == before


def test_an_invalid_change_is_422_with_each_problem_located_and_commits_nothing(
    served: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served
    before = repo.branch_sha("main")
    body = {"name": "web", "resourceType": "Deployment", "targetClusters": ["mars-1"]}
    error = _error(lambda: _store(url, tmp_path).create(PP, body, ALICE))
    assert (error.status, error.code) == (422, model.VALIDATION_FAILED)
    problems = error.details["problems"]
    assert problems
    assert all(set(p) == {"file", "line", "pointer", "message"} for p in problems)
    unknown = [p for p in problems if "mars-1" in p["message"]]
    assert unknown
    assert unknown[0]["file"] == "policies/web.yaml"
    assert repo.branch_sha("main") == before
    # exactly what `dro validate` says of the same change in a work tree
    repo.write({"policies/web.yaml": policyfile.document_text(bodies.document_from_body(PP, body))})
    said = validate.check(load.from_directory(repo.work)).problems
    assert problems == [
        {"file": p.path, "line": p.line, "pointer": p.pointer, "message": p.message}
        for p in said
        if p.severity is Severity.ERROR
    ]


def test_a_patch_replaces_one_document_and_keeps_the_rest_of_its_file_byte_for_byte(
    served: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served
    original = (repo.work / "policies/analytics.yaml").read_text()
    policies = _store(url, tmp_path)
    etag = policies.get(RPP, "europe").etag
    patch = {"spec": {"placement": {"replicaScheduling": {"division": "Weighted"}}}}
    written = policies.patch(RPP, "europe", {"metadata": {"labels": {"team": "web"}}}, ALICE, etag)
    text = _show(repo, f"{written.sha}:policies/analytics.yaml") + "\n"
    first, second, third = original.split("\n---\n")
    assert text.startswith(first + "\n---\n")
    assert text.endswith("\n---\n" + third)
    middle = text.removeprefix(first + "\n---\n").removesuffix("\n---\n" + third)
    (changed,) = yamlio.parse_documents("x", middle.encode())
    (was,) = yamlio.parse_documents("x", second.encode())
    assert changed.body == {
        **was.body,
        "metadata": {**was.body["metadata"], "labels": {"team": "web"}},
    }
    assert git(repo.bare, "log", "-1", "--format=%B", written.sha).endswith(
        "Dro-Api-Request: PATCH /apis/multicluster.io/v1alpha1/resourceplacementpolicies/europe"
    )
    stale = _error(lambda: policies.patch(RPP, "europe", patch, ALICE, f'"{etag}"'))
    assert (stale.status, stale.code) == (412, model.PRECONDITION_FAILED)


def test_a_draft_patch_merges_into_the_body_form_and_cannot_rename(
    served: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served
    policies = _store(url, tmp_path)
    before = repo.branch_sha("main")
    renamed = _error(lambda: policies.patch(PP, "cross-region-policy", {"name": "x"}, ALICE, None))
    assert (renamed.status, renamed.code) == (400, model.INVALID_BODY)
    assert repo.branch_sha("main") == before
    written = policies.patch(
        PP, "cross-region-policy", {"namespace": None, "targetClusters": ["eu-west-1"]}, ALICE, "*"
    )
    assert written.policy is not None
    assert written.policy.document == {
        "name": "cross-region-policy",
        "resourceType": "CronJob",
        "targetClusters": ["eu-west-1"],
    }
    text = _show(repo, f"{written.sha}:policies/cert-rotation.yaml")
    assert text.startswith("# The DRO-DS draft's PropagationPolicy"), "the comment is kept"
    unchanged = policies.patch(PP, "cross-region-policy", {"resourceType": "CronJob"}, ALICE, None)
    assert unchanged.sha == written.sha, "a patch that changes nothing commits nothing"


@pytest.mark.parametrize("if_match", ['W/"{etag}"', '"0000"', "0000, W/{etag}"])
def test_if_match_is_a_strong_comparison(
    served: tuple[SourceRepo, str], tmp_path: Path, if_match: str
) -> None:
    repo, url = served
    policies = _store(url, tmp_path)
    etag = policies.get(RPP, "orders").etag
    error = _error(lambda: policies.delete(RPP, "orders", ALICE, if_match.format(etag=etag)))
    assert (error.status, error.code) == (412, model.PRECONDITION_FAILED)
    written = policies.delete(RPP, "orders", ALICE, f'"0000", "{etag}"')
    assert written.policy is None
    assert "name: orders" not in _show(repo, f"{written.sha}:policies/analytics.yaml")


def test_a_delete_removes_one_document_or_the_whole_file(
    served: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served
    original = (repo.work / "policies/analytics.yaml").read_text()
    policies = _store(url, tmp_path)
    written = policies.delete(RPP, "warehouse", ALICE, None)
    first, second, third = original.split("\n---\n")
    comments = "".join(line + "\n" for line in first.splitlines() if line.startswith("#"))
    text = _show(repo, f"{written.sha}:policies/analytics.yaml") + "\n"
    assert text == comments + "---\n" + second + "\n---\n" + third
    gone = policies.delete(PP, "cross-region-policy", ALICE, None)
    assert git(repo.bare, "diff", "--name-status", written.sha, gone.sha) == (
        "D\tpolicies/cert-rotation.yaml"
    )
    missing = _error(lambda: policies.delete(PP, "cross-region-policy", ALICE, None))
    assert (missing.status, missing.code) == (404, model.POLICY_NOT_FOUND)


def test_a_write_is_checked_against_the_whole_repository(
    served: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served
    repo.write({"clusters/broken.yaml": "apiVersion: multicluster.io/v1alpha1\nkind: Cluster\n"})
    repo.commit("a person pushes a broken cluster file")
    before = repo.branch_sha("main")
    policies = _store(url, tmp_path)
    error = _error(lambda: policies.delete(RPP, "orders", ALICE, None))
    assert (error.status, error.code) == (422, model.VALIDATION_FAILED)
    assert {p["file"] for p in error.details["problems"]} == {"clusters/broken.yaml"}
    assert repo.branch_sha("main") == before


def test_branch_mode_pushes_a_new_branch_and_leaves_the_source_branch(
    served: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served
    before = repo.branch_sha("main")
    policies = _store(url, tmp_path, mode="branch")
    written = policies.create(RPP, _rpp("storefront-api"), ALICE)
    assert written.branch == f"dro-api/{RPP}/storefront-api/{written.sha[:12]}"
    assert repo.branch_sha(written.branch) == written.sha
    assert repo.branch_sha("main") == before
    assert git(repo.bare, "rev-parse", f"{written.sha}^") == before
    assert _error(lambda: policies.get(RPP, "storefront-api")).status == 404, "not merged yet"


def test_an_unreachable_remote_is_503_without_the_credentials(tmp_path: Path) -> None:
    url = "https://user:s3cret@127.0.0.1:9/nowhere.git"
    policies = store.GitPolicyStore(url, "main", tmp_path / "api")
    for call in (
        lambda: policies.list(RPP),
        lambda: policies.create(RPP, _rpp("web"), ALICE),
    ):
        error = _error(call)
        assert (error.status, error.code) == (503, model.SOURCE_UNAVAILABLE)
        assert "s3cret" not in str(error.as_json())
        assert "user" not in error.message
        assert "https://127.0.0.1:9/nowhere.git" in error.message


def test_reads_fetch_at_most_once_per_interval(
    served: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served
    now = [1000.0]
    policies = _store(url, tmp_path, clock=lambda: now[0])
    assert "newcomer" not in {p.name for p in policies.list(RPP)}
    repo.write({"policies/newcomer.yaml": yamlio.dump(_rpp("newcomer"))})
    repo.commit("a person's push")
    now[0] += 0.5
    assert "newcomer" not in {p.name for p in policies.list(RPP)}, "within the second"
    now[0] += 0.6
    assert "newcomer" in {p.name for p in policies.list(RPP)}


def test_the_etag_is_the_blob_id_git_computes(tmp_path: Path) -> None:
    data = "apiVersion: v1\n# ü\n"
    (tmp_path / "f").write_text(data, encoding="utf-8")
    assert snapshot.blob_id(data.encode()) == git(tmp_path, "hash-object", "f")


def test_a_tip_is_parsed_once_and_a_new_tip_reparses_only_changed_files(
    served: tuple[SourceRepo, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, url = served
    parsed: list[str] = []
    real = policyfile.served

    def counting(path: str, data: bytes) -> list[policyfile.Located]:
        parsed.append(path)
        return real(path, data)

    monkeypatch.setattr(policyfile, "served", counting)
    now = [0.0]
    policies = _store(url, tmp_path, clock=lambda: now[0])
    policies.list(RPP)
    files = sorted(parsed)
    assert files == sorted(f"policies/{p.name}" for p in (repo.work / "policies").iterdir())
    for _ in range(100):
        policies.get(RPP, "europe")
        now[0] += 0.1  # ten fetches of the same tip: nothing parsed again
    assert sorted(parsed) == files
    repo.write({"policies/newcomer.yaml": yamlio.dump(_rpp("newcomer"))})
    repo.commit("one more file")
    now[0] += 1
    assert policies.get(RPP, "newcomer").path == "policies/newcomer.yaml"
    assert parsed[len(files) :] == ["policies/newcomer.yaml"]


def test_reads_on_many_threads_during_writes_always_see_a_whole_tip(
    served: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    _, url = served
    policies = _store(url, tmp_path, fetch_interval=0.05)
    names = [f"r-{i}" for i in range(5)]
    done = threading.Event()
    seen: list[int] = []
    failures: list[BaseException] = []

    def read() -> None:
        while not done.is_set():
            try:
                listed = policies.list(PP)
                assert [p.name for p in listed] == sorted(p.name for p in listed)
                seen.append(len(listed))
            except BaseException as error:  # reported below, on the test's thread
                failures.append(error)
                return

    readers = [threading.Thread(target=read) for _ in range(4)]
    for reader in readers:
        reader.start()
    try:
        for name in names:
            policies.create(
                PP,
                {
                    "name": name,
                    "resourceType": "Job",
                    "namespace": "ml",
                    "targetClusters": ["eu-west-1"],
                },
                ALICE,
            )
    finally:
        done.set()
        for reader in readers:
            reader.join(timeout=60)
    assert failures == []
    assert seen, "the readers read"
    assert {p.name for p in policies.list(PP)} >= set(names)


def test_from_settings_reads_the_operators_settings(tmp_path: Path) -> None:
    credentials = tmp_path / "git-credentials"
    credentials.write_text("bot:s3cret\n")
    where = settings.Settings(
        repo="https://git.example.com/fleet.git",
        ref="prod",
        state_dir=tmp_path / "state",
        credentials_file=credentials,
        api_write_mode="branch",
        author_name="dro-bot",
        author_email="dro@example.com",
    )
    built = store.GitPolicyStore.from_settings(where)
    assert (built.remote_url, built.branch, built.mode) == (where.repo, "prod", "branch")
    assert store.GitPolicyStore.from_settings(where, mode="direct").mode == "direct"
    with pytest.raises(ValueError, match="needs --repo"):
        store.GitPolicyStore.from_settings(settings.Settings(path=tmp_path))


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"api_write_mode": "review"}, "--api-write-mode: 'review' is not direct or branch"),
        ({}, "DRO_API_WRITE_MODE: 'pr' is not direct or branch"),
    ],
)
def test_a_bad_write_mode_is_one_line_naming_where_it_came_from(
    given: dict[str, str], said: str
) -> None:
    table = settings.pick("api-write-mode")
    with pytest.raises(UsageError) as caught:
        settings.resolve(table, given, environ={"DRO_API_WRITE_MODE": "pr"})
    assert str(caught.value) == said
    assert settings.resolve(table, {}, environ={})["api_write_mode"] == "direct"
    assert settings.resolve(table, {}, environ={"DRO_API_WRITE_MODE": "Branch"}) == {
        "api_write_mode": "branch"
    }


def test_a_write_leaves_every_other_tree_entry_as_it_was(
    served: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served
    script = repo.work / "scripts/check.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    (repo.work / "docs").mkdir()
    (repo.work / "docs/latest").symlink_to("../README.md")
    before = repo.commit("a script and a link")
    written = _store(url, tmp_path).delete(RPP, "orders", ALICE, None)
    assert git(repo.bare, "diff", "--raw", "--no-abbrev", before, written.sha).split("\t")[1:] == [
        "policies/analytics.yaml"
    ]
    assert git(repo.bare, "ls-tree", written.sha, "scripts/check.sh").startswith("100755 ")
    assert git(repo.bare, "ls-tree", written.sha, "docs/latest").startswith("120000 ")


def test_a_name_defined_twice_is_not_changed_through_the_api(
    served: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served
    repo.write({"policies/team/orders.yaml": yamlio.dump(_rpp("orders"))})
    repo.commit("a second orders policy")
    policies = _store(url, tmp_path)
    assert [p.path for p in policies.list(RPP) if p.name == "orders"] == [
        "policies/analytics.yaml",
        "policies/team/orders.yaml",
    ]
    error = _error(lambda: policies.delete(RPP, "orders", ALICE, None))
    assert (error.status, error.code) == (409, model.POLICY_CONFLICT)
    assert "policies/analytics.yaml, policies/team/orders.yaml" in error.message
