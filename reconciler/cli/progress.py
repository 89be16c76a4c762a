"""The stage spinner of the CLI: on stderr, only when stderr is a terminal, and never in the way
of stdout.

rich's live display redirects `sys.stdout` into its own console by default, so with the
console on stderr a command's data (`dro schedule -o json > f`) went to the terminal and the
file stayed empty. Here stdout is left alone; the first write to it stops the spinner (a
transient line on the same terminal would otherwise be redrawn over the data). Log events
written to stderr while it spins are printed above it.

Called by `cli`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from reconciler import pipeline


class _StopOnWrite:
    """`sys.stdout` as it was, which stops the spinner before the first thing written to it."""

    def __init__(self, stream: TextIO, stop: Any) -> None:
        self._stream = stream
        self._stop = stop

    def write(self, text: str) -> int:
        """Stop the spinner (once), then write to the real stdout."""
        if self._stop is not None:
            stop, self._stop = self._stop, None
            stop()
        return self._stream.write(text)

    def writelines(self, lines: Iterable[str]) -> None:
        """`write` each line (so the first one stops the spinner, as `write` does)."""
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def spinner(enabled: bool) -> Iterator[pipeline.StageHook]:
    """A transient stage spinner on stderr when `enabled`; a hook that does nothing otherwise."""
    if not enabled:
        yield lambda _stage: None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    stdout = sys.stdout
    display = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        transient=True,
        console=Console(file=sys.stderr),
        redirect_stdout=False,
        redirect_stderr=True,
    )
    task = display.add_task("starting", total=None)
    sys.stdout = _StopOnWrite(stdout, display.stop)
    try:
        with display:
            yield lambda stage: display.update(task, description=str(stage))
    finally:
        sys.stdout = stdout
