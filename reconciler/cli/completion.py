"""`dro completion bash|zsh|fish`: shell completion scripts generated from the argparse tree.

The scripts know every subcommand, every flag of each, the values of flags that have a fixed
set (`-o json|yaml|table`, `--log-format`), and complete file names for flags and arguments
that take a path. Because they are generated from the parser, a new flag completes without
anyone editing a script. zsh reads the bash script through its `bashcompinit` layer.

Called by `cli` for the `completion` command.
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass

FUNCTION = "_dro_complete"
"""The bash function `complete -F` names (tests call it to check a completion)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    """What a shell needs to know about one parser: its flags and their values."""

    name: str
    help: str
    flags: tuple[str, ...]
    value_flags: tuple[str, ...]
    """Flags that take a value (the next word is not a subcommand or a flag)."""
    choices: tuple[tuple[str, tuple[str, ...]], ...]
    """Flag → its fixed values."""
    positional_choices: tuple[str, ...]


def commands(parser: argparse.ArgumentParser) -> tuple[Command, list[Command]]:
    """The top parser and each subcommand, as the shells see them."""
    top = _command("", "", parser)
    subcommands = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                subcommands.append(_command(name, helps.get(name, ""), sub))
    return top, subcommands


def _command(name: str, help_text: str, parser: argparse.ArgumentParser) -> Command:
    flags: list[str] = []
    value_flags: list[str] = []
    choices: list[tuple[str, tuple[str, ...]]] = []
    positional: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            continue
        if not action.option_strings:
            positional += [str(c) for c in action.choices or ()]
            continue
        flags += action.option_strings
        if action.nargs != 0:
            value_flags += action.option_strings
            values = tuple(str(c) for c in action.choices or ())
            if action.const in (True, "true"):  # a bool flag that also works bare
                values = ("true", "false")
            if values:
                choices += [(flag, values) for flag in action.option_strings]
    return Command(
        name=name,
        help=help_text,
        flags=tuple(flags),
        value_flags=tuple(value_flags),
        choices=tuple(choices),
        positional_choices=tuple(positional),
    )


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script for `shell` (bash, zsh or fish)."""
    if shell == "fish":
        return _fish(parser)
    if shell == "zsh":
        return (
            "#compdef dro\n# dro completion for zsh: source <(dro completion zsh)\n"
            "autoload -U +X bashcompinit && bashcompinit\n" + _bash(parser)
        )
    return "# dro completion for bash: source <(dro completion bash)\n" + _bash(parser)


def _words(values: tuple[str, ...] | list[str]) -> str:
    return shlex.quote(" ".join(values))


def _bash(parser: argparse.ArgumentParser) -> str:
    top, subcommands = commands(parser)
    names = [c.name for c in subcommands]
    global_values = "|".join(top.value_flags) or "--"
    lines = [
        f"{FUNCTION}() {{",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"',
        '    local command="" i word',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        word="${COMP_WORDS[i]}"',
        '        case "$word" in',
        f"            {global_values}) ((i++)) ;;",
        "            -*) ;;",
        '            *) command="$word"; break ;;',
        "        esac",
        "    done",
        '    local flags="" values="" takes_value="" positional=""',
        '    case "$command" in',
    ]
    for command in (top, *subcommands):
        label = shlex.quote(command.name) if command.name else '""'
        lines.append(f"        {label})")
        lines.append(f"            flags={_words(command.flags)}")
        if command.value_flags:
            taking = "|".join(command.value_flags)
            lines.append(f'            case "$prev" in {taking}) takes_value=1 ;; esac')
        for flag, values in command.choices:
            lines.append(f'            [[ "$prev" == {flag} ]] && values={_words(values)}')
        positional = names if not command.name else list(command.positional_choices)
        lines.append(f"            positional={_words(positional)}")
        lines.append("            ;;")
    lines += [
        "    esac",
        '    if [[ -n "$values" ]]; then',
        '        COMPREPLY=($(compgen -W "$values" -- "$cur"))',
        '    elif [[ -n "$takes_value" ]]; then',
        '        COMPREPLY=($(compgen -f -- "$cur"))',
        '    elif [[ "$cur" == -* ]]; then',
        '        COMPREPLY=($(compgen -W "$flags" -- "$cur"))',
        '    elif [[ -n "$positional" ]]; then',
        '        COMPREPLY=($(compgen -W "$positional" -- "$cur"))',
        "    else",
        '        COMPREPLY=($(compgen -f -- "$cur"))',
        "    fi",
        "}",
        f"complete -o filenames -F {FUNCTION} dro",
        "",
    ]
    return "\n".join(lines)


def _fish(parser: argparse.ArgumentParser) -> str:
    top, subcommands = commands(parser)
    names = " ".join(c.name for c in subcommands)
    lines = ["# dro completion for fish: dro completion fish | source", "complete -c dro -f"]
    for command in subcommands:
        lines.append(
            f"complete -c dro -n '__fish_use_subcommand' -a {command.name} "
            f"-d {shlex.quote(command.help)}"
        )
    for command in (top, *subcommands):
        condition = (
            f"__fish_seen_subcommand_from {command.name}"
            if command.name
            else f"not __fish_seen_subcommand_from {names}"
        )
        chosen = dict(command.choices)
        for flag in command.flags:
            if not flag.startswith("--"):
                continue
            spec = f"complete -c dro -n {shlex.quote(condition)} -l {flag[2:]}"
            if flag in chosen:
                spec += f" -xa {_words(chosen[flag])}"
            elif flag in command.value_flags:
                spec += " -r -F"
            lines.append(spec)
        if command.positional_choices:
            lines.append(
                f"complete -c dro -n {shlex.quote(condition)} "
                f"-a {_words(list(command.positional_choices))}"
            )
    return "\n".join(lines) + "\n"
