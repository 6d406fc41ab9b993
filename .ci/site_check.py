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
  verdict for the claim (``results/scorecard.csv``): no page can disagree with it;
* every verdict word written next to a claim id ("C1 ... does not hold", a table's verdict
  cell in a claim's row) and every verdict box is the scorecard's verdict for that claim,
  in the column of the zoo the text names (:func:`verdict_text_problems`).

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
  cites in plain text ("Someone et al. 2020" outside a citation link);
* every figure of a page (an image of a cell output or of the text) sits in a
  ``<figure>`` with a caption, and its alt text describes it (not empty, not a file
  path);
* no output shows raw values (:func:`raw_values`): in a cell output or in text a page
  glues in (prose and code excluded), no numpy or Python repr (``np.``, ``array(``,
  ``{'``, ``['``, ``[(``, a printed array ``[ 3.  4.5]``), no missing value as
  ``nan``/``NaN``/``None``/``<NA>``, no number with more than :data:`MAX_DIGITS`
  significant digits, and no pandas elision (``...`` cells, "6 rows × 32 columns").
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
#: raw output (see :func:`raw_values`)
MAX_DIGITS = 6
REPR = re.compile(
    r"\bnp\.\w+|\barray\(|\{'|\['|\[\(|\bdtype[=:]|<xarray\."
    # a printed numpy array: numbers in brackets apart by spaces only ("[ 3.  4.5]")
    r"|\[\s*[-+]?\d+\.?\d*(?:[eE][-+]?\d+)?(?:\s+(?:[-+]?\d+\.?\d*(?:[eE][-+]?\d+)?|nan))+\s*\]"
    r"|\[\s*[-+]?\d+\.(?=\s)"
)
MISSING = re.compile(r"(?<![\w<-])(?:nan|NaN|None|<NA>|NaT)(?![\w>])(?! [A-Za-z])")
NUMBER = re.compile(r"(?<![\w.])(?:\d+\.\d+|\.\d+)(?:[eE][-+]?\d+)?(?!\w|\.\d)")
ELISION = re.compile(r"\d+ rows × \d+ columns")
IMAGE_PATH = re.compile(r"(^|/)[^\s/]+\.(png|jpe?g|svg|gif|webp)$|^\S*/\S*$", re.I)

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


def _digits(number: str) -> int:
    """Significant digits of a written decimal number: ``0.0012340`` -> 5."""
    mantissa = re.split(r"[eE]", number)[0].replace(".", "")
    return len(mantissa.lstrip("0")) or 1


def raw_values(text: str, *, missing: bool = True) -> list[str]:
    """The raw values in ``text``, each as written: numpy and Python reprs
    (:data:`REPR`), missing values written as ``nan``/``NaN``/``None``/``<NA>`` (not a
    word of a sentence: "NaN entries", "None of them" pass; only if ``missing``), and
    decimal numbers with more than :data:`MAX_DIGITS` significant digits."""
    hits = [m.group(0) for m in REPR.finditer(text)]
    if missing:
        hits += [m.group(0) for m in MISSING.finditer(text)]
    hits += [m.group(0) for m in NUMBER.finditer(text) if _digits(m.group(0)) > MAX_DIGITS]
    return hits


def _text_without(node, selectors: str) -> str:
    """The text of ``node`` without the elements that ``selectors`` match."""
    node = BeautifulSoup(str(node), "html.parser")
    for el in node.select(selectors):
        el.decompose()
    return node.get_text(" ")


def output_problems(name: str, soup: BeautifulSoup) -> list[str]:
    """The raw-output and figure checks of one page (see the module docstring), each line
    ``[style]``: outputs (cell outputs and glued values) hold no raw value, prose no repr
    or overlong number, no table is elided, every figure has a caption and an alt text."""
    article = soup.select_one("article") or soup.select_one("main") or soup
    out = []
    outputs = article.select("div.cell_output, span.pasted-text, span.pasted-inline")
    hits = []
    for o in outputs:
        hits += raw_values(_text_without(o, ".math, code.literal, script, style"))
        if ELISION.search(o.get_text(" ")) or any(
            c.get_text(strip=True) in ("...", "…") for c in o.select("td, th")
        ):
            out.append(f"[style] {name}: an output table is elided (pandas '...'; show it whole)")
    prose = _text_without(
        article,
        "div.cell_input, div.cell_output, span.pasted-text, span.pasted-inline, pre, code, "
        ".math, script, style, .bibliography, div.citation, a.reference.external",
    )
    hits += raw_values(prose, missing=False)
    if hits:
        shown = ", ".join(repr(h) for h in hits[:4]) + (", ..." if len(hits) > 4 else "")
        out.append(
            f"[style] {name}: {len(hits)} raw value(s) in outputs or text: {shown} "
            f"(format them: no reprs, no NaN/None, at most {MAX_DIGITS} significant digits)"
        )
    for k, img in enumerate(article.select("img"), 1):
        fig = img.find_parent("figure")
        caption = fig.select_one("figcaption") if fig is not None else None
        if caption is None or not caption.get_text(strip=True):
            out.append(f"[style] {name}: figure {k} has no caption")
        alt = (img.get("alt") or "").strip()
        if not alt or IMAGE_PATH.search(alt):
            out.append(f"[style] {name}: figure {k} has no alt text describing it ({alt!r})")
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


#: a claim id in text: C1..C10, the parts C6a/C6b, and the cited loss claim L where it is
#: marked as one ("(L)", "claim L", "L" alone in a table cell)
CLAIM_ID = re.compile(r"\b(C10|C[1-9][ab]?)\b|\(\s*(L)\s*[,)]|\bclaims? (L)\b")
#: a verdict word in any of its verb forms
VERDICT_PHRASE = re.compile(
    r"\b(?:(?:does|do|did) not hold|not testable(?: as stated)?|not significant"
    r"|(?:holds?|is|are) partly|partly|holds?)\b",
    re.I,
)
#: words that say a sentence is about another reading than the scorecard's (a rule's
#: definition, a conditional, a possibility or a guess, another N, specification, zoo or
#: the LLM's other depth mapping): such a sentence is not compared
OTHER_READING = re.compile(
    r"\b(?:readings?|specifications?|under|if|would|whether|instead|unless|another"
    r"|can|cannot|could|might|must|proportional)\b|\bN\s*=\s*\d",
    re.I,
)
#: a quoted passage: a verdict word in it is mentioned (what a report prints), not used
QUOTED = re.compile(r"“[^”]*”|\"[^\"]*\"")
DEFAULT_READING = re.compile(r"(?:book's )?default reading|main specification", re.I)
#: where text (or a table header) says which scorecard column it speaks of
COLUMN_MARKERS = {
    "llm_verdict": ("smollm", "llm"),
    "untrained": ("untrained", "random weights"),
    "shuffled": ("shuffled",),
    # the verdicts of one training snapshot (page 16): no scorecard column, not compared
    "training_step": ("training step",),
}
_TEXT_SKIP = "div.cell_input, pre, code, .math, script, style, div.verdict, nav, table"
_TOKEN = re.compile(rf"(?P<claim>{CLAIM_ID.pattern})|(?P<verdict>(?i:{VERDICT_PHRASE.pattern}))")


def _phrase_word(phrase: str) -> str:
    p = phrase.lower()
    if "not hold" in p:
        return "does not hold"
    if "testable" in p:
        return "not testable as stated"
    if "significant" in p:
        return "not significant"
    return "partly" if "partly" in p else "holds"


def _column(text: str, zoos: list[str]) -> str | None:
    """The scorecard column ``text`` names (a zoo, the LLM, untrained, shuffled), ``""``
    for none, None when it names several."""
    low = text.lower()
    found = {f"verdict_{z}" for z in zoos if z.lower() in low}
    found |= {c for c, words in COLUMN_MARKERS.items() if any(w in low for w in words)}
    if not found and re.search(r"\bzoo\b", low):
        found = {"verdict"}
    if len(found) > 1:
        return None
    return next(iter(found), "")


def _disagrees(card: dict, claim: str, column: str, word: str) -> str | None:
    """The scorecard's verdict when it disagrees with ``word`` (None when it agrees or the
    scorecard has none in that column)."""
    have = str(card.get(claim.lower(), {}).get(column, "")).strip().lower()
    if have in ("", "—", "-", "not applicable", "nan") or have.startswith(word):
        return None
    return have


def verdict_text_problems(name: str, soup: BeautifulSoup, card: dict) -> list[str]:
    """Verdict words printed next to a claim id that disagree with the scorecard.

    In every paragraph, list item and caption of the page (code, math and verdict boxes
    left out), each verdict word in any of its verb forms ("does not hold", "do not hold",
    "hold partly", "is not significant", ...) is read as the verdict of the claim ids
    written before it in the same clause (after the previous verdict word); in every table
    with a claim column, each cell that starts with a verdict word is the verdict of its
    row's claim. Each verdict box (``div.verdict``, class ``claim-<id>``) is compared too.
    The verdict is compared with ``card``'s column for the zoo the text names (``verdict``
    for the main zoo; ``verdict_<zoo>`` for another, ``llm_verdict`` for the LLM,
    ``untrained``, ``shuffled``), found in the clause, else in the table header or the
    nearest heading above. A clause about another reading (:data:`OTHER_READING`: a rule's
    definition, a conditional, another $N$) is not compared.

    Parameters
    ----------
    name
        The page, for the problem lines.
    soup
        The page's HTML.
    card
        Claim id (lower case) -> {column: verdict}, from ``results/scorecard.csv``
        (:func:`_scorecard_columns`).
    """
    if not card:
        return []
    zoos = sorted(
        {
            c.removeprefix("verdict_")
            for row in card.values()
            for c in row
            if c.startswith("verdict_")
        }
    )
    article = soup.select_one("article") or soup.select_one("main") or soup
    out = []

    def heading_column(node) -> str:
        h = node.find_previous(["h1", "h2", "h3"])
        return (_column(h.get_text(" "), zoos) or "") if h is not None else ""

    def report(claim, word, column, where):
        have = _disagrees(card, claim, column, word)
        if have is not None:
            col = "" if column == "verdict" else f" ({column})"
            out.append(f"{name}: {claim} is {word!r} in {where} but {have!r} on the scorecard{col}")

    # verdict boxes
    for div in article.select("div.verdict"):
        ids = [c[len("claim-") :] for c in div.get("class", []) if c.startswith("claim-")]
        body = " ".join(div.get_text(" ").split())
        title = div.select_one(".admonition-title")
        rest = body[len(" ".join(title.get_text(" ").split())) :] if title else body
        m = VERDICT_PHRASE.search(rest)
        if ids and m and m.start() < 3:
            first = re.split(r"(?<=[.:])\s", rest, maxsplit=1)[0]
            report(
                ids[0],
                _phrase_word(m.group(0)),
                _column(first, zoos) or "verdict",
                "its verdict box",
            )
    # prose: paragraphs, list items (their nested lists apart), captions
    for el in article.select("p, li, figcaption, dd"):
        if el.find_parent("table") is not None:
            continue
        if el.find_parent(class_=["cell_input", "verdict"]) is not None:
            continue
        if el.name == "li" and el.find("p") is not None:
            continue  # its paragraphs are read themselves
        node = BeautifulSoup(str(el), "html.parser")
        for sub in node.select(_TEXT_SKIP + ", ul, ol"):
            sub.decompose()
        text = QUOTED.sub("", " ".join(node.get_text(" ").split()))
        context = heading_column(el)
        for clause in re.split(r";|(?<=[.!?:])\s", text):
            if OTHER_READING.search(DEFAULT_READING.sub("", clause)):
                continue
            clause_col = _column(clause, zoos)
            pending, last = [], 0
            for m in _TOKEN.finditer(clause):
                if m.group("verdict") is None:
                    pending += [g for g in m.groups()[1:4] if g]
                    continue
                col = _column(clause[last : m.end()], zoos)
                column = col or clause_col
                column = context if column == "" else column
                for claim in pending if column is not None else []:
                    report(
                        claim,
                        _phrase_word(m.group("verdict")),
                        column or "verdict",
                        f"the text {clause[:80]!r}",
                    )
                pending, last = [], m.end()
    # tables: a claim column and verdict cells
    for table in article.select("table"):
        if table.find_parent(class_="verdict"):
            continue
        head_rows = table.select("thead tr")
        header = max(
            ([" ".join(c.get_text(" ").split()) for c in r.select("th, td")] for r in head_rows),
            key=lambda h: sum(bool(x) for x in h),
            default=[],
        )
        context = heading_column(table)
        for row in table.select("tbody tr"):
            cells = [" ".join(c.get_text(" ").split()).strip("* ") for c in row.select("th, td")]
            claim = next((c for c in cells if re.fullmatch(r"C10|C[1-9][ab]?|L", c)), None)
            if claim is None:
                continue
            for k, cell in enumerate(cells):
                m = VERDICT_PHRASE.match(cell)
                if not m:
                    continue
                head = header[k] if k < len(header) else ""
                if OTHER_READING.search(DEFAULT_READING.sub("", head)):
                    continue
                col = _column(head, zoos)
                if col is None:
                    continue
                column = col or context or "verdict"
                report(claim, _phrase_word(m.group(0)), column, f"a table ({head or 'column'})")
    return out


def _scorecard_columns() -> dict[str, dict[str, str]]:
    """Claim id (lower case) -> every verdict column of ``results/scorecard.csv``
    (``verdict``, ``verdict_<zoo>``, ``llm_verdict``, ``untrained``, ``shuffled``)."""
    import csv

    path = Path(__file__).resolve().parents[1] / "results" / "scorecard.csv"
    if not path.exists():
        return {}
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    keep = ("verdict", "llm_verdict", "untrained", "shuffled")
    return {
        r["claim"].lower(): {k: v for k, v in r.items() if k in keep or k.startswith("verdict_")}
        for r in rows
    }


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
    cards = _scorecard_columns()
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
        problems += verdict_text_problems(
            page.relative_to(root).as_posix(), soups[page.resolve()], cards
        )
        if args.style != "off":
            style += reading_problems(root, page.resolve(), soups[page.resolve()])
            style += output_problems(page.relative_to(root).as_posix(), soups[page.resolve()])
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
