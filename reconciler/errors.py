"""The exception tree of dro, and the `Problem` value that every error is made of.

```
DroError                      base; never raised directly
├── PermanentError            the input is wrong: report it, do not retry
│   ├── ValidationFailed      one or more `Problem`s found while loading or validating a source
│   └── UsageError            a bad flag or argument on the command line
└── TransientError            the world is briefly unavailable: retry with backoff
    ├── GitError              fetch, push or object-store trouble
    └── ClusterError          a Kubernetes API could not be reached
```

An expected outcome is a value, not an exception: an unschedulable workload is a `Decision`
with a diagnosis. Every `Problem` names the file and line, and a JSON pointer where one applies,
so that `dro validate` can print `FILE:LINE: POINTER: MESSAGE`. That is always one line: a path
with a control character, `"` or `\\` is printed in double quotes with C-style escapes, as git
prints paths (`"workloads/a\\nb.yaml":3: …`), and control characters in the pointer and the
message are escaped the same way, without quotes.

Called by 65 modules, among them `cli`, `commit`, `domain.base`, `git.gitrepo`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

_C_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    '"': '\\"',
    "\\": "\\\\",
}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NEEDS_QUOTES = re.compile(r'[\x00-\x1f\x7f-\x9f\u2028\u2029"\\]')


def _c_escape(char: str) -> str:
    """git's C-style escape of one character: `\\n`, `\\"` …, or octal bytes (`\\342\\200\\250`)."""
    known = _C_ESCAPES.get(char)
    return known or "".join(f"\\{byte:03o}" for byte in char.encode())


def quote_path(path: str) -> str:
    """`path` as git prints it (core.quotePath=false): unchanged, or in double quotes with
    C-style escapes when it holds a control character (a newline …), a `"` or a `\\`.

    So a file name can never start a second line that looks like `FILE:LINE`."""
    if not _NEEDS_QUOTES.search(path):
        return path
    return '"' + _NEEDS_QUOTES.sub(lambda match: _c_escape(match.group()), path) + '"'


def _escape(text: str) -> str:
    """`text` with its control characters C-escaped, so a problem is always one line."""
    return _CONTROL.sub(lambda match: _c_escape(match.group()), text)


def show(value: object) -> str:
    """A value as a message quotes it, in YAML's words: `null`, `true`, `false`, numbers as
    written, strings in single quotes, and lists and maps in flow style, never Python's
    `None`, `True` or `{'a': None}`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{show(k)}: {show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(show(item) for item in value) + "]"
    return repr(value)


class Severity(StrEnum):
    """How bad a problem is: an error fails the pass, a warning is only reported."""

    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    """One thing wrong with the source, located as precisely as the input allows."""

    path: str
    line: int
    pointer: str = ""
    message: str
    severity: Severity = Severity.ERROR

    def __str__(self) -> str:
        where = f"{quote_path(self.path)}:{self.line}"
        pointer = _escape(self.pointer or "/")
        prefix = "warning: " if self.severity is Severity.WARNING else ""
        return f"{where}: {pointer}: {prefix}{_escape(self.message)}"

    @property
    def sort_key(self) -> tuple[str, int, str, str]:
        """Order problems by file, line, pointer and message, for stable reports."""
        return (self.path, self.line, self.pointer, self.message)


class DroError(Exception):
    """Base of every error dro raises on purpose."""


class PermanentError(DroError):
    """The input is wrong; retrying without a new commit cannot help."""


class TransientError(DroError):
    """Something outside dro failed briefly; the same pass may succeed when retried."""


class ValidationFailed(PermanentError):
    """The source has errors. Carries every problem found in one pass, sorted."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(sorted(problems, key=lambda p: p.sort_key))
        errors = sum(1 for p in self.problems if p.severity is Severity.ERROR)
        super().__init__(f"{errors} validation error(s)")


class UsageError(PermanentError):
    """A command-line flag or argument is wrong."""


class GitError(TransientError):
    """A git operation (fetch, push, object lookup) failed."""


class ClusterError(TransientError):
    """A cluster's Kubernetes API could not be reached or answered with an error."""

    def __init__(self, cluster: str, message: str) -> None:
        self.cluster = cluster
        super().__init__(f"cluster {cluster}: {message}")
