"""The contexts a kubeconfig file, or a directory of them, defines: which file holds which
context. Read without the `kubernetes` package (a plain YAML read), so a process learns its
clusters' contexts without importing the client.

Called by `live`.
"""

from __future__ import annotations

from pathlib import Path

from reconciler.errors import UsageError
from reconciler.yamlio import plain


def kubeconfig_contexts(path: Path) -> dict[str, Path]:
    """Context name → the kubeconfig file that defines it. `path` is one kubeconfig file or a
    directory of them (a mounted Secret holds one file per key). A context defined in two
    files is an error naming both."""
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    found: dict[str, Path] = {}
    for file in files:
        for name in _context_names(file):
            if name in found:
                raise UsageError(f"context {name!r} is defined in both {found[name]} and {file}")
            found[name] = file
    return found


_NAMED: dict[str, tuple[bytes, tuple[str, ...]]] = {}
"""The context names of each kubeconfig file, by its path, with the bytes they were read
from: a long-running process reads the file each pass and parses it again only when it
changed."""


def _context_names(file: Path) -> tuple[str, ...]:
    """The names of the contexts `file` defines; UsageError when it is not a kubeconfig."""
    # the messages name the file and the line, never quote it: a kubeconfig holds tokens
    try:
        data = file.read_bytes()
        known = _NAMED.get(str(file))
        if known is not None and known[0] == data:
            return known[1]
        document = plain.load(data.decode("utf-8"))
    except OSError as error:
        raise UsageError(f"{file}: not a readable kubeconfig: {error.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{file}: not a readable kubeconfig: not UTF-8 text") from None
    except plain.PlainYamlError as error:
        raise UsageError(f"{file}: not a readable kubeconfig: {error}") from None
    contexts = document.get("contexts") if isinstance(document, dict) else None
    names = tuple(str(context.get("name", "")) for context in contexts or ())
    _NAMED[str(file)] = (data, names)
    return names
