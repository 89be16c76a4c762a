"""Where each document of a multi-document YAML file sits in its text, so that one document can
be replaced or removed while every other byte of the file (other documents, comments,
separators) stays as it was.

`spans` lists the same documents as `yamlio.parse_documents` (empty and `null` documents are
left out), in order, as character offsets into the text. Call it only on text that
`parse_documents` accepted: the safety limits (size, nesting) are checked there.

Called by `service.api.policyfile`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

_NULL = "tag:yaml.org,2002:null"


@dataclass(frozen=True, slots=True, kw_only=True)
class Span:
    """One document of a file, as character offsets into its text."""

    head: int
    """Where the document begins: its `---` line, or its first node when it has none."""
    body: int
    """The start of the line holding the document's root node (or the node itself when text
    such as `---` comes before it on that line)."""
    end: int
    """Just after the document's last content character: trailing blank lines, comment lines
    and an `...` marker stay outside, with the next document."""


def _line_start(text: str, index: int) -> int:
    return max(text.rfind("\n", 0, index), text.rfind("\r", 0, index)) + 1


def _content_end(text: str, start: int, stop: int) -> int:
    """`stop` moved back over trailing lines that are blank, comments or `...`."""
    lines = text[start:stop].splitlines(keepends=True)
    while lines and (
        not lines[-1].strip() or lines[-1].lstrip().startswith("#") or lines[-1].strip() == "..."
    ):
        lines.pop()
    return start + len("".join(lines).rstrip("\r\n"))


def spans(text: str) -> list[Span]:
    """The span of every non-empty document of `text`, in order."""
    loader: Any = yaml.SafeLoader(text)  # the Composer's steps, one document at a time
    found: list[tuple[int, int, int, bool]] = []  # head, node start, node end, kept
    try:
        loader.get_event()  # the stream's start
        while not loader.check_event(yaml.StreamEndEvent):
            start = loader.get_event()
            node = loader.compose_node(None, None)
            loader.get_event()  # the document's end
            loader.anchors = {}
            kept = not (isinstance(node, yaml.ScalarNode) and node.tag == _NULL)
            found.append((start.start_mark.index, node.start_mark.index, node.end_mark.index, kept))
    finally:
        loader.dispose()
    result = []
    for number, (head, node_start, node_end, kept) in enumerate(found):
        if not kept:
            continue
        stop = found[number + 1][0] if number + 1 < len(found) else len(text)
        line = _line_start(text, node_start)
        body = line if not text[line:node_start].strip() else node_start
        end = _content_end(text, node_start, max(node_end, node_start))
        result.append(Span(head=head, body=body, end=min(max(end, node_start), stop)))
    return result
