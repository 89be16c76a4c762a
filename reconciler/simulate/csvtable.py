"""A CSV series file read into columns: each distinct text checked and parsed once.

Called by `simulate.series`.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from operator import methodcaller
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
        lines = text.splitlines()
        expected = ",".join(wanted)
        try:
            header = next(csv.reader(lines[:1]), []) if lines else []
        except csv.Error as error:
            problem = Problem(path=shown, line=1, message=f"malformed CSV: {error}")
            raise ValidationFailed([problem]) from None
        names = [name.strip() for name in header]
        if not any(names):
            message = f"empty: the header {expected!r} is missing"
            raise ValidationFailed([Problem(path=shown, line=1, message=message)])
        if sorted(names) != sorted(wanted):
            message = f"header is {','.join(names)!r}; expected {expected!r} (in any order)"
            raise ValidationFailed([Problem(path=shown, line=1, message=message)])
        split = _quoted if '"' in text else _plain
        fields, at, bad = split(shown, lines, names)
        columns = dict(zip(names, fields, strict=True))
        return cls(path, columns, at, bad)

    def distinct(
        self, name: str, read: Callable[[str], Any], read_all: cells.ReadAll | None = None
    ) -> Column:
        """Factorise column `name`: each distinct text, stripped, is read once by `read`, which
        raises ValueError (its message the problem) for a bad one, or all at once by
        `read_all`; rows with a bad text are marked bad."""
        column = self.columns[name]
        raw = list(dict.fromkeys(column))
        stripped = [text.strip() for text in raw]
        texts = list(dict.fromkeys(stripped))
        index = {text: i for i, text in enumerate(texts)}
        of_raw = dict(zip(raw, (index[text] for text in stripped), strict=True))
        codes = np.fromiter(map(of_raw.__getitem__, column), dtype=np.int64, count=len(column))
        values, messages = (read_all or cells.each(read))(texts)
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


def _plain(
    path: str, lines: list[str], names: list[str]
) -> tuple[list[list[str]], list[int], list[Problem]]:
    """The columns of a CSV text without quotes (after its header), the line of each row, and
    the rows with another number of fields as problems; blank lines are skipped. The common
    case, every line with its fields, is split in one go."""
    body, width = lines[1:], len(names)
    commas = list(map(methodcaller("count", ","), body))
    bad: list[Problem] = []
    if commas.count(width - 1) == len(body):
        good, numbers = body, list(range(2, len(body) + 2))
    else:
        good, numbers = [], []
        for i, (line, count) in enumerate(zip(body, commas, strict=True)):
            if count == width - 1:
                good.append(line)
                numbers.append(i + 2)
            elif line.strip():
                message = f"{count + 1} fields; expected {width}: {','.join(names)}"
                bad.append(Problem(path=path, line=i + 2, message=message))
    flat = ",".join(good).split(",") if good else []
    return [flat[j::width] for j in range(width)], numbers, bad


def _quoted(
    path: str, lines: list[str], names: list[str]
) -> tuple[list[list[str]], list[int], list[Problem]]:
    """The same for a CSV text with quotes, read by Python's csv module."""
    reader = csv.reader(lines[1:])
    rows: list[list[str]] = []
    numbers: list[int] = []
    bad: list[Problem] = []
    width = len(names)
    while True:
        try:
            row = next(reader, None)
        except csv.Error as error:
            line = reader.line_num + 1
            bad.append(Problem(path=path, line=line, message=f"malformed CSV: {error}"))
            continue
        if row is None:
            break
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != width:
            message = f"{len(row)} fields; expected {width}: {','.join(names)}"
            bad.append(Problem(path=path, line=reader.line_num + 1, message=message))
            continue
        rows.append(row)
        numbers.append(reader.line_num + 1)
    fields = [list(column) for column in zip(*rows, strict=True)] if rows else [[] for _ in names]
    return fields, numbers, bad
