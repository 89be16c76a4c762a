"""The habits every `dro` subcommand shares, as kubectl has them.

- A flag is taken only as written, never abbreviated (`--rep` is not `--repo`), as Go's flag
  package and so kubectl read flags; an unknown one gets "did you mean" (`Parser`).
- Usage errors exit 1: argparse's own 2 is the code `dro plan --exit-code` reserves for
  "differences found", so a CI job would read a typo as a plan to post (`Parser.error`).
- Global flags (`-v`, `-q`, `--log-format`) go before or after the subcommand: each subcommand
  repeats them with a suppressed default, so the value given anywhere wins (`add_globals`).
- A bool flag works bare (`--leader-elect`) and with a value (`--leader-elect=false`), as
  Go's flag package and so kubectl read them (`add_settings`, `settings.values.parse_bool`).
- The operator's settings are flags built from `settings.TABLE`, each showing its default and
  its environment variable (`add_settings`).
- Durations are shown as a user writes them, `60s`, never `60.0` (`durations.short`).

Called by `cli`, `cli.audit`, `cli.diff`, `cli.plan`, `cli.run` and `cli.simulate`.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Any, NoReturn

from reconciler import settings
from reconciler.cli import report
from reconciler.settings import LOG_FORMATS

OUTPUTS = ("json", "yaml", "table")
"""`-o` of every command that prints data (`plan` adds markdown and text)."""

USAGE_ERROR = 1
"""The exit code of a usage error: 1, as every other failure (2 means "differences found")."""


class Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors exit 1 with argparse's usage line on stderr,
    and which takes no abbreviated flag."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Print the usage and `dro COMMAND: error: MESSAGE` to stderr, then exit 1; a
        mistyped choice (`dro schedul`) or flag (`--repp`) gets kubectl's "did you mean"."""
        self.print_usage(sys.stderr)
        close = _closest(message, self)
        if close:
            message += f"; did you mean {close!r}?"
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")
_UNRECOGNIZED = re.compile(r"unrecognized arguments: (--?[^\s=]+)")


def _closest(message: str, parser: argparse.ArgumentParser) -> str | None:
    """What a mistyped command or the first unknown flag most likely meant: a command among
    those offered, a flag among the parser's and its subcommands' (the top parser reports a
    subcommand's unknown flags)."""
    wrong = _INVALID_CHOICE.search(message)
    if wrong:
        offered = re.findall(r"'([^']*)'", wrong.group(2))
        return next(iter(difflib.get_close_matches(wrong.group(1), offered, n=1)), None)
    unknown = _UNRECOGNIZED.search(message)
    if unknown is None:
        return None
    flags = set(parser._option_string_actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                flags.update(sub._option_string_actions)
    names = sorted(flag[2:] for flag in flags if flag.startswith("--"))
    close = difflib.get_close_matches(unknown.group(1).lstrip("-"), names, n=1, cutoff=0.7)
    return f"--{close[0]}" if close else None


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


def add_settings(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    table: Sequence[settings.Setting],
    *,
    convert: bool,
) -> None:
    """One flag per setting, each defaulting to None so that `settings.resolve` can tell a flag
    given from one not given. With `convert`, argparse converts a flag's value (a bad one is a
    usage error naming the flag); without, the value stays text for `settings.resolve`."""
    for setting in table:
        shown = setting.shown_default  # read when the parser is built: the XDG default
        help_text = setting.help + ("" if shown is None else f" (default: {shown})")
        help_text += f" [env {setting.env}]"
        typed = convert and setting.at_parse
        flag, parse = f"--{setting.name}", _argparse_type(setting) if typed else str
        if setting.is_bool:  # bare means true; `--leader-elect=false` still works
            const = setting.convert("true") if typed else "true"
            parser.add_argument(
                flag,
                dest=setting.dest,
                nargs="?",
                const=const,
                default=None,
                type=parse,
                metavar="true|false",
                help=help_text,
            )
            continue
        parser.add_argument(
            flag,
            dest=setting.dest,
            default=None,
            type=parse,
            metavar=setting.metavar,
            help=help_text,
        )


def _argparse_type(setting: settings.Setting) -> Callable[[str], Any]:
    """`setting.convert` for argparse: a ValueError is a usage error naming the flag."""

    def convert(text: str) -> Any:
        try:
            return setting.convert(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from error

    convert.__name__ = setting.convert.__name__
    return convert


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
