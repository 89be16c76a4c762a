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
so that `dro validate` can print `FILE:LINE: POINTER: MESSAGE`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


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
        where = f"{self.path}:{self.line}"
        pointer = _one_line(self.pointer or "/")
        prefix = "warning: " if self.severity is Severity.WARNING else ""
        return f"{where}: {pointer}: {prefix}{_one_line(self.message)}"

    @property
    def sort_key(self) -> tuple[str, int, str, str]:
        """Order problems by file, line, pointer and message, for stable reports."""
        return (self.path, self.line, self.pointer, self.message)


def _one_line(text: str) -> str:
    """`text` with every unprintable character (newlines, U+2028 …) escaped, so a value
    quoted in a message cannot break a report line or forge another one."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


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
