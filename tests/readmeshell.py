"""The README's shell commands, read out of its code blocks and run as a user runs them.

A command is what a user pastes at a prompt: a line of a ```sh or ```bash block, or a `$ ` line
of a ```console block, with its `\\` continuations and a compound command (`for … done`) up to its
end, as bash itself decides (`bash -n`). Each block starts in the repository's root, as the
README reads; a `cd DIR` moves the rest of its block there.

A command runs through `bash -o pipefail -c`, either in a terminal (stdin and stdout on one
pseudo-terminal, stderr on another, both 80 columns wide, so the program sees what a user's
terminal shows it and the two streams stay apart) or through pipes. pipefail makes a failing
`dro … | jq` fail, where an interactive shell would report jq's status only.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

SHELL_LANGUAGES = ("sh", "bash", "console")
BLOCK = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
CD = re.compile(r"^cd\s+(\S+)$")
COLUMNS = 80
ROWS = 50


@dataclass(frozen=True)
class Command:
    """One command of the README: its text (trailing comment dropped), its block, its folder."""

    text: str
    block: int
    cwd: str  # relative to the repository's root; "." for the root


@dataclass(frozen=True)
class Outcome:
    """What running a command gave: its exit status and what it wrote to each stream."""

    status: int
    stdout: str
    stderr: str


def shell_blocks(markdown: str) -> list[tuple[str, str]]:
    """The (language, body) of every fenced block whose language is a shell's."""
    return [(m[1], m[2]) for m in BLOCK.finditer(markdown) if m[1] in SHELL_LANGUAGES]


def without_comment(line: str) -> str:
    """`line` without a trailing `# …` comment: a `#` after a blank, outside quotes."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[:index].rstrip()
    return line.rstrip()


def is_complete(source: str) -> bool:
    """Whether bash reads `source` as complete commands (no open quote, loop or `\\`)."""
    if source.endswith("\\"):
        return False
    done = subprocess.run(["bash", "-n", "-c", source], capture_output=True, check=False)
    return done.returncode == 0


def command_lines(language: str, body: str) -> list[str]:
    """The lines of a block that are input, not output or comments."""
    lines = body.splitlines()
    if language == "console":
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def commands(markdown: str) -> list[Command]:
    """Every command of every shell block, in the README's order."""
    found: list[Command] = []
    for block, (language, body) in enumerate(shell_blocks(markdown)):
        cwd = Path(".")
        pending: list[str] = []
        for line in command_lines(language, body):
            pending.append(without_comment(line))
            text = "\n".join(pending)
            if not is_complete(text):
                continue
            pending = []
            found.append(Command(text, block, cwd.as_posix()))
            moved = CD.match(text)
            if moved:
                cwd = cwd / moved[1]
        assert not pending, f"an unfinished command in shell block {block}: {pending}"
    return found


def run_through_pipes(text: str, cwd: Path, env: Mapping[str, str], timeout: float) -> Outcome:
    """Run `text` with stdout and stderr on pipes and stdin empty, as in `cmd | less`."""
    process = subprocess.Popen(
        ["bash", "-o", "pipefail", "-c", text],
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        out, err = process.communicate()
        return Outcome(-9, out.decode(errors="replace"), err.decode(errors="replace"))
    return Outcome(process.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


def _terminal() -> tuple[int, int]:
    """A pseudo-terminal of COLUMNS × ROWS: (master, slave)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    return master, slave


def _drain(master: int, into: bytearray) -> None:
    """Read a terminal's master side until every writer has closed the slave."""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: no process holds the slave any more
            return
        if not chunk:
            return
        into.extend(chunk)


def run_in_terminal(text: str, cwd: Path, env: Mapping[str, str], timeout: float) -> Outcome:
    """Run `text` with stdin and stdout on one terminal and stderr on another."""
    out_master, out_slave = _terminal()
    err_master, err_slave = _terminal()
    buffers = (bytearray(), bytearray())
    process = subprocess.Popen(
        ["bash", "-o", "pipefail", "-c", text],
        cwd=cwd,
        env={**env, "COLUMNS": str(COLUMNS), "LINES": str(ROWS), "TERM": "xterm-256color"},
        stdin=out_slave,
        stdout=out_slave,
        stderr=err_slave,
        start_new_session=True,
    )
    os.close(out_slave)
    os.close(err_slave)
    readers = [
        threading.Thread(target=_drain, args=(master, buffer), daemon=True)
        for master, buffer in zip((out_master, err_master), buffers, strict=True)
    ]
    for reader in readers:
        reader.start()
    try:
        status = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        status = process.wait()
    for reader in readers:
        reader.join(timeout=10)
    os.close(out_master)
    os.close(err_master)
    stdout, stderr = (bytes(b).decode(errors="replace").replace("\r\n", "\n") for b in buffers)
    return Outcome(status, stdout, stderr)


def redirect_targets(text: str) -> list[str]:
    """The files a command writes with `> FILE` (not `> /dev/null`, not `2>&1`)."""
    targets = re.findall(r"(?<![0-9&])>\s*([^\s&|;>]+)", text)
    return [target for target in targets if target != "/dev/null"]
