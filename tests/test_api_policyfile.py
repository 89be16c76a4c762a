"""One policy document edited inside its file: the other documents, comments and separators
keep their bytes, and the new document reads back as the body written."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler import yamlio
from reconciler.service.api import bodies, model, policyfile


def _bodies(text: str) -> list[Any]:
    return [d.body for d in yamlio.parse_documents("f.yaml", text.encode())]


def _doc(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "ClusterOverridePolicy",
        "metadata": {"name": name},
        "spec": {"resourceSelector": {"kind": "Deployment", "name": name}},
    }


TRICKY = [
    "# a comment\n\na: 1\n---\nb: 2\n",
    "--- {a: 1}  # flow, on the --- line\n# between\n---\nb: 2\n...\n",
    "---\n  a: 1\n  c: [1, 2]\n# tail of a\n---\n~\n---\nb: |\n  text\n  # not a comment\n",
    "a: 1\r\n---\r\nb: 2\r\n",
    "a: 1\n...\n---\nb: 2\n# end\n",
    "a: 1\n---\nb: 2",
]


@pytest.mark.parametrize("text", TRICKY)
def test_replacing_each_document_keeps_the_others(text: str) -> None:
    before = _bodies(text)
    for number in range(len(before)):
        after = policyfile.replaced(text.encode(), number, _doc("new")).decode()
        assert _bodies(after) == [*before[:number], _doc("new"), *before[number + 1 :]]


@pytest.mark.parametrize("text", TRICKY)
def test_removing_each_document_keeps_the_others(text: str) -> None:
    before = _bodies(text)
    for number in range(len(before)):
        after = policyfile.removed(text.encode(), number)
        assert after is not None
        assert _bodies(after.decode()) == [*before[:number], *before[number + 1 :]]


def test_removing_the_only_document_removes_the_file() -> None:
    assert policyfile.removed(b"# just this one\na: 1\n", 0) is None


def test_the_bytes_around_a_replaced_document_are_kept() -> None:
    text = "# head comment\napiVersion: x\nkind: A\n# between\n---\nb: 2   # kept\n"
    after = policyfile.replaced(text.encode(), 0, {"a": 1}).decode()
    assert after == "# head comment\na: 1\n# between\n---\nb: 2   # kept\n"


KEYS = st.sampled_from(["a", "b", "name", "spec", "x-y"])
VALUES = st.recursive(
    st.one_of(st.integers(-5, 5), st.text("abc #:-", max_size=5), st.booleans()),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=6,
)
DOCUMENTS = st.dictionaries(KEYS, VALUES, min_size=1, max_size=4)
COMMENTS = st.sampled_from(["", "# c\n", "\n", "# one\n\n# two\n"])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(COMMENTS, DOCUMENTS), min_size=1, max_size=4),
    st.data(),
)
def test_an_edit_changes_exactly_one_document(
    parts: list[tuple[str, dict[str, Any]]], data: st.DataObject
) -> None:
    text = "".join(
        ("" if i == 0 else "---\n") + comment + yamlio.dump(doc)
        for i, (comment, doc) in enumerate(parts)
    )
    documents = [doc for _, doc in parts]
    number = data.draw(st.integers(0, len(documents) - 1))
    replacement = data.draw(DOCUMENTS)
    after = policyfile.replaced(text.encode(), number, replacement).decode()
    assert _bodies(after) == [*documents[:number], replacement, *documents[number + 1 :]]
    cut = policyfile.removed(text.encode(), number)
    if len(documents) == 1:
        assert cut is None
    else:
        assert cut is not None
        assert _bodies(cut.decode()) == [*documents[:number], *documents[number + 1 :]]


def test_new_files_are_named_after_the_policy_then_its_kind() -> None:
    taken = ["policies/web.yaml", "policies/propagationpolicy-web.yaml"]
    assert policyfile.new_path([], "PropagationPolicy", "web") == "policies/web.yaml"
    assert policyfile.new_path(taken[:1], "PropagationPolicy", "web") == (
        "policies/propagationpolicy-web.yaml"
    )
    assert policyfile.new_path(taken, "PropagationPolicy", "web") == (
        "policies/propagationpolicy-web-2.yaml"
    )


def test_policies_are_found_in_any_file_under_policies_and_only_dros_kinds() -> None:
    text = (
        yamlio.dump(_doc("a"))
        + "---\n"
        + yamlio.dump({**_doc("b"), "apiVersion": "policy.karmada.io/v1alpha1"})
    )
    found = policyfile.served("policies/team/x.yaml", text.encode())
    assert [(f.resource, f.name, f.number) for f in found] == [("clusteroverridepolicies", "a", 0)]
    assert policyfile.served("workloads/x.yaml", text.encode()) == []
    assert policyfile.served("policies/.hidden.yaml", text.encode()) == []
    assert policyfile.served("policies/broken.yaml", b"a: [") == []


def test_merge_patch_follows_rfc_7396() -> None:
    # RFC 7396, appendix A, a few of its cases
    assert bodies.merge_patch({"a": "b"}, {"a": "c"}) == {"a": "c"}
    assert bodies.merge_patch({"a": "b"}, {"a": None}) == {}
    assert bodies.merge_patch({"a": [{"b": "c"}]}, {"a": [1]}) == {"a": [1]}
    assert bodies.merge_patch({"e": None}, {"a": 1}) == {"e": None, "a": 1}
    assert bodies.merge_patch({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}) == {"a": {"b": "d"}}
    assert bodies.merge_patch({}, {"a": {"bb": {"ccc": None}}}) == {"a": {"bb": {}}}


def test_a_patch_may_not_change_the_kind_of_a_document() -> None:
    with pytest.raises(model.ApiError) as caught:
        bodies.patched("clusteroverridepolicies", _doc("a"), {"kind": "Other"})
    assert (caught.value.status, caught.value.code) == (400, model.INVALID_BODY)


def test_a_body_nested_too_deep_is_400_before_anything_walks_it() -> None:
    deep: Any = "leaf"
    for _ in range(5000):
        deep = {"a": deep}
    for call in (
        lambda: bodies.document_from_body("propagationpolicies", {"name": "x", "spec": deep}),
        lambda: bodies.patched("clusteroverridepolicies", _doc("a"), {"spec": [deep]}),
    ):
        with pytest.raises(model.ApiError) as caught:
            call()
        assert (caught.value.status, caught.value.code) == (400, model.INVALID_BODY)
        assert "nested deeper than 100 levels" in caught.value.message
    shallow: Any = "leaf"
    for _ in range(90):
        shallow = {"a": shallow}
    document = bodies.document_from_body("propagationpolicies", {"name": "x", "deep": shallow})
    assert document["spec"]["deep"] == shallow
