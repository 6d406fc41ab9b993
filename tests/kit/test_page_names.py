"""Every dotted name of ``msapod`` or ``msapod_book`` that a page's code cells read
exists: a name moved or renamed in the library fails here, not in the book's build."""

import importlib
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[2] / "book"
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.M | re.S)
NAME = re.compile(r"(?<![\w.])(msapod(?:_book)?(?:\.[A-Za-z_]\w*)+)")
FROM = re.compile(r"^\s*from (msapod[\w.]*) import \(?([\w, ]+)\)?\s*(?:#.*)?$", re.M)


def _names(page: Path) -> set[str]:
    """The dotted names the page's code cells read, ``from m import a, b`` as ``m.a``, ``m.b``."""
    names = set()
    for cell in CELL.findall(page.read_text("utf-8")):
        names.update(NAME.findall(cell))
        for module, imported in FROM.findall(cell):
            names.update(f"{module}.{n.split(' as ')[0].strip()}" for n in imported.split(","))
    return {n for n in names if not n.endswith(".")}


def _resolve(dotted: str) -> None:
    """Import or get each part of ``dotted`` in turn; AssertionError naming the first
    part that is neither an attribute nor a submodule."""
    head, *parts = dotted.split(".")
    obj, path = importlib.import_module(head), head
    for part in parts:
        path = f"{path}.{part}"
        try:
            obj = getattr(obj, part)
        except AttributeError:
            try:
                obj = importlib.import_module(path)
            except ModuleNotFoundError:
                raise AssertionError(f"{dotted}: {path} does not exist") from None


PAGES = sorted(p for p in BOOK.glob("*.md") if CELL.search(p.read_text("utf-8")))


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_library_name_a_page_reads_exists(page):
    for dotted in sorted(_names(page)):
        _resolve(dotted)


def test_a_missing_name_is_named():
    with pytest.raises(AssertionError, match="msapod.data.no_such_name does not exist"):
        _resolve("msapod.data.no_such_name")
