"""Safe YAML in and deterministic YAML out.

Reading: libyaml composes the node graph, and this module builds plain values from it, recording
the line of every node under its JSON pointer. It rejects what a hostile or careless commit can
carry: duplicate keys, alias bombs (too many alias expansions), custom tags and oversized files.
Timestamps stay strings, as kubectl keeps them. Writing: sorted keys, block style, no aliases,
so the same value always gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from reconciler.domain import Document, Origin
from reconciler.errors import Problem

MAX_FILE_BYTES = 4 * 1024 * 1024
"""Larger files are rejected unread: no manifest in a sane repo is this big."""
MAX_NODES_PER_FILE = 400_000
"""Nodes built from one file, aliases expanded; a billion-laughs file hits this early."""

_STR = "tag:yaml.org,2002:str"
_SCALAR_TAGS = {
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    _STR,
}
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class YamlError(Exception):
    """A file cannot be read as YAML; carries the `Problem` to report."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        super().__init__(str(problem))


def escape_pointer_token(token: str) -> str:
    """RFC 6901 escaping of one reference token."""
    return token.replace("~", "~0").replace("/", "~1")


class _Builder:
    """Turns composed nodes into plain values, recording pointer → line."""

    def __init__(self, path: str, constructor: Any) -> None:
        self.path = path
        self.constructor = constructor
        self.nodes_built = 0
        self.lines: dict[str, int] = {}

    def fail(self, node: yaml.Node, message: str) -> YamlError:
        return YamlError(Problem(path=self.path, line=node.start_mark.line + 1, message=message))

    def build(self, node: yaml.Node, pointer: str, depth: int = 0) -> Any:
        self.nodes_built += 1
        if self.nodes_built > MAX_NODES_PER_FILE:
            raise self.fail(
                node, f"more than {MAX_NODES_PER_FILE} nodes after expanding aliases (alias bomb?)"
            )
        if depth > 100:
            raise self.fail(node, "nesting deeper than 100 levels")
        self.lines.setdefault(pointer, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            return self.build_mapping(node, pointer, depth)
        if isinstance(node, yaml.SequenceNode):
            return [
                self.build(item, f"{pointer}/{i}", depth + 1) for i, item in enumerate(node.value)
            ]
        return self.build_scalar(node)

    def build_mapping(self, node: yaml.MappingNode, pointer: str, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise self.fail(key_node, "merge keys (<<) are not supported")
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(key_node, "mapping keys must be scalars")
            key = self.build_scalar(key_node)
            if not isinstance(key, str):
                key = key_node.value if key is not None else "null"
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

    def build_scalar(self, node: yaml.Node) -> Any:
        if node.tag == "tag:yaml.org,2002:timestamp":
            return node.value
        if node.tag not in _SCALAR_TAGS:
            raise self.fail(node, f"unsupported YAML tag {node.tag}")
        if node.tag == _STR:
            return node.value
        return self.constructor.construct_object(node, deep=True)


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
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise YamlError(
            Problem(path=path, line=line, message=f"malformed YAML: {exc.problem or exc}")
        ) from exc
    except yaml.YAMLError as exc:
        raise YamlError(Problem(path=path, line=1, message=f"malformed YAML: {exc}")) from exc
    finally:
        loader.dispose()
    return documents


def dump(value: Any) -> str:
    """One YAML document with sorted keys in block style; identical input gives identical text."""
    text: str = yaml.dump(
        value,
        Dumper=_Dumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=4096,
    )
    return text


def dump_all(values: list[Any]) -> str:
    """Several documents separated by `---`, each as `dump` writes it."""
    return "---\n".join(dump(v) for v in values)


def iter_pointers(value: Any, pointer: str = "") -> Iterator[str]:
    """Every JSON pointer in a value, parents before children (used by tests and messages)."""
    yield pointer
    if isinstance(value, dict):
        for key, child in value.items():
            yield from iter_pointers(child, f"{pointer}/{escape_pointer_token(str(key))}")
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from iter_pointers(child, f"{pointer}/{index}")
