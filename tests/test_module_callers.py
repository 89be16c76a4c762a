"""Each module's docstring says who calls it, and says it truly (`scripts/callers.py`)."""

from __future__ import annotations

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CALLERS = runpy.run_path(str(ROOT / "scripts" / "callers.py"))


def test_every_module_names_its_callers() -> None:
    """A missing or stale "Called by" paragraph names its module and the paragraph it needs
    (`python scripts/callers.py --write` writes them)."""
    wrong = [f"{module}: {wanted}" for module, wanted in CALLERS["problems"]()]
    assert wrong == []


def test_a_stale_paragraph_is_caught() -> None:
    """Naming a module that does not import it, or leaving one out uncounted, is untrue."""
    agrees = CALLERS["agrees"]
    modules = frozenset({"pipeline", "review", "cli"})
    callers = frozenset({"pipeline", "review"})
    assert agrees("Called by `pipeline` and `review`.", callers, modules)
    assert not agrees("Called by `pipeline`.", callers, modules)
    assert not agrees("Called by `cli`, `pipeline` and `review`.", callers, modules)
    assert agrees("Called by 2 modules, among them `review`.", callers, modules)
    assert not agrees("Called by 3 modules, among them `review`.", callers, modules)
    assert not agrees(None, callers, modules)


def test_the_paragraph_counts_long_lists() -> None:
    """Past six importers, the paragraph names one per package and counts them all."""
    paragraph = CALLERS["paragraph"]
    many = frozenset({f"schedule.p{i}" for i in range(7)} | {"cli"})
    said = paragraph(many)
    assert said.startswith("Called by 8 modules, among them `cli`, `schedule.p0`")
    assert CALLERS["agrees"](said, many, many)
