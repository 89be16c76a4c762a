"""Keep each module docstring's "Called by" paragraph true to the import graph.

Every module of `reconciler` ends its docstring with the modules that import it, so a reader
knows who depends on what they are about to change. `python scripts/callers.py` reports the
modules whose paragraph is missing or wrong; `--write` rewrites those paragraphs. The test
`tests/test_module_callers.py` runs the same check. The import graph is grimp's, the library
under import-linter. Only the modules a package's map leaves out are exempt: packages whose
`__init__.py` holds nothing but their map.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "reconciler"
MOST_NAMED = 6
"""A module with more importers than this names a few of them and counts the rest."""
WIDTH = 96
_PARAGRAPH = re.compile(r"^Called by\b", re.M)
_NAME = re.compile(r"`([a-z_][a-z0-9_.]*)`")
_COUNT = re.compile(r"Called by (\d+) modules")


def short(module: str) -> str:
    """`reconciler.schedule.engine` → `schedule.engine`."""
    return module.removeprefix(PACKAGE + ".")


def source_of(module: str) -> Path:
    """The file that holds a module."""
    base = ROOT / module.replace(".", "/")
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def importers() -> dict[str, frozenset[str]]:
    """Module → the other modules of the package that import it directly (short names)."""
    graph = grimp.build_graph(PACKAGE)
    found = {}
    for module in sorted(m for m in graph.modules if m.startswith(PACKAGE + ".")):
        callers = graph.find_modules_that_directly_import(module) - {module}
        found[module] = frozenset(short(m) for m in callers)
    return found


def exempt(module: str) -> bool:
    """A package whose `__init__.py` is its map alone (a docstring, no code)."""
    path = source_of(module)
    if path.name != "__init__.py":
        return False
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return len(body) == 1 and isinstance(body[0], ast.Expr)


def paragraph(callers: frozenset[str]) -> str:
    """The "Called by" paragraph for these importers."""
    names = sorted(callers)
    if not names:
        return "Called by no module of the package: an entry point."
    if len(names) <= MOST_NAMED:
        listed = [f"`{n}`" for n in names]
        joined = listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]
        return f"Called by {joined}."
    roots: dict[str, str] = {}
    for name in names:
        roots.setdefault(name.split(".")[0], name)
    among = ", ".join(f"`{n}`" for n in sorted(roots.values())[:4])
    return f"Called by {len(names)} modules, among them {among}."


def stated(docstring: str) -> str | None:
    """The docstring's "Called by" paragraph, or None."""
    for block in docstring.split("\n\n"):
        if _PARAGRAPH.match(block.strip()):
            return " ".join(block.split())
    return None


def agrees(said: str | None, callers: frozenset[str], modules: frozenset[str]) -> bool:
    """Whether a stated paragraph is true: every module it names imports this one, and it
    names them all or counts them exactly."""
    if said is None:
        return False
    named = {n for n in _NAME.findall(said) if n in modules}
    if not named <= callers:
        return False
    if named == callers:
        return True
    count = _COUNT.search(said)
    return count is not None and int(count.group(1)) == len(callers)


def problems() -> Iterator[tuple[str, str]]:
    """(module, the paragraph it should have) for every module whose paragraph is not true."""
    graph = importers()
    modules = frozenset(short(m) for m in graph)
    for module, callers in graph.items():
        if exempt(module):
            continue
        docstring = ast.get_docstring(ast.parse(source_of(module).read_text(encoding="utf-8")))
        if not agrees(stated(docstring or ""), callers, modules):
            yield module, paragraph(callers)


def rewrite(module: str, wanted: str) -> None:
    """Replace (or append) the module docstring's "Called by" paragraph."""
    path = source_of(module)
    text = path.read_text(encoding="utf-8")
    node = ast.parse(text).body[0]
    assert isinstance(node, ast.Expr)
    assert isinstance(node.value, ast.Constant)
    lines = text.split("\n")
    start, end = node.lineno - 1, node.end_lineno or node.lineno
    inner = "\n".join(lines[start:end])
    quote = '"""'
    body = inner[inner.index(quote) + 3 : inner.rindex(quote)]
    blocks = [b for b in body.split("\n\n") if not _PARAGRAPH.match(b.strip())]
    wrapped = textwrap.fill(wanted, WIDTH)
    if len(blocks) == 1 and "\n" not in blocks[0].strip():
        blocks = [blocks[0].strip(), wrapped]
    else:
        blocks = [*[b.rstrip() for b in blocks[:-1]], blocks[-1].rstrip(), wrapped]
    new = quote + "\n\n".join(blocks) + "\n" + quote
    path.write_text("\n".join([*lines[:start], new, *lines[end:]]), encoding="utf-8")


def main(argv: list[str]) -> int:
    """Report (or with `--write`, fix) every untrue "Called by" paragraph."""
    sys.path.insert(0, str(ROOT))
    wrong = list(problems())
    for module, wanted in wrong:
        if "--write" in argv:
            rewrite(module, wanted)
        else:
            print(f"{source_of(module).relative_to(ROOT)}: {wanted}")
    return 1 if wrong and "--write" not in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
