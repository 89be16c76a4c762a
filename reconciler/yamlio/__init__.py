"""Safe YAML in and deterministic YAML out.

Reading: libyaml composes the node graph, and this module builds plain values from it, recording
the line of every node under its JSON pointer. It rejects what a hostile or careless commit can
carry: duplicate keys, alias bombs (too many alias expansions), tags other than YAML's own on
scalars, mappings and sequences, oversized files, and what `yamlguard` limits (nesting, numbers).
Timestamps stay strings, as kubectl keeps them; YAML 1.1's `=` value type reads as the string.
Writing: a narrow block-style emitter for plain JSON-like data (sorted keys, no aliases),
several times faster than PyYAML's representer, so the same value always gives the same bytes.

Called by 31 modules, among them `branch.driftfiles`, `cli.plan`, `kube.sealed`,
`live.difference`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import yaml

from reconciler.domain import Document, Origin
from reconciler.errors import Problem
from reconciler.yamlio import guard as yamlguard

MAX_FILE_BYTES = 4 * 1024 * 1024
"""Larger files are rejected unread: no manifest in a sane repo is this big."""
MAX_NODES_PER_FILE = 400_000
"""Nodes built from one file, aliases expanded; a billion-laughs file hits this early."""

_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_VALUE = "tag:yaml.org,2002:value"
"""YAML 1.1's `=` type: libyaml resolves a plain `=` to it; it reads as the string."""
_AS_WRITTEN = {_STR, _VALUE, "tag:yaml.org,2002:timestamp"}
_SCALAR_TAGS = {_NULL, "tag:yaml.org,2002:bool", yamlguard.INT_TAG, yamlguard.FLOAT_TAG, _STR}
_COLLECTION_TAGS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}
_Loader = yamlguard.Loader
escape_pointer_token = yamlguard.escape_pointer_token


class YamlError(Exception):
    """A file cannot be read as YAML; carries the `Problem` to report."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        super().__init__(str(problem))


class _Builder:
    """Turns composed nodes into plain values, recording pointer → line."""

    def __init__(self, path: str, constructor: Any) -> None:
        self.path = path
        self.constructor = constructor
        self.nodes_built = 0
        self.lines: dict[str, int] = {}

    def fail(self, node: yaml.Node, message: str, pointer: str = "") -> YamlError:
        line = node.start_mark.line + 1
        return YamlError(Problem(path=self.path, line=line, pointer=pointer, message=message))

    def build(self, node: yaml.Node, pointer: str, depth: int = 0) -> Any:
        self.nodes_built += 1
        if self.nodes_built > MAX_NODES_PER_FILE:
            raise self.fail(
                node, f"more than {MAX_NODES_PER_FILE} nodes after expanding aliases (alias bomb?)"
            )
        if depth > yamlguard.MAX_DEPTH:  # aliases can nest deeper than the composer saw
            outer = yamlguard.outer(pointer)
            line = self.lines.get(outer, node.start_mark.line + 1)
            message = f"nesting deeper than {yamlguard.MAX_DEPTH} levels"
            raise YamlError(Problem(path=self.path, line=line, pointer=outer, message=message))
        self.lines.setdefault(pointer, node.start_mark.line + 1)
        if isinstance(node, yaml.ScalarNode):
            return self.build_scalar(node, pointer)
        if node.tag not in _COLLECTION_TAGS:
            raise self.fail(node, f"unsupported YAML tag {node.tag}", pointer)
        if isinstance(node, yaml.MappingNode):
            return self.build_mapping(node, pointer, depth)
        return [self.build(item, f"{pointer}/{i}", depth + 1) for i, item in enumerate(node.value)]

    def build_mapping(self, node: yaml.MappingNode, pointer: str, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise self.fail(key_node, "merge keys (<<) are not supported")
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(key_node, "mapping keys must be scalars", pointer)
            key = self.key(key_node, pointer)
            if key in result:
                raise YamlError(
                    Problem(
                        path=self.path,
                        line=key_node.start_mark.line + 1,
                        pointer=f"{pointer}/{escape_pointer_token(key)}",
                        message=f"duplicate key {key!r} (first at line "
                        f"{self.lines.get(f'{pointer}/{escape_pointer_token(key)}', '?')})",
                    )
                )
            child = f"{pointer}/{escape_pointer_token(key)}"
            self.lines[child] = key_node.start_mark.line + 1
            result[key] = self.build(value_node, child, depth + 1)
        return result

    def key(self, node: yaml.ScalarNode, pointer: str) -> str:
        """A mapping key as text: as written, `null` for a null key (never a number, so a
        huge or odd numeric key cannot fail)."""
        tag = node.tag
        if tag not in _SCALAR_TAGS and tag not in _AS_WRITTEN:
            raise self.fail(node, f"unsupported YAML tag {tag}", pointer)
        return "null" if tag == _NULL else str(node.value)

    def build_scalar(self, node: yaml.ScalarNode, pointer: str) -> Any:
        tag = node.tag
        if tag in _AS_WRITTEN:
            return node.value
        if tag not in _SCALAR_TAGS:
            raise self.fail(node, f"unsupported YAML tag {tag}", pointer)
        try:
            value = self.constructor.construct_object(node, deep=True)
        except ValueError:  # Python's int-string limit (4,300 digits)
            value = None
        problem = yamlguard.number_problem(tag, value, node.value)
        if problem:
            raise self.fail(node, problem, pointer)
        return value


def parse_documents(path: str, data: bytes) -> list[Document]:
    """Parse every YAML document of one file, skipping empty ones.

    Raises `YamlError` with the file and line on any syntax or safety problem.
    """
    if len(data) > MAX_FILE_BYTES:
        raise YamlError(
            Problem(
                path=path,
                line=1,
                message=f"file is {len(data)} bytes, over the limit of {MAX_FILE_BYTES}",
            )
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlError(
            Problem(
                path=path,
                line=data[: exc.start].count(b"\n") + 1,
                message="file is not valid UTF-8",
            )
        ) from exc
    loader = _Loader(text)
    documents: list[Document] = []
    try:
        builder = _Builder(path, loader)
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            builder.lines = {}
            body = builder.build(node, "")
            if body is None:
                continue
            origin = Origin(path=path, line=node.start_mark.line + 1, lines=builder.lines)
            documents.append(Document(origin=origin, body=body))
    except yamlguard.TooDeep as exc:
        problem = Problem(path=path, line=exc.line, pointer=exc.pointer, message=str(exc))
        raise YamlError(problem) from None
    except yaml.MarkedYAMLError as exc:
        deep = _libyaml_too_deep(exc, text)
        if deep is not None:
            problem = Problem(path=path, line=deep.line, pointer=deep.pointer, message=str(deep))
            raise YamlError(problem) from None
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        message = f"malformed YAML: {_one_line(exc.problem or str(exc))}"
        raise YamlError(Problem(path=path, line=line, message=message)) from exc
    except yaml.reader.ReaderError as exc:  # a control character: libyaml gives its offset
        line = text[: exc.position].count("\n") + 1
        message = f"malformed YAML: {_one_line(exc.reason)} (#x{exc.character:04x})"
        raise YamlError(Problem(path=path, line=line, message=message)) from exc
    except yaml.YAMLError as exc:
        message = f"malformed YAML: {_one_line(str(exc))}"
        raise YamlError(Problem(path=path, line=1, message=message)) from exc
    finally:
        loader.dispose()
    return documents


def _one_line(text: str) -> str:
    """A parser's message on one line: a report line must not be split or forged."""
    return " ".join(text.split())


def load_own(path: str, data: bytes) -> Any:
    """Read back one document that dro itself wrote (its output branch): libyaml's safe
    loader, without the line tracking that user files get. The writer quotes every string
    YAML would read as another type, so the values come back exactly."""
    if len(data) > MAX_FILE_BYTES:
        raise YamlError(Problem(path=path, line=1, message="file is over the size limit"))
    try:
        return yaml.load(data, Loader=_Loader)  # _Loader is the safe loader
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: Python's int-string limit
        deep = _libyaml_too_deep(exc, data)
        reason = deep if deep is not None else exc
        raise YamlError(Problem(path=path, line=1, message=f"malformed YAML: {reason}")) from exc


def _libyaml_too_deep(exc: Exception, stream: str | bytes) -> yamlguard.TooDeep | None:
    """The depth guard's report for a stream libyaml refused for its own nesting limit."""
    if not isinstance(exc, yaml.MarkedYAMLError) or yamlguard.LIBYAML_DEPTH_ERROR not in str(exc):
        return None
    return yamlguard.too_deep(exc, stream)


_STR_TAG = _STR
_PLAIN = re.compile(r"[A-Za-z0-9_/](?:[A-Za-z0-9_./@+= -]*[A-Za-z0-9_./@+=-])?\Z")
_RESOLVER: Any = yaml.resolver.Resolver()
_STRINGS: dict[str, str] = {}
_MAX_CACHED = 200_000


def _string(text: str) -> str:
    """A string scalar: plain when YAML would read it back as the same string, else quoted.

    The plain form is allowed only for a conservative character set and only when PyYAML's own
    resolver types it as a string, so `yes`, `1.0`, `0x1F`, `null` or `2021-01-01` are quoted.
    Quoting uses JSON's double-quoted form, which is valid YAML.
    """
    cached = _STRINGS.get(text)
    if cached is not None:
        return cached
    if _PLAIN.match(text) and _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == _STR_TAG:
        result = text
    else:
        result = json.dumps(text, ensure_ascii=False)
        if not result.isprintable():
            result = "".join(_escape(char) for char in result)
    if len(_STRINGS) < _MAX_CACHED:
        _STRINGS[text] = result
    return result


def _escape(char: str) -> str:
    """YAML's \\u / \\U escape for a character a reader could mangle (U+2028, U+007F …)."""
    if char.isprintable():
        return char
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if value in (float("inf"), float("-inf")):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        if "." not in text and "e" in text:
            mantissa, exponent = text.split("e")
            text = f"{mantissa}.0e{exponent}"
        return text
    if isinstance(value, str):
        return _string(value)
    raise TypeError(f"cannot write {type(value).__name__} as YAML")


class Verbatim(str):
    """A block of lines that `dump` wrote as the value of a mapping key, cut out of its file
    unparsed (`cut_block`) and written back byte for byte at the same indentation."""

    __slots__ = ()


def cut_block(text: str, key: str, indent: int) -> tuple[str, Verbatim | None]:
    """Cut the block value of the first `key` at `indent` spaces out of a document `dump`
    wrote: (the text without it, the block). The block is the run of lines below the key
    indented deeper. (text, None) when the key holds no block there."""
    head = f"\n{' ' * indent}{key}:\n"
    start = text.find(head)
    if start < 0:
        return text, None
    body = start + len(head)
    deeper = " " * (indent + 2)
    end = body
    while text.startswith(deeper, end):
        newline = text.find("\n", end)
        end = len(text) if newline < 0 else newline + 1
    if end == body:
        return text, None
    return text[: start + 1] + text[end:], Verbatim(text[body:end])


def _is_container(value: Any) -> bool:
    kind = type(value)
    return kind is dict or kind is list or isinstance(value, (Mapping, tuple))


def _emit(value: Any, indent: int, out: list[str]) -> None:
    pad = " " * indent
    if type(value) is dict or isinstance(value, Mapping):
        for key in sorted(value, key=str):
            child = value[key]
            name = _string(key) if type(key) is str else _string(str(key))
            if type(child) is Verbatim:
                out.append(f"{pad}{name}:\n")
                out.append(child)
            elif child and _is_container(child):
                out.append(f"{pad}{name}:\n")
                _emit(child, indent + 2, out)
            else:
                out.append(f"{pad}{name}: {_leaf(child)}\n")
        return
    for item in value:
        if item and _is_container(item):
            nested: list[str] = []
            _emit(item, indent + 2, nested)
            nested[0] = f"{pad}- {nested[0][indent + 2 :]}"
            out.extend(nested)
        else:
            out.append(f"{pad}- {_leaf(item)}\n")


def _leaf(value: Any) -> str:
    """A scalar, or the flow form of an empty map or list."""
    if type(value) is str:
        return _string(value)
    if isinstance(value, Mapping):
        return "{}"
    if isinstance(value, (list, tuple)):
        return "[]"
    return _scalar(value)


def dump(value: Any) -> str:
    """One YAML document: block style, sorted keys, sequences indented under their key.

    The same value always gives the same text, and `parse_documents` reads it back equal.
    """
    if isinstance(value, (Mapping, list, tuple)):
        if not value:
            return _leaf(value) + "\n"
        out: list[str] = []
        _emit(value, 0, out)
        return "".join(out)
    return _scalar(value) + "\n"
