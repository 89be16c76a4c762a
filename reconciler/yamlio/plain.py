"""Plain YAML files that are not source documents: `dro run`'s config file and kubeconfigs.

They are read with PyYAML's safe loader as they are (no line records, no source limits), and a
file that is not YAML is described as `line N, column M: PROBLEM`, without the excerpt of the
offending line that PyYAML's own message carries: a kubeconfig's token, for one. Called by
`cli.run` (the config file) and `kube.client` (kubeconfig contexts).

Called by `cli.run` and `kube.contexts`.
"""

from __future__ import annotations

from typing import Any

import yaml


class PlainYamlError(ValueError):
    """A file that is not YAML; its text says where and why, never quoting the file."""


def load(text: str) -> Any:
    """The one document in `text`, as plain values; PlainYamlError when it is not YAML."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise PlainYamlError(_problem(error)) from None


def _problem(error: yaml.YAMLError) -> str:
    """A YAML error without the excerpt of the file that PyYAML's own message quotes."""
    if isinstance(error, yaml.MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = error.problem or error.context or "malformed YAML"
        start = error.context_mark
        if error.problem and error.context and start is not None and start != mark:
            # PyYAML's fixed phrases ("while scanning a quoted scalar"), never file content
            problem += f" ({error.context} started at line {start.line + 1})"
        return f"{where}{problem}"
    return "malformed YAML"
