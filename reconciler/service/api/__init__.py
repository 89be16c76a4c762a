"""The REST API of `dro run`: the DRO-DS draft's endpoints as a front door to git.

Git stays the source of truth. A read serves the policy files at the tip of the source branch;
a write (POST, PATCH, DELETE) changes one policy document, validates the whole repository with
the change exactly as `dro validate` does, commits it with the caller from the JWT as author,
and pushes it compare-and-swap, to the source branch or to a new branch for review.

- `model`: the values and errors every part shares (the pinned interface).
- `store`: the git-backed policy store (reads, writes, validation, the push), with
  `bodies` (the API's bodies ↔ the documents in git), `policyfile` (finding a policy in its
  file and editing one document of it), `snapshot` (the tip, parsed once) and `trail` (the
  commits' trailers, read back by `dro audit`).
- `auth`: Bearer JWT verification and scopes.
- `routes`: the HTTP endpoints on the one server of `dro run`.
- `audit`: one event per request that changes state.

Called by `service.server` and `cli.run`.
"""
