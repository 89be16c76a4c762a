"""A CSV series file read into columns: each distinct text checked and parsed once.

Called by `simulate.series`.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from reconciler.errors import Problem, ValidationFailed
from reconciler.simulate import cells

IntArray = npt.NDArray[np.int64]


class Column:
    """A column factorised: the distinct texts, each row's code, and each text's parsed value."""

    def __init__(self, texts: list[str], codes: IntArray, values: npt.NDArray[Any]) -> None:
        self.texts = texts
        self.codes = codes
        self.values = values


class Table:
    """A CSV file read into columns of text, with each row's line, which rows are bad, and the
    problems found (the first `cells.MAX_PROBLEMS` of them, and how many more)."""

    def __init__(
        self, path: Path, columns: dict[str, list[str]], lines: list[int], problems: list[Problem]
    ) -> None:
        self.path = path
        self.columns = columns
        self.lines = np.array(lines, dtype=np.int64)
        self.bad = np.zeros(len(lines), dtype=bool)
        self.problems = problems
        self.more = 0

    @classmethod
    def read(cls, path: Path, wanted: Sequence[str]) -> Table:
        """Read `path`, whose header names exactly the `wanted` columns, in any order. A row
        with the wrong number of fields is a problem and left out."""
        shown = str(path)
        try:
            text = path.read_bytes().decode("utf-8-sig")
        except OSError as error:
            reason = error.strerror or str(error)
            problem = Problem(path=shown, line=1, message=f"cannot read: {reason}")
            raise ValidationFailed([problem]) from None
        except UnicodeDecodeError as error:
            problem = Problem(path=shown, line=1, message=f"not UTF-8 text ({error.reason})")
            raise ValidationFailed([problem]) from None
        rows, lines, bad = _rows(shown, text)
        expected = ",".join(wanted)
        if bad and bad[0].line == 1:
            raise ValidationFailed([bad[0]])
        if not rows:
            message = f"empty: the header {expected!r} is missing"
            raise ValidationFailed([Problem(path=shown, line=1, message=message)])
        names = [name.strip() for name in rows[0]]
        if lines[0] != 1 or sorted(names) != sorted(wanted):
            message = f"header is {','.join(names)!r}; expected {expected!r} (in any order)"
            raise ValidationFailed([Problem(path=shown, line=lines[0], message=message)])
        kept, at = rows[1:], lines[1:]
        width = len(names)
        if any(len(row) != width for row in kept):
            for row, line in zip(kept, at, strict=True):
                if len(row) != width:
                    message = f"{len(row)} fields; expected {width}: {','.join(names)}"
                    bad.append(Problem(path=shown, line=line, message=message))
            good = [i for i, row in enumerate(kept) if len(row) == width]
            kept, at = [kept[i] for i in good], [at[i] for i in good]
        fields = list(zip(*kept, strict=True)) if kept else [() for _ in names]
        columns = {name: list(fields[i]) for i, name in enumerate(names)}
        return cls(path, columns, at, bad)

    def distinct(self, name: str, read: Callable[[str], Any]) -> Column:
        """Factorise column `name`: each distinct text, stripped, is read once by `read`, which
        raises ValueError (its message the problem) for a bad one; rows with a bad text are
        marked bad."""
        column = self.columns[name]
        raw = list(dict.fromkeys(column))
        stripped = [text.strip() for text in raw]
        texts = list(dict.fromkeys(stripped))
        index = {text: i for i, text in enumerate(texts)}
        of_raw = dict(zip(raw, (index[text] for text in stripped), strict=True))
        codes = np.fromiter(map(of_raw.__getitem__, column), dtype=np.int64, count=len(column))
        values: list[Any] = []
        messages: dict[int, str] = {}
        for i, text in enumerate(texts):
            try:
                values.append(read(text))
            except ValueError as error:
                values.append(0)
                messages[i] = str(error)
        if messages:
            wrong = np.zeros(len(texts), dtype=bool)
            wrong[list(messages)] = True
            rows = np.flatnonzero(wrong[codes])
            self.bad[rows] = True
            shown = rows[: cells.MAX_PROBLEMS + 1].tolist()
            self.more += len(rows) - len(shown)
            for row in shown:
                line = int(self.lines[row])
                message = messages[int(codes[row])]
                self.problems.append(
                    Problem(path=str(self.path), line=line, pointer=f"/{name}", message=message)
                )
        return Column(texts, codes, np.array(values) if values else np.zeros(0))

    def steps(self) -> IntArray:
        """Each row's step, from the `step` column (whole numbers >= 0; 0 where bad)."""
        column = self.distinct("step", cells.step)
        result: IntArray = column.values.astype(np.int64)[column.codes]
        return result

    def raise_problems(self) -> None:
        """Raise `ValidationFailed` if any row was bad."""
        if self.problems:
            raise ValidationFailed(cells.capped(self.problems, self.more))


def _rows(path: str, text: str) -> tuple[list[list[str]], list[int], list[Problem]]:
    """The non-blank rows of a CSV text with their lines, and the malformed ones as problems.
    Without a quote in the text each line is split at its commas; with one, Python's csv
    module reads it."""
    lines = text.splitlines()
    if '"' not in text:
        rows = [line.split(",") for line in lines]
        numbers = [i + 1 for i, line in enumerate(lines) if line.strip()]
        return [rows[n - 1] for n in numbers], numbers, []
    reader = csv.reader(lines)
    found: list[list[str]] = []
    numbers = []
    bad: list[Problem] = []
    while True:
        try:
            row = next(reader, None)
        except csv.Error as error:
            bad.append(Problem(path=path, line=reader.line_num, message=f"malformed CSV: {error}"))
            continue
        if row is None:
            return found, numbers, bad
        if row and (len(row) > 1 or row[0].strip()):
            found.append(row)
            numbers.append(reader.line_num)
