"""The habits every `dro` subcommand shares, as kubectl has them.

- Usage errors exit 1: argparse's own 2 is the code `dro plan --exit-code` reserves for
  "differences found", so a CI job would read a typo as a plan to post (`Parser.error`).
- Global flags (`-v`, `-q`, `--log-format`) go before or after the subcommand: each subcommand
  repeats them with a suppressed default, so the value given anywhere wins (`add_globals`).
- A bool flag works bare (`--leader-elect`) and with a value (`--leader-elect=false`)
  (`add_bool`, `parse_bool`).
- Durations are shown as a user writes them, `60s`, never `60.0` (`durations.short`).

Called by `cli`, `cli_plan` and `cli_run` while they build the parser.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from importlib import metadata
from typing import Any, NoReturn

from reconciler.cli import report

LOG_FORMATS = ("console", "json")
OUTPUTS = ("json", "yaml", "table")
"""`-o` of every command that prints data (`plan` adds markdown and text)."""

USAGE_ERROR = 1
"""The exit code of a usage error: 1, as every other failure (2 means "differences found")."""


class Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors exit 1 with argparse's usage line on stderr."""

    def error(self, message: str) -> NoReturn:
        """Print the usage and `dro COMMAND: error: MESSAGE` to stderr, then exit 1; a
        mistyped choice (`dro schedul`) gets kubectl's "did you mean"."""
        self.print_usage(sys.stderr)
        wrong = _INVALID_CHOICE.search(message)
        if wrong:
            offered = re.findall(r"'([^']*)'", wrong.group(2))
            close = difflib.get_close_matches(wrong.group(1), offered, n=1)
            if close:
                message += f"; did you mean {close[0]!r}?"
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


def add_globals(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """`-v`, `-q` and `--log-format` on the top parser (`top`) and again on each subcommand.

    On a subcommand the defaults are suppressed: a flag given after the subcommand sets the
    value, and one given before it is not reset by the subcommand's own default.
    """

    def default(value: Any) -> Any:
        return value if top else argparse.SUPPRESS

    group = parser.add_argument_group("global flags (before or after the command)")
    group.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=default(False),
        help="log info events to stderr, and show the traceback of an internal error",
    )
    group.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=default(False),
        help="log errors only, and show no progress",
    )
    group.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default=default(None),
        help="how log events are written to stderr: console (for people; the default) or "
        "json (one object a line; the default of `dro run`) [env DRO_LOG_FORMAT]",
    )


def parse_bool(text: str) -> bool:
    """`true|false` (also `1|0`, `yes|no`, `on|off`, any case), as flags and env vars say it."""
    lowered = str(text).strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"{text!r} is not true or false")


def bool_type(text: str) -> bool:
    """`parse_bool` for argparse: a bad value is a usage error naming the flag."""
    try:
        return parse_bool(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def add_bool(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    flag: str,
    *,
    default: bool | None,
    help: str,
) -> None:
    """A bool flag that works bare (`--in-cluster` means true) and with a value
    (`--in-cluster=false`), as Go's flag package and so kubectl read them."""
    parser.add_argument(
        flag,
        nargs="?",
        const=True,
        default=default,
        type=bool_type,
        metavar="true|false",
        help=help,
    )


def add_info_commands(commands: Any, *, version: str) -> None:
    """`dro version` and `dro completion bash|zsh|fish`."""
    shown = commands.add_parser(
        "version",
        help="print the version of dro",
        description=f"Print the version of dro ({version}); `dro --version` says the same.",
    )
    shown.add_argument(
        "-o",
        "--output",
        choices=OUTPUTS,
        default="table",
        help="json, yaml or table (`dro VERSION`; the default)",
    )
    complete = commands.add_parser(
        "completion",
        help="print a shell completion script: bash, zsh or fish",
        description="Print the completion script of a shell, generated from dro's own flags. "
        "bash: `source <(dro completion bash)`; zsh: `source <(dro completion zsh)`; "
        "fish: `dro completion fish | source`.",
    )
    complete.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell")


def version() -> str:
    """dro's installed version (`0+unknown` when run from a tree that was never installed)."""
    try:
        return metadata.version("dro")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def show_version(args: argparse.Namespace, _hook: Any) -> int:
    """`dro version [-o json|yaml]`: `dro X.Y.Z`, as `dro --version` prints it."""
    if args.output == "table":
        sys.stdout.write(f"dro {version()}\n")
    else:
        report.write_document({"version": version()}, args.output)
    return 0
