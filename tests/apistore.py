"""An in-memory `model.PolicyStore` with the git store's semantics, for the REST API's route
tests, the schemathesis run and bench/api.py.

It keeps one "branch" of policy files in memory and answers as `GitPolicyStore` does: bodies in
the draft's forms (propagation policies as `{name, resourceType, targetClusters, namespace?}`,
the other two as whole documents), 400 INVALID_BODY for shape errors, 409 for a taken name,
If-Match compared strongly with the file's blob id (quotes optional, `W/` never matches, `*`
means "must exist"), 422 VALIDATION_FAILED with located problems, one commit per successful
write (`commits`), none on any error. The validation is a small stand-in for `dro validate`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import threading
from collections.abc import Mapping
from typing import Any

from reconciler.service.api import model
from tests.kubeapi.patches import merge_patch

BRANCH = "main"
GROUP_VERSION = "multicluster.io/v1alpha1"
NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
BODY_KEYS = {"name", "resourceType", "targetClusters", "namespace"}


def blob_id(data: bytes) -> str:
    """The git blob id of a file's bytes."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data, usedforsecurity=False).hexdigest()


def _invalid(message: str) -> model.ApiError:
    return model.ApiError(400, model.INVALID_BODY, message)


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise _invalid("the policy needs a name")
    if len(name) > 253 or ".." in name or not NAME.match(name):
        raise _invalid(f"{name!r} is not a lowercase DNS-1123 name")
    return name


class MemoryPolicyStore:
    """`model.PolicyStore` in memory; safe to call from several threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.files: dict[str, bytes] = {}
        self.index: dict[tuple[str, str], str] = {}  # (resource, name) -> path
        self.documents: dict[str, dict[str, Any]] = {}  # path -> served document
        self.commits: list[tuple[str, str]] = []  # (sha, message), oldest first
        self.tip = "0" * 40

    def _policy(self, resource: str, name: str) -> model.Policy:
        path = self.index[(resource, name)]
        return model.Policy(
            resource=resource,
            name=name,
            document=self.documents[path],  # replaced on each write, never changed in place
            etag=blob_id(self.files[path]),
            path=path,
        )

    def list(self, resource: str) -> list[model.Policy]:
        """Every policy of a resource, sorted by name."""
        with self.lock:
            names = sorted(n for r, n in self.index if r == resource)
            return [self._policy(resource, n) for n in names]

    def get(self, resource: str, name: str) -> model.Policy:
        """One policy, or 404."""
        with self.lock:
            return self._existing(resource, name)

    def _existing(self, resource: str, name: str) -> model.Policy:
        if (resource, name) not in self.index:
            kind = model.KINDS[resource]
            raise model.ApiError(
                404, model.POLICY_NOT_FOUND, f"no {kind} {name}", {"policyName": name}
            )
        return self._policy(resource, name)

    def create(self, resource: str, body: Mapping[str, Any], caller: model.Caller) -> model.Written:
        """A new policy: 400, 409, 422 or one commit."""
        with self.lock:
            name = self._shape(resource, body)
            if (resource, name) in self.index:
                raise model.ApiError(
                    409, model.POLICY_CONFLICT, "Policy name already exists", {"policyName": name}
                )
            path = f"policies/{name}.yaml"
            if path in self.files:
                path = f"policies/{model.KINDS[resource].lower()}-{name}.yaml"
            self._validate(resource, body, path)
            return self._write(resource, name, path, dict(body), caller, "create")

    def patch(
        self,
        resource: str,
        name: str,
        merge_patch_body: Mapping[str, Any],
        caller: model.Caller,
        if_match: str | None,
    ) -> model.Written:
        """A merge patch of the body form: 400, 404, 412, 422 or one commit."""
        with self.lock:
            current = self._existing(resource, name)
            self._precondition(current, if_match)
            patched = merge_patch(current.document, dict(merge_patch_body))
            if not isinstance(patched, dict):
                raise _invalid("the patched policy is not an object")
            if self._name_of(resource, patched) != name:
                raise _invalid("a PATCH cannot change the policy's name")
            self._validate(resource, patched, current.path)
            return self._write(resource, name, current.path, patched, caller, "patch")

    def delete(
        self, resource: str, name: str, caller: model.Caller, if_match: str | None
    ) -> model.Written:
        """Remove a policy: 404, 412 or one commit."""
        with self.lock:
            current = self._existing(resource, name)
            self._precondition(current, if_match)
            del self.files[current.path], self.documents[current.path]
            del self.index[(resource, name)]
            sha = self._commit(f"api: delete {model.KINDS[resource]} {name}", caller)
            return model.Written(sha=sha, branch=BRANCH, policy=None)

    @staticmethod
    def _name_of(resource: str, body: Mapping[str, Any]) -> object:
        if resource == "propagationpolicies":
            return body.get("name")
        metadata = body.get("metadata")
        return metadata.get("name") if isinstance(metadata, dict) else None

    def _shape(self, resource: str, body: Mapping[str, Any]) -> str:
        if resource != "propagationpolicies":
            kind = model.KINDS[resource]
            if body.get("apiVersion") != GROUP_VERSION or body.get("kind") != kind:
                raise _invalid(f"the body must be apiVersion {GROUP_VERSION}, kind {kind}")
        return _check_name(self._name_of(resource, body))

    @staticmethod
    def _precondition(current: model.Policy, if_match: str | None) -> None:
        if if_match is None or if_match.strip() == "*":
            return
        for given in if_match.split(","):
            tag = given.strip()
            if not tag.startswith("W/") and tag.strip('"') == current.etag:
                return
        raise model.ApiError(
            412,
            model.PRECONDITION_FAILED,
            "If-Match does not match the policy's current ETag",
            {"etag": current.etag},
        )

    @staticmethod
    def _validate(resource: str, document: Mapping[str, Any], path: str) -> None:
        problems: list[model.Problem] = []

        def problem(pointer: str, message: str) -> None:
            problems.append(model.Problem(path, 1, pointer, message))

        if resource == "propagationpolicies":
            for key in sorted(set(document) - BODY_KEYS):
                problem(f"/{key}", "unknown field")
            if not isinstance(document.get("resourceType"), str) or not document["resourceType"]:
                problem("/resourceType", "a kind such as Deployment is required")
            clusters = document.get("targetClusters")
            if not isinstance(clusters, list) or not clusters:
                problem("/targetClusters", "at least one cluster name is required")
            else:
                for index, cluster in enumerate(clusters):
                    if (
                        not isinstance(cluster, str)
                        or len(cluster) > 253
                        or not NAME.match(cluster)
                    ):
                        problem(f"/targetClusters/{index}", "not a cluster name")
            namespace = document.get("namespace")
            if "namespace" in document and (
                not isinstance(namespace, str) or len(namespace) > 63 or not NAME.match(namespace)
            ):
                problem("/namespace", "not a namespace name")
        else:
            if not isinstance(document.get("spec"), dict):
                problem("/spec", "spec must be an object")
            for key in sorted(set(document) - {"apiVersion", "kind", "metadata", "spec"}):
                problem(f"/{key}", "unknown field")
        if problems:
            raise model.ApiError(
                422,
                model.VALIDATION_FAILED,
                f"the change fails validation: {len(problems)} problem(s)",
                {"problems": [p.as_json() for p in problems]},
            )

    def _write(
        self,
        resource: str,
        name: str,
        path: str,
        document: dict[str, Any],
        caller: model.Caller,
        verb: str,
    ) -> model.Written:
        self.files[path] = json.dumps(document, sort_keys=True).encode() + b"\n"
        self.documents[path] = copy.deepcopy(document)
        self.index[(resource, name)] = path
        sha = self._commit(f"api: {verb} {model.KINDS[resource]} {name}", caller)
        return model.Written(sha=sha, branch=BRANCH, policy=self._policy(resource, name))

    def _commit(self, message: str, caller: model.Caller) -> str:
        state = json.dumps(sorted(self.files.items()), default=bytes.hex)
        self.tip = hashlib.sha1(
            f"{self.tip}\n{message}\n{caller.subject}\n{state}".encode(), usedforsecurity=False
        ).hexdigest()
        self.commits.append((self.tip, message))
        return self.tip
