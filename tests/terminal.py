"""Run a shell command in a real pseudo-terminal of a given width, as a user's terminal runs it.

stdin, stdout and stderr are the terminal unless the command redirects them (`> file`, `| jq`),
so `isatty()` answers exactly as it does for a person. Returns the exit code and everything the
terminal showed.
"""

from __future__ import annotations

import os
import pty
import shlex
import signal
import sys
from pathlib import Path

DRO = str(Path(sys.executable).parent / "dro")


def run(command: str, *, columns: int = 100, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run `command` under bash in a pty `columns` wide (killed after 120 s)."""
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.environ.update(env or {})
        os.environ["COLUMNS"] = str(columns)
        os.environ["LINES"] = "40"
        os.environ.pop("NO_COLOR", None)
        script = f"stty cols {columns} rows 40; {command}"
        os.execvp("timeout", ["timeout", "120", "bash", "-c", script])
    shown = bytearray()
    try:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(fd)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:  # pragma: no cover
        os.kill(pid, signal.SIGKILL)
        raise
    return os.waitstatus_to_exitcode(status), shown.decode("utf-8", errors="replace")


def dro(*args: str) -> str:
    """`dro ARGS…` quoted for bash."""
    return " ".join(shlex.quote(a) for a in (DRO, *args))
