"""Checks of the built site, run after ``jupyter-book build`` (CI and the Pages workflow).

Usage: ``python .ci/site_check.py _build/html``. Exit status 1 with one line per problem.

* every code cell that draws (matplotlib calls in its input) shows an image;
* no cell output holds a traceback, an error or a warning (stderr outputs included);
* the sidebar and the page titles hold no raw LaTeX (``\\(``, ``$``);
* every exercise (sphinx-exercise) has a solution that refers to it;
* every internal link resolves: the file exists and so does the ``#anchor`` in it;
* every verdict admonition (CSS classes ``verdict`` and ``claim-<id>``) starts (its title
  or its text) with one of the five verdict words, and that word is the scorecard's
  verdict for the claim (``results/scorecard.csv``): no page can disagree with it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

from bs4 import BeautifulSoup

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
    CARD.update(_scorecard())
    if len(argv) != 1:
        print("usage: python .ci/site_check.py BUILD_HTML_DIR", file=sys.stderr)
        return 2
    root = Path(argv[0]).resolve()
    if not (root / "index.html").is_file():
        print(f"{root}: expected a built site (no index.html)", file=sys.stderr)
        return 2
    pages = _pages(root)
    soups = {
        p.resolve(): BeautifulSoup(p.read_text(encoding="utf-8"), "html.parser") for p in pages
    }
    problems = []
    n_ex = n_fig = n_verdict = 0
    for page in pages:
        problems += check_page(root, page.resolve(), soups)
        n_verdict += len(soups[page.resolve()].select("div.verdict"))
        n_ex += len(soups[page.resolve()].select("div.exercise"))
        n_fig += len(soups[page.resolve()].select("div.cell_output img"))
    if n_verdict and not CARD:
        problems.append("verdict admonitions found but no results/scorecard.csv to compare")
    for p in problems:
        print(p)
    print(
        f"site check: {len(pages)} pages, {n_fig} figures, {n_ex} exercises, "
        f"{n_verdict} verdict admonitions, {len(problems)} problem(s)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
