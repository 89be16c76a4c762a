"""The README's reliability table names, for every case class, a test that exists.

A row whose test file, test function or bad-input case was renamed or removed would make the
table a promise nobody checks; this keeps each name in the table pointing at a real test.
"""

from __future__ import annotations

import re

from badinputs import CASES
from conftest import ROOT

SECTION = "## Reliability"


def reliability_rows() -> list[str]:
    text = (ROOT / "README.md").read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    return [line for line in text[start:end].splitlines() if line.startswith("| ")][2:]


def test_the_table_has_a_test_for_every_row() -> None:
    rows = reliability_rows()
    assert len(rows) >= 40
    for row in rows:
        assert re.search(r"`(?:e2e/)?test_[a-z_]+\.py|`badinputs\.py`", row.rsplit("|", 2)[-2]), row


def test_every_test_the_table_names_exists() -> None:
    named = 0
    known_cases = {case[0] for case in CASES}
    for row in reliability_rows():
        for file, function in re.findall(
            r"`((?:e2e/)?test_[a-z_]+\.py)(?:::(test_[a-z0-9_]+))?", row
        ):
            source = ROOT / "tests" / file
            assert source.exists(), f"{file} in the README's reliability table does not exist"
            if function:
                assert f"def {function}(" in source.read_text(), f"{file}::{function}"
            named += 1
        for cases in re.findall(r"`badinputs\.py` ((?:`[a-z0-9*-]+`(?:, )?)+)", row):
            for case in re.findall(r"`([a-z0-9-]+)`", cases):
                assert case in known_cases, f"bad-input case {case}"
    assert named >= 40
