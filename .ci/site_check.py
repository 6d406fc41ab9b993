"""Checks of the built site, run after ``jupyter-book build`` (CI and the Pages workflow).

Usage: ``python .ci/site_check.py _build/html [--style fail|report|off]``. Exit status 1
with one line per problem.

* every code cell that draws (matplotlib calls in its input) shows an image;
* no cell output holds a traceback, an error or a warning (stderr outputs included);
* the sidebar and the page titles hold no raw LaTeX (``\\(``, ``$``);
* every exercise (sphinx-exercise) has a solution that refers to it;
* every internal link resolves: the file exists and so does the ``#anchor`` in it;
* every verdict admonition (CSS classes ``verdict`` and ``claim-<id>``) starts (its title
  or its text) with one of the five verdict words, and that word is the scorecard's
  verdict for the claim (``results/scorecard.csv``): no page can disagree with it.

Reading checks (lines start with ``[style]``; ``--style report`` lists them without failing,
with the pages that fail each check, ``--style off`` skips them):

* no visible code cell is longer than :data:`MAX_CODE_LINES` lines (a cell whose input is
  hidden, ``hide-input``/``remove-input``, or that sits in a collapsed solution is not
  visible);
* no table outside a dropdown (a collapsed output, ``hide-output``, a ``{dropdown}`` or a
  collapsed solution) has more than :data:`MAX_TABLE_ROWS` rows, and no table anywhere
  shows a missing value as ``nan``/``NaN``/``<NA>``/``None``;
* no figure is scaled down at under :data:`MIN_DISPLAY_DPI` dpi: a PNG wider than its
  display (:data:`CONTENT_WIDTH` CSS pixels, the book's content column, or the ``width``
  the page gives it) is shown at ``dpi * displayed / natural`` dots per figure inch (its
  own dpi from the PNG ``pHYs`` chunk, 96 if absent); under 150 its text shrinks below the
  size it was drawn at (the figures of ``msapod.plots`` are drawn at the displayed size and
  never scaled);
* no page mentions ``PAPER.md`` (a file readers cannot open);
* every ``{cite}`` key of the book's sources is in ``book/references.bib``, and no page
  cites in plain text ("Someone et al. 2020" outside a citation link).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

from bs4 import BeautifulSoup

#: reading checks (see the module docstring)
MAX_CODE_LINES = 15
MAX_TABLE_ROWS = 30
MIN_DISPLAY_DPI = 150.0
CONTENT_WIDTH = 780
NAN_CELLS = {"nan", "NaN", "<NA>", "None", "NaT"}
PLAIN_CITATION = re.compile(r"\b[A-Z][A-Za-z-]+ et al\.?,? \(?(19|20)\d\d")
CITE_ROLE = re.compile(r"\{cite(?::[a-z]+)?\}`([^`]+)`")

VERDICTS = ("not testable as stated", "not significant", "does not hold", "partly", "holds")
DRAWS = re.compile(r"\b(plt\.|ax\.|axes\[|fig\.|\.plot\(|imshow|pcolormesh|subplots)")
BAD_OUTPUT = re.compile(r"Traceback \(most recent call last\)|\w+Error: |\w*Warning: |warn\(")


def _pages(root: Path) -> list[Path]:
    skip = {"_static", "_sources", "_images", "_sphinx_design_static", "_panels_static"}
    return sorted(p for p in root.rglob("*.html") if not skip & set(p.relative_to(root).parts))


def check_page(root: Path, page: Path, soups: dict[Path, BeautifulSoup]) -> list[str]:
    soup = soups[page]
    name = page.relative_to(root).as_posix()
    problems = []
    # figures and clean outputs
    for n, cell in enumerate(soup.select("div.cell"), 1):
        src = cell.select_one("div.cell_input")
        out = cell.select_one("div.cell_output")
        code = src.get_text() if src else ""
        if DRAWS.search(code) and "savefig" not in code:
            if out is None or not out.select("img"):
                problems.append(f"{name}: code cell {n} draws but shows no figure")
        if out is not None:
            for o in out.select("div.output"):
                classes = set(o.get("class", []))
                text = o.get_text()
                if "stderr" in classes and text.strip():
                    problems.append(
                        f"{name}: code cell {n} writes to stderr: {text.strip()[:80]!r}"
                    )
                elif "traceback" in classes or BAD_OUTPUT.search(text):
                    problems.append(f"{name}: code cell {n} output: {text.strip()[:80]!r}")
    # raw LaTeX in the navigation and the title
    for nav in soup.select("nav.bd-docs-nav, .bd-sidebar-primary nav"):
        if "\\(" in nav.get_text() or "$" in nav.get_text():
            problems.append(f"{name}: raw LaTeX in the sidebar: {nav.get_text()[:60]!r}")
            break
    title = soup.select_one("title")
    if title is not None and ("\\(" in title.get_text() or "$" in title.get_text()):
        problems.append(f"{name}: raw LaTeX in the page title {title.get_text()!r}")
    # exercises and their solutions
    exercises = [d.get("id") for d in soup.select("div.exercise") if d.get("id")]
    solved = set()
    for sol in soup.select("div.solution, details.solution"):
        for a in sol.select("a[href]"):
            solved.add(urlsplit(a["href"]).fragment)
    for ex in exercises:
        if ex not in solved:
            problems.append(f"{name}: exercise {ex!r} has no solution")
    # verdict admonitions agree with the scorecard
    for div in soup.select("div.verdict"):
        claim = [c[len("claim-") :] for c in div.get("class", []) if c.startswith("claim-")]
        title = div.select_one(".admonition-title")
        head = " ".join((title.get_text(" ") if title else "").split()).lower()
        body = " ".join(div.get_text(" ").split()).lower()[len(head) :].strip()
        word = next((v for v in VERDICTS if head.startswith(v) or body.startswith(v)), None)
        if not claim:
            problems.append(f"{name}: verdict admonition without a claim-<id> class")
        elif word is None:
            problems.append(f"{name}: verdict of {claim[0]} does not start with a verdict word")
        elif CARD and claim[0] not in CARD:
            problems.append(f"{name}: {claim[0]} has a verdict here but no scorecard row")
        elif CARD and not CARD[claim[0]].startswith(word):
            problems.append(
                f"{name}: {claim[0]} is {word!r} here but {CARD[claim[0]]!r} on the scorecard"
            )
    # internal links
    for a in soup.select("a[href]"):
        href = a["href"]
        parts = urlsplit(href)
        if parts.scheme or href.startswith(("mailto:", "//")):
            continue
        target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            problems.append(f"{name}: broken link {href!r} (no file {target})")
            continue
        frag = unquote(parts.fragment)
        if frag and target.suffix == ".html":
            if target not in soups:
                soups[target] = BeautifulSoup(target.read_text(encoding="utf-8"), "html.parser")
            if (
                soups[target].find(id=frag) is None
                and soups[target].find(attrs={"name": frag}) is None
            ):
                problems.append(f"{name}: broken anchor {href!r}")
    return problems


def _collapsed(node) -> bool:
    """``node`` sits in something a reader opens first: a ``<details>``, a dropdown, a
    collapsed output (``hide-output``) or a collapsed solution."""
    for parent in node.parents:
        classes = set(parent.get("class", []) or [])
        if parent.name == "details" or classes & {"dropdown", "toggle", "tag_hide-output"}:
            return True
        if "solution" in classes:
            return True
    return False


def _png_size_dpi(data: bytes) -> tuple[int, int, float] | None:
    """Width, height and dpi (``pHYs``; 96 if absent) of a PNG, from its bytes."""
    import struct

    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    width, height = struct.unpack(">II", data[16:24])
    dpi, pos = 96.0, 8
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        if kind == b"pHYs":
            ppu, _, unit = struct.unpack(">IIB", data[pos + 8 : pos + 17])
            if unit == 1 and ppu:
                dpi = ppu * 0.0254
            break
        if kind == b"IDAT":
            break
        pos += 12 + length
    return width, height, dpi


def _image_bytes(page: Path, src: str) -> bytes | None:
    import base64

    if src.startswith("data:image/png;base64,"):
        return base64.b64decode(src.split(",", 1)[1])
    parts = urlsplit(src)
    if parts.scheme or not parts.path.endswith(".png"):
        return None
    path = (page.parent / unquote(parts.path)).resolve()
    return path.read_bytes() if path.is_file() else None


def _display_width(img) -> float | None:
    for value in (img.get("width"), _style_width(img.get("style", ""))):
        if value and str(value).rstrip("px").replace(".", "", 1).isdigit():
            return float(str(value).rstrip("px"))
    return None


def _style_width(style: str) -> str | None:
    m = re.search(r"(?:^|;)\s*width\s*:\s*([\d.]+)px", style or "")
    return m.group(1) if m else None


def reading_problems(root: Path, page: Path, soup: BeautifulSoup) -> list[str]:
    """The reading checks of one page (see the module docstring), each line ``[style]``."""
    name = page.relative_to(root).as_posix()
    out = []
    for n, cell in enumerate(soup.select("div.cell"), 1):
        src = cell.select_one("div.cell_input")
        if src is None or "tag_hide-input" in cell.get("class", []) or _collapsed(src):
            continue
        if src.find_parent("details") is not None:
            continue
        pre = src.select_one("pre")
        lines = (pre.get_text() if pre else src.get_text()).rstrip("\n").count("\n") + 1
        if lines > MAX_CODE_LINES:
            out.append(
                f"[style] {name}: code cell {n} shows {lines} lines of code "
                f"(at most {MAX_CODE_LINES}; hide the rest or move it to the library)"
            )
    main = soup.select_one("main") or soup
    for t, table in enumerate(main.select("table"), 1):
        rows = table.select("tbody tr") or table.select("tr")
        cells = [c.get_text(strip=True) for c in table.select("td")]
        if len(rows) > MAX_TABLE_ROWS and not _collapsed(table):
            out.append(
                f"[style] {name}: table {t} shows {len(rows)} rows (at most "
                f"{MAX_TABLE_ROWS} outside a dropdown)"
            )
        bad = sorted({c for c in cells if c in NAN_CELLS})
        if bad:
            out.append(f"[style] {name}: table {t} shows missing values as {bad}")
    for k, img in enumerate(soup.select("div.cell_output img"), 1):
        data = _image_bytes(page, img.get("src", ""))
        info = _png_size_dpi(data) if data else None
        if info is None:
            continue
        width, _, dpi = info
        shown = _display_width(img) or min(width, CONTENT_WIDTH)
        if width > shown and dpi * shown / width < MIN_DISPLAY_DPI:
            out.append(
                f"[style] {name}: figure {k} is {width} px at {dpi:.0f} dpi, shown at "
                f"{shown:.0f} px: {dpi * shown / width:.0f} dpi (at least "
                f"{MIN_DISPLAY_DPI:.0f}; draw it at the displayed size)"
            )
    text = main.get_text(" ")
    if "PAPER.md" in text:
        out.append(f"[style] {name}: mentions PAPER.md (a file readers cannot open)")
    for node in main.find_all(string=PLAIN_CITATION):
        if node.find_parent("a") is None and node.find_parent(["pre", "code"]) is None:
            hit = PLAIN_CITATION.search(str(node)).group(0)
            out.append(
                f"[style] {name}: plain-text citation {hit!r} (cite it from the bibliography)"
            )
    return out


def citation_problems(repo: Path) -> list[str]:
    """``{cite}`` keys of ``book/*.md`` that ``book/references.bib`` does not define."""
    bib = repo / "book" / "references.bib"
    if not bib.is_file():
        return []
    keys = set(re.findall(r"@\w+\s*\{\s*([^,\s]+)\s*,", bib.read_text(encoding="utf-8")))
    out = []
    for src in sorted((repo / "book").glob("*.md")):
        for m in CITE_ROLE.finditer(src.read_text(encoding="utf-8")):
            for key in (k.strip() for k in m.group(1).split(",")):
                if key and key not in keys:
                    out.append(
                        f"[style] book/{src.name}: cites {key!r}, which is not in "
                        "book/references.bib"
                    )
    return out


#: claim id (lower case) -> scorecard verdict (lower case), from results/scorecard.csv
CARD: dict[str, str] = {}


def _scorecard() -> dict[str, str]:
    import csv

    path = Path(__file__).resolve().parents[1] / "results" / "scorecard.csv"
    if not path.exists():
        return {}
    with path.open(newline="", encoding="utf-8") as f:
        return {r["claim"].lower(): r["verdict"].lower() for r in csv.DictReader(f)}


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", help="the built site, e.g. _build/html")
    parser.add_argument(
        "--style",
        choices=("fail", "report", "off"),
        default="fail",
        help="reading checks: fail on them (default), list them without failing, or skip",
    )
    args = parser.parse_args(argv)
    CARD.update(_scorecard())
    root = Path(args.build).resolve()
    if not (root / "index.html").is_file():
        print(f"{root}: expected a built site (no index.html)", file=sys.stderr)
        return 2
    pages = _pages(root)
    soups = {
        p.resolve(): BeautifulSoup(p.read_text(encoding="utf-8"), "html.parser") for p in pages
    }
    problems, style = [], []
    n_ex = n_fig = n_verdict = 0
    for page in pages:
        problems += check_page(root, page.resolve(), soups)
        if args.style != "off":
            style += reading_problems(root, page.resolve(), soups[page.resolve()])
        n_verdict += len(soups[page.resolve()].select("div.verdict"))
        n_ex += len(soups[page.resolve()].select("div.exercise"))
        n_fig += len(soups[page.resolve()].select("div.cell_output img"))
    if args.style != "off":
        style += citation_problems(Path(__file__).resolve().parents[1])
    if n_verdict and not CARD:
        problems.append("verdict admonitions found but no results/scorecard.csv to compare")
    for p in problems + style:
        print(p)
    if style:
        per_page: dict[str, int] = {}
        for line in style:
            page = line.split(" ", 2)[1].rstrip(":")
            per_page[page] = per_page.get(page, 0) + 1
        print(
            "reading checks failed on: "
            + ", ".join(f"{p} ({n})" for p, n in sorted(per_page.items()))
        )
    failing = problems + (style if args.style == "fail" else [])
    print(
        f"site check: {len(pages)} pages, {n_fig} figures, {n_ex} exercises, "
        f"{n_verdict} verdict admonitions, {len(problems)} problem(s), "
        f"{len(style)} reading problem(s)"
        + (" (reported, not failing)" if args.style == "report" and style else "")
    )
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
