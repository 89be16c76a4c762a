"""Safe YAML reading with line numbers, and deterministic writing."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler import yamlio
from reconciler.yamlio import guard


def test_lines_are_recorded_per_pointer() -> None:
    (doc,) = yamlio.parse_documents("f.yaml", b"a:\n  b: 1\n  c:\n    - x\n    - y: 2\n")
    assert doc.origin.line == 1
    assert doc.origin.line_of("/a/c/1/y") == 5
    assert doc.origin.line_of("/a/c/0") == 4
    assert doc.origin.line_of("/a/missing/deeper") == 1


def test_multiple_documents_keep_their_start_lines() -> None:
    docs = yamlio.parse_documents("f.yaml", b"a: 1\n---\n---\nb: 2\n---\n# only a comment\n")
    assert [d.origin.line for d in docs] == [1, 4]


def test_timestamps_stay_strings_and_booleans_are_yaml_1_1() -> None:
    (doc,) = yamlio.parse_documents("f", b"when: 2021-01-01\nflag: yes\nquoted: 'yes'\n")
    assert doc.body == {"when": "2021-01-01", "flag": True, "quoted": "yes"}


def test_nesting_up_to_the_limit_is_read() -> None:
    (doc,) = yamlio.parse_documents("f", b"a: " + b"[" * 100 + b"]" * 100 + b"\n")
    depth, value = 0, doc.body["a"]
    while value:
        depth, value = depth + 1, value[0]
    assert depth == 99  # the root is level 0, `a`'s list level 1, the innermost [] level 100


def test_the_depth_error_points_at_the_outer_levels_and_its_line() -> None:
    text = b"a: 1\nb:\n  c: [x, [y, " + b"[" * 200 + b"]" * 200 + b"]]\n"
    with pytest.raises(yamlio.YamlError) as error:
        yamlio.parse_documents("f.yaml", text)
    assert str(error.value.problem) == "f.yaml:3: /b/c/1/1: nesting deeper than 100 levels"


def test_integers_at_the_int64_bounds_and_odd_keys_are_read() -> None:
    text = b"a: 9223372036854775807\nb: -9223372036854775808\n99999999999999999999999: x\n.nan: y\n"
    (doc,) = yamlio.parse_documents("f", text)
    assert doc.body == {
        "a": 2**63 - 1,
        "b": -(2**63),
        "99999999999999999999999": "x",
        ".nan": "y",
    }


def test_yaml_1_1_value_type_reads_as_the_equals_sign() -> None:
    (doc,) = yamlio.parse_documents("f", b"a: =\n=: b\nc: !!map {d: !!seq [1]}\n")
    assert doc.body == {"a": "=", "=": "b", "c": {"d": [1]}}


def test_output_branch_files_are_read_with_the_same_depth_guard() -> None:
    with pytest.raises(yamlio.YamlError, match="nesting deeper"):
        yamlio.load_own("decisions/x.yaml", b"a: " + b"[" * 30000 + b"]" * 30000)
    with pytest.raises(yamlio.YamlError, match="malformed YAML"):
        yamlio.load_own("decisions/x.yaml", b"a: " + b"9" * 5000)


def test_keys_with_slashes_are_escaped_in_pointers() -> None:
    (doc,) = yamlio.parse_documents("f", b"m:\n  a/b~c: 1\n")
    assert doc.origin.line_of("/m/a~1b~0c") == 2


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        (b"a: 1\nb: 2\na: 3\n", 3, "duplicate key 'a' (first at line 1)"),
        (b"a: !!binary aGVsbG8=\n", 1, "unsupported YAML tag"),
        (b"? [a, b]\n: 1\n", 1, "mapping keys must be scalars"),
        (b"a: b: c\n", 1, "malformed YAML"),
        (b"a: " + b"[" * 30000 + b"]" * 30000 + b"\n", 1, "nesting deeper than 100 levels"),
        (b"- " * 30000 + b"x\n", 1, "nesting deeper than 100 levels"),
        (b"a: 1\nb:\n  c: [" + b"{k: " * 120 + b"1" + b"}" * 120 + b"]\n", 3, "deeper than 100"),
        (
            b"a: &a " + b"[" * 60 + b"1" + b"]" * 60 + b"\nb: " + b"[" * 60 + b"*a" + b"]" * 60,
            2,
            "deeper",
        ),
        (
            b"a:\n  b: " + b"9" * 5000 + b"\n",
            2,
            "integer 99999999999999999999…(5000 characters) is outside int64",
        ),
        (b"a: 9223372036854775808\n", 1, "integer 9223372036854775808 is outside int64"),
        (b"a: -0x8000000000000001\n", 1, "is outside int64"),
        (b"a:\n  - .nan\n", 2, ".nan is not a finite number"),
        (b"a: 1.0e+309\n", 1, "1.0e+309 is not a finite number"),
        (b"a: -.inf\n", 1, "-.inf is not a finite number"),
        (b"a: !!set {x, y}\n", 1, "unsupported YAML tag tag:yaml.org,2002:set"),
        (b"a: !!omap [x: 1]\n", 1, "unsupported YAML tag tag:yaml.org,2002:omap"),
        (b"a: !!python/object/apply:os.system [id]\n", 1, "tag:yaml.org,2002:python/object/apply"),
        (b"a:\n  b: !local {x: 1}\n", 2, "unsupported YAML tag !local"),
        (b"a: !local [1]\n", 1, "unsupported YAML tag !local"),
        (b"!local k: 1\n", 1, "unsupported YAML tag !local"),
    ],
)
def test_rejections_name_the_line(text: bytes, line: int, fragment: str) -> None:
    with pytest.raises(yamlio.YamlError) as error:
        yamlio.parse_documents("bad.yaml", text)
    assert error.value.problem.line == line
    assert error.value.problem.path == "bad.yaml"
    assert fragment in error.value.problem.message


values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(min_size=1, max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@given(value=st.dictionaries(st.text(min_size=1, max_size=8), values, max_size=6))
def test_dump_round_trips_and_is_deterministic(value: dict[str, object]) -> None:
    text = yamlio.dump(value)
    assert text == yamlio.dump(dict(reversed(list(value.items()))))
    parsed = yamlio.parse_documents("r", text.encode())
    assert (parsed[0].body if parsed else {}) == value


tricky = st.sampled_from(
    [
        "yes",
        "No",
        "on",
        "null",
        "~",
        "1.0",
        "0x1F",
        "1_000",
        "1:20",
        "2021-01-01",
        "-",
        "- a",
        "a: b",
        "a #b",
        "#x",
        "'q'",
        '"q"',
        " lead",
        "trail ",
        "",
        "=",
        "<<",
        "!tag",
        "&a",
        "*a",
        "@x",
        "%x",
        "`x",
        "|",
        ">",
        "[a]",
        "{a}",
        "a,b",
        "é",
        "\u2028",
        "tab\there",
        ".inf",
        ".5",
    ]
)


@settings(max_examples=300)
@given(
    value=st.dictionaries(
        st.one_of(tricky, st.text(min_size=1, max_size=8)), st.one_of(tricky, values), max_size=8
    )
)
def test_fast_emitter_round_trips_tricky_strings(value: dict[str, object]) -> None:
    parsed = yamlio.parse_documents("r", yamlio.dump(value).encode())
    assert (parsed[0].body if parsed else {}) == value


def test_emitter_style_is_kubectl_like() -> None:
    text = yamlio.dump({"b": [{"x": 1, "y": "two words"}], "a": {}, "c": "yes"})
    assert text == 'a: {}\nb:\n  - x: 1\n    y: two words\nc: "yes"\n'


def test_a_cut_block_is_written_back_byte_for_byte() -> None:
    document = {
        "kind": "PlacementDecision",
        "status": {
            "clusters": [{"name": "a", "replicas": 2}],
            "diagnosis": {"clusters": [{"name": "a", "scores": {"x": 1.5}}], "trigger": "yes"},
            "resource": {"name": "web"},
        },
    }
    text = yamlio.dump(document)
    rest, block = yamlio.cut_block(text, "diagnosis", 2)
    assert block is not None
    assert "diagnosis" not in rest
    assert "scores" in block
    assert "resource" in rest, "the keys after the block stay"
    read_back = yaml.safe_load(rest)
    read_back["status"]["diagnosis"] = block
    assert yamlio.dump(read_back) == text


def test_cut_block_leaves_a_document_without_the_block_alone() -> None:
    text = yamlio.dump({"status": {"diagnosis": {}, "name": "x"}})
    assert yamlio.cut_block(text, "diagnosis", 2) == (text, None)


DEEP_CASES = [
    "a: " + "[" * 1200 + "]" * 1200 + "\n",
    "a: 1\nb:\n  c: [x, [y, " + "[" * 1200 + "]" * 1202 + "\n",
    "k:\n" + "".join(" " * (2 * i) + f"- k{i}:\n" for i in range(1, 1100)),
    "- " * 1100 + "x\n",
    "{a: " * 1100 + "1" + "}" * 1100 + "\n",
]


@pytest.mark.parametrize("text", DEEP_CASES)
def test_libyamls_own_depth_error_gets_the_guards_report(text: str) -> None:
    """PyYAML 6.0.4's libyaml stops at 1,000 levels in its scanner, before the composer's
    guard: the report is found again from the events up to that point, and says what the
    guard says (line and pointer), whichever PyYAML release is installed."""
    with pytest.raises(yaml.YAMLError) as guarded:
        list(yaml.compose_all(text, Loader=guard.Loader))
    refused = _libyamls_refusal(text)
    found = guard.too_deep(refused, text)
    assert found is not None
    if isinstance(guarded.value, guard.TooDeep):
        assert (found.line, found.pointer) == (guarded.value.line, guarded.value.pointer)
    assert str(found) == "nesting deeper than 100 levels"


def _libyamls_refusal(text: str) -> yaml.MarkedYAMLError:
    """libyaml's own error for `text` where the installed release has the limit (0.2.6, in
    PyYAML 6.0.4); before it, the same error placed at the end, past every deep node."""
    plain = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        list(yaml.compose_all(text, Loader=plain))  # 1,200 levels: deep, yet no crash
    except yaml.MarkedYAMLError as error:
        if guard.LIBYAML_DEPTH_ERROR not in str(error):
            raise
        return error
    end = len(text) - 1
    mark = yaml.Mark("<unicode string>", end, 0, end, text, end)
    return yaml.scanner.ScannerError(None, None, "exceeded maximum nesting depth", mark)
