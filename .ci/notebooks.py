"""The book's generated parts: ``python .ci/notebooks.py sync`` writes them from the pages
and the built site, ``python .ci/notebooks.py check`` fails (exit 1), naming the pages,
when one has drifted or the course plan breaks a rule, and ``python .ci/notebooks.py run``
runs every notebook top to bottom with nbclient, as Binder runs it.

* **The set-up cell.** The first cell of every page ``book/NN-*.md`` (a MyST notebook):
  outside a checkout (Colab) it installs msapod from the repository and ref of
  ``_config.yml`` (``repository.url``, ``repository.branch``: the ref the launch buttons
  open) and fetches the shipped results, verified
  (``msapod.studies.store.results.ensure_results``); in a checkout it does nothing. It is
  tagged ``remove-cell``, so the site does not show it.
* **The notebooks.** Beside each page a Jupyter notebook ``book/NN-*.ipynb``: the page as
  plain Jupyter (CommonMark and ``$``-math; glued values, numbered exercises, links to
  the site, folded solutions), written by the book's build (``_ext/msapod_notebooks.py``)
  into ``_build/html/_sources/book/`` (what the download button serves) and copied here by
  ``sync``. The theme's Colab and Binder buttons open a page's ``.ipynb`` when one lies
  beside its source (``check --html _build/html`` checks the built links); ``_config.yml``
  excludes the ``.ipynb`` files from the build, so each page is built (and executed) once,
  from its ``.md``, its one source. ``check`` finds a notebook written from an older page
  (its recorded digest, without a build), one that differs from the build (``--html``;
  a number computed live may differ in its last digit, :func:`same_text`), and Markdown
  that Jupyter would show as MyST syntax (:func:`myst_problems`).
* **Reading times.** Each page's "*About N minutes to read; the page runs in about S s.*"
  line: N is the words a reader of the site reads on the page (counted by the build,
  ``reading_words`` of the extension) at :data:`WORDS_PER_MINUTE`, rounded up to
  :data:`MINUTES_STEP` minutes (:func:`reading_minutes`); ``sync`` writes it into the page
  and its notebook. S is measured (the execution status page) and written by hand.
* **The time table** of ``book/teaching.md``, from each page's time line, with the rate.

Both also check the course plan of ``book/teaching.md``: no session holds more
stated reading (of pages not read in an earlier session) than its length, every page is
in the plan, the homework of a lecture is the third exercise of each of its pages, a
lab's exercises are on its pages, and every exercise the page names exists.

And that a page's notebook reads like the page (:func:`hidden_code`): the code a page
hides (cells tagged :data:`HIDDEN_TAGS`; a student who opens the notebook reads it all)
is fewer lines than the code it shows, and no hidden cell holds more than
:data:`MAX_HIDDEN_LINES` lines besides its imports (longer code belongs in the library,
where it is tested).
The set-up cell is not counted: it is the same on every page and does nothing in a
checkout.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the book's notebook writer (a Sphinx extension): the set-up cell's first line, the time
#: line and the page digest are its
_spec = importlib.util.spec_from_file_location(
    "msapod_notebooks", ROOT / "_ext" / "msapod_notebooks.py"
)
writer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(writer)

#: The extra that runs the pages (the set-up cell installs it).
EXTRA = "book"

#: The set-up cell; ``{requirement}`` is filled in by :func:`requirement`.
SETUP = (
    writer.SETUP_MARK
    + """
# In a checkout this does nothing.
import importlib.util
import subprocess
import sys

if importlib.util.find_spec("msapod") is None:
    package = "{requirement}"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", package], check=True)
    importlib.invalidate_caches()
from msapod.studies.store.results import ensure_results

ensure_results();"""
)

#: The first line of the set-up cell (how sync finds it again).
SETUP_MARK = writer.SETUP_MARK

#: The page's "learning objectives" time line.
TIME_LINE = writer.TIME_LINE
#: the reading rate of the stated reading times (words a minute), and their step (minutes)
WORDS_PER_MINUTE = 120
MINUTES_STEP = 5
#: where the build writes the pages' notebooks, in the built site
BUILT = Path("_sources")
TABLE_BEGIN = (
    "<!-- time table: written by `python .ci/notebooks.py sync` from the pages' "
    "learning objectives -->"
)
TABLE_END = "<!-- end of the time table -->"
#: cell tags that hide a cell's code on the site
HIDDEN_TAGS = frozenset({"remove-input", "hide-input", "remove-cell", "hide-cell"})
#: the longest hidden code cell (non-blank lines other than imports)
MAX_HIDDEN_LINES = 15
IMPORT = re.compile(r"(?:import|from)\s")
EX_REF = re.compile(r"\{ref\}`(ex-(\d\d)-(\d+))`")
PAGE_LINK = re.compile(r"\[[^\]]*\]\((\d\d)-[\w-]+\.md\)")

#: MyST syntax as it survives a CommonMark renderer (Jupyter's), and the site's scripts: a
#: pattern of the rendered HTML (math taken out) for each construct
MYST_LEFTOVERS = {
    "MyST role": re.compile(r"\{[a-z][\w:+.-]*\}<code>"),
    "MyST directive": re.compile(r'<code class="language-\{'),
    "MyST colon fence": re.compile(r"(?:^|>):{3,}", re.M),
    "MyST target": re.compile(r"<p>\([\w.:-]+\)=</p>"),
    "MyST directive option": re.compile(r"(?:^|<p>):[a-z][\w-]*: ", re.M),
    "MyST substitution": re.compile(r"\{\{"),
    "MyST cell break": re.compile(r"<p>\+\+\+"),
    "MyST comment": re.compile(r"<p>% "),
    "MyST glue": re.compile(r"\{glue"),
    "a site script": re.compile(r"<script|&lt;script"),
}


class Drift(Exception):
    """An input the generated parts cannot be made from: a page without its front matter,
    title or time line, a ``_config.yml`` without the repository, missing markers, a build
    older than the pages."""


def pages(root: Path = ROOT) -> list[Path]:
    """The numbered pages ``book/NN-*.md``, in order."""
    found = sorted((root / "book").glob("[0-9][0-9]-*.md"))
    if not found:
        raise Drift(f"{root / 'book'}: no pages NN-*.md")
    return found


def requirement(root: Path = ROOT) -> str:
    """What the set-up cell installs: the ``book`` extra of msapod from the repository and
    ref of ``_config.yml``."""
    import yaml

    config = yaml.safe_load((root / "_config.yml").read_text())
    repo = config.get("repository") or {}
    url, ref = repo.get("url"), repo.get("branch")
    if not (isinstance(url, str) and url.startswith("https://")) or not isinstance(ref, str):
        raise Drift(f"{root / '_config.yml'}: repository.url (https://...) and branch are needed")
    return f"msapod[{EXTRA}] @ git+{url.rstrip('/')}@{ref}"


def setup_block(root: Path = ROOT) -> str:
    """The set-up cell as MyST text (ends with a blank line)."""
    body = SETUP.replace("{requirement}", requirement(root))
    return f"```{{code-cell}} ipython3\n:tags: [remove-cell]\n\n{body}\n```\n\n"


def _split_front_matter(text: str, path: Path) -> tuple[str, str]:
    m = re.match(r"---\n.*?\n---\n", text, re.S)
    if m is None or "jupytext:" not in m.group(0):
        raise Drift(f"{path}: no jupytext front matter (a page is a MyST notebook)")
    return m.group(0), text[m.end() :]


def with_setup(text: str, path: Path, block: str) -> str:
    """The page ``text`` with ``block`` as its first cell (replacing an earlier one)."""
    head, body = _split_front_matter(text, path)
    rest = body.lstrip("\n")
    if rest.startswith("```{code-cell}") and SETUP_MARK in rest.split("\n```", 1)[0]:
        rest = rest.split("\n```", 1)[1].lstrip("\n")
    return head + "\n" + block + rest


def reading_minutes(words: int) -> int:
    """The stated reading time of ``words`` words: at :data:`WORDS_PER_MINUTE`, rounded up
    to a multiple of :data:`MINUTES_STEP` minutes."""
    if isinstance(words, bool) or not isinstance(words, int) or words < 0:
        raise ValueError(f"words: expected a count >= 0, got {words!r}")
    return MINUTES_STEP * max(1, math.ceil(words / WORDS_PER_MINUTE / MINUTES_STEP))


def with_minutes(text: str, where, minutes: int) -> str:
    """``text`` (a page, or a notebook cell's Markdown) with ``minutes`` in its time line."""
    m = TIME_LINE.search(text)
    if m is None:
        raise Drift(
            f"{where}: no '*About N minutes to read; the page runs in about S s.*' line in "
            "its learning objectives"
        )
    return text[: m.start("read")] + str(minutes) + text[m.end("read") :]


def built_notebook(html: Path, path: Path) -> dict:
    """The notebook the build wrote for the page ``path`` (``html``: the built site)."""
    built = html / BUILT / "book" / path.with_suffix(".ipynb").name
    if not built.is_file():
        raise Drift(f"{built}: no notebook (build the book: jupyter-book build .)")
    return json.loads(built.read_text(encoding="utf-8"))


def _record(nb: dict) -> dict:
    return nb.get("metadata", {}).get("msapod", {})


def notebook_for(built: dict, text: str, path: Path) -> dict:
    """The notebook of the page ``path`` (text ``text``) from the one its build wrote: the
    same, with the page's reading time (:func:`reading_minutes` of the words the build
    counted) in its time line. The build must be of this page (its digest)."""
    record = _record(built)
    if record.get("source_sha256") != writer.source_digest(text):
        raise Drift(
            f"{path.name}: the built notebook is of an older version of the page "
            "(build the book again: jupyter-book build .)"
        )
    minutes = reading_minutes(record["words"])
    nb = json.loads(json.dumps(built))
    cells = [{k: v for k, v in c.items() if k != "id"} for c in _cells(nb)]
    for cell in cells:
        if cell["cell_type"] == "markdown" and TIME_LINE.search(cell["source"]):
            cell["source"] = with_minutes(cell["source"], path.name, minutes)
            break
    nb["cells"] = writer.cell_ids(cells)  # as the build gives them from the cells' text
    return nb


def notebook_text(nb: dict) -> str:
    import nbformat

    return nbformat.writes(nbformat.from_dict(nb))


def _cells(nb: dict) -> list[dict]:
    """A notebook's cells as compared: sources as one string each (a file stores lines)."""
    return [
        {k: ("".join(v) if k == "source" and isinstance(v, list) else v) for k, v in c.items()}
        for c in nb.get("cells", [])
    ]


#: a number as a page prints it (whole, with a fraction, with an exponent)
NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _last_digit(number: str) -> float:
    """The place value of the last digit of a printed number (``8.0e-05``: ``1e-06``)."""
    mantissa, _, exponent = number.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def same_text(a: str, b: str) -> bool:
    """Whether two Markdown texts are the same, but for a number printed with a fraction or
    an exponent that differs by at most one unit in its last digit (a value computed
    live, rounded on another CPU); whole numbers must be equal."""
    if NUMBER.split(a) != NUMBER.split(b):
        return False
    for x, y in zip(NUMBER.findall(a), NUMBER.findall(b), strict=True):
        if x == y:
            continue
        if not re.search(r"[.eE]", x + y):
            return False
        if abs(float(x) - float(y)) > max(_last_digit(x), _last_digit(y)) * (1 + 1e-9):
            return False
    return True


def same_notebook(want: dict, have: dict) -> bool:
    """Whether the notebook ``have`` is the notebook ``want``: the same metadata and cells,
    code to the letter, Markdown by :func:`same_text` (cell ids follow the text)."""
    a, b = _cells(want), _cells(have)
    if want.get("metadata") != have.get("metadata") or len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        rest = ("cell_type", "metadata", "outputs", "execution_count")
        if any(x.get(k) != y.get(k) for k in rest):
            return False
        same = same_text if x["cell_type"] == "markdown" else str.__eq__
        if not same(x["source"], y["source"]):
            return False
    return True


def myst_problems(nb: dict, where: str) -> list[str]:
    """MyST syntax (or a site script) in the Markdown cells of ``nb``, rendered as Jupyter
    renders them (CommonMark with tables and ``$``-math): one line per construct and
    cell."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = MarkdownIt("commonmark").enable("table").use(dollarmath_plugin)
    math = re.compile(r'<(span|div) class="math[^"]*">.*?</\1>', re.S)
    problems = []
    for n, cell in enumerate(_cells(nb), 1):
        if cell["cell_type"] != "markdown":
            continue
        html = math.sub("", md.render(cell["source"]))
        for name, pattern in MYST_LEFTOVERS.items():
            m = pattern.search(html)
            if m:
                text = html[max(0, m.start() - 30) : m.end() + 30].replace("\n", " ")
                problems.append(f"{where}: cell {n}: {name} in its Markdown ({text!r})")
    return problems


def time_table(root: Path = ROOT) -> str:
    """The "time per page" table of the teaching page, from each page's time line, after a
    sentence stating the rule of the reading times."""
    rows = [
        f"Reading times count the words a reader of the site reads on the page (its text, "
        f"formulas, captions and shown outputs; not code or folded solutions) at "
        f"{WORDS_PER_MINUTE} words a minute, rounded up to {MINUTES_STEP} minutes.",
        "",
        "| page | to read | to run |",
        "|---|---|---|",
    ]
    for path, t in page_times(root).items():
        num = int(path.name[:2])
        label = f"{num} " if num else ""
        rows.append(
            f"| {label}[{t['title']}]({path.name}) | {t['read']} min | "
            f"{'about ' + t['run'] if t['run'] else '—'} |"
        )
    return "\n".join(rows)


def page_times(root: Path = ROOT) -> dict[Path, dict]:
    """Per page: its title and its stated reading (minutes) and run time (text or None)."""
    out = {}
    for path in pages(root):
        text = path.read_text()
        m = TIME_LINE.search(text)
        if m is None:
            raise Drift(
                f"{path.relative_to(root)}: no '*About N minutes to read; the page runs in "
                "about S s.*' line in its learning objectives"
            )
        title = _title(path)
        if title is None:
            raise Drift(f"{path.relative_to(root)}: no '# title' line")
        out[path] = {"title": title, "read": int(m["read"]), "run": m["run"]}
    return out


def _title(path: Path) -> str | None:
    """The page's title: the first ``# `` line outside its code cells."""
    body = _split_front_matter(path.read_text(), path)[1]
    prose = re.sub(r"^```\{code-cell\}.*?^```$", "", body, flags=re.M | re.S)
    m = re.search(r"^# (.+)$", prose, re.M)
    return m.group(1).strip() if m else None


def with_time_table(text: str, path: Path, table: str) -> str:
    if text.count(TABLE_BEGIN) != 1 or text.count(TABLE_END) != 1:
        raise Drift(f"{path}: expected the markers {TABLE_BEGIN!r} and {TABLE_END!r} once each")
    head, rest = text.split(TABLE_BEGIN)
    _, tail = rest.split(TABLE_END)
    return f"{head}{TABLE_BEGIN}\n{table}\n{TABLE_END}{tail}"


def exercises(root: Path = ROOT) -> dict[str, list[str]]:
    """Per page number ("05"), the labels of its exercises in order."""
    out = {}
    for path in pages(root):
        out[path.name[:2]] = re.findall(r"```\{exercise\}\n:label: (\S+)", path.read_text())
    return out


def _plan_tables(text: str) -> list[list[dict]]:
    """The course plan tables (header ``| session | ... | pages | ...``), each a list of
    rows (column name -> cell text)."""
    tables, header = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = [c.lower() for c in cells]
            if "session" in header and "pages" in header:
                tables.append([])
            continue
        if set(line) <= set("|-: ") or "session" not in header or "pages" not in header:
            continue
        tables[-1].append(dict(zip(header, cells, strict=False)))
    return tables


def _linked_pages(cell: str) -> list[str]:
    """Page numbers linked in a table cell; ``[9](09-...)–[14](14-...)`` is a range."""
    found = []
    for part in re.split(r"\s*,\s*|\s+and\s+", cell):
        nums = PAGE_LINK.findall(part)
        if len(nums) == 2 and "–" in part:
            found += [f"{n:02d}" for n in range(int(nums[0]), int(nums[1]) + 1)]
        else:
            found += nums
    return found


def plan_problems(root: Path = ROOT) -> list[str]:
    """What is wrong with the course plan of ``book/teaching.md`` (empty: nothing)."""
    path = root / "book" / "teaching.md"
    text = path.read_text()
    where = path.relative_to(root)
    minutes = re.search(r"lectures of (\d+) minutes and \w+ labs of (\d+) minutes", text)
    if minutes is None:
        return [f"{where}: no 'N lectures of M minutes and K labs of M minutes' sentence"]
    length = {"lecture": int(minutes[1]), "lab": int(minutes[2])}
    times = {p.name[:2]: t["read"] for p, t in page_times(root).items()}
    exs = exercises(root)
    labels = {lab for page in exs.values() for lab in page}
    problems = [
        f"{where}: {{ref}}`{ref}` names no exercise"
        for ref, _, _ in EX_REF.findall(text)
        if ref not in labels
    ]
    tables = _plan_tables(text)
    if not tables:
        return [*problems, f"{where}: no course plan table (| session | ... | pages | ...)"]
    for n, rows in enumerate(tables):
        read = _plan_problems(rows, length, times, exs, where, problems)
        missing = sorted(set(times) - read)
        if n == 0 and missing:  # the first table is the full course
            problems.append(
                f"{where}: pages {[int(p) for p in missing]} are in no session of the plan"
            )
    return problems


def _plan_problems(rows, length, times, exs, where, problems) -> set[str]:
    """Check one plan table's rows (appending to ``problems``); the pages it reads."""
    read: set[str] = set()
    for row in rows:
        session = re.sub(r"[*]", "", row["session"])
        kind = "lab" if re.search(r"\blab\b", session) else "lecture"
        listed = _linked_pages(row["pages"])
        new = [p for p in listed if p not in read]
        read.update(listed)
        total = sum(times.get(p, 0) for p in new)
        if total > length[kind]:
            problems.append(
                f"{where}: {session}: {total} minutes of stated reading (pages "
                f"{', '.join(str(int(p)) for p in new)}) in a {length[kind]}-minute {kind}"
            )
        for ref, page, _ in EX_REF.findall(row.get("lab exercises", "")):
            if page not in listed:
                problems.append(f"{where}: {session}: {ref} is not on one of its pages")
            elif ref in exs.get(page, [])[2:3]:
                problems.append(f"{where}: {session}: {ref} is homework (a third exercise)")
        if "homework" not in row:
            continue
        homework = {ref for ref, _, _ in EX_REF.findall(row["homework"])}
        third = {exs[p][2] for p in listed if len(exs.get(p, [])) >= 3}
        if kind == "lecture" and homework != third:
            problems.append(
                f"{where}: {session}: homework {sorted(homework)}, expected the third "
                f"exercise of each of its pages {sorted(third)}"
            )
        elif kind == "lab" and homework:
            problems.append(f"{where}: {session}: homework is given after lectures, not labs")
    return read


def hidden_code(path: Path) -> dict:
    """The code of the page ``path``, in non-blank lines: ``hidden`` and ``visible`` in all,
    and ``cells``, (cell number, lines other than imports) of each hidden cell. The set-up
    cell is left out."""
    import jupytext

    out = {"hidden": 0, "visible": 0, "cells": []}
    for n, cell in enumerate(jupytext.read(path).cells, 1):
        if cell.cell_type != "code" or SETUP_MARK in cell.source:
            continue
        code = [line.strip() for line in cell.source.splitlines() if line.strip()]
        lines = len(code)
        if HIDDEN_TAGS & set(cell.metadata.get("tags", [])):
            out["hidden"] += lines
            out["cells"].append((n, sum(not IMPORT.match(line) for line in code)))
        else:
            out["visible"] += lines
    return out


def hidden_code_problems(root: Path = ROOT) -> list[str]:
    """Pages whose hidden code outweighs the shown code, or that hide a long cell."""
    problems = []
    for path in pages(root):
        rel = path.relative_to(root)
        code = hidden_code(path)
        if code["hidden"] and code["hidden"] >= code["visible"]:
            problems.append(
                f"{rel}: hides {code['hidden']} lines of code and shows {code['visible']} "
                "(hide fewer than it shows: move the rest into the library)"
            )
        for n, lines in code["cells"]:
            if lines > MAX_HIDDEN_LINES:
                problems.append(
                    f"{rel}: cell {n} hides {lines} lines of code besides imports (at most "
                    f"{MAX_HIDDEN_LINES}: move the rest into the library)"
                )
    return problems


def sync(root: Path = ROOT, html: Path | None = None) -> tuple[list[str], list[str]]:
    """Write the set-up cells; from the built site ``html`` (default ``_build/html``) the
    pages' reading times and their notebooks; and the time table. The files written, and
    the pages whose build is older than the page (build again, then sync again)."""
    html = root / "_build" / "html" if html is None else html
    written, stale = [], []
    block = setup_block(root)
    for path in pages(root):
        rel = path.relative_to(root)
        text = path.read_text()
        new = with_setup(text, path, block)
        built = built_notebook(html, path)
        if _record(built).get("source_sha256") != writer.source_digest(new):
            stale.append(f"{rel}: its build is older than the page (build the book, then sync)")
        else:
            new = with_minutes(new, rel, reading_minutes(_record(built)["words"]))
            nb_text = notebook_text(notebook_for(built, new, path))
            ipynb = path.with_suffix(".ipynb")
            if not ipynb.exists() or ipynb.read_text() != nb_text:
                ipynb.write_text(nb_text)
                written.append(ipynb)
        if new != text:
            path.write_text(new)
            written.append(path)
    teaching = root / "book" / "teaching.md"
    text = teaching.read_text()
    new = with_time_table(text, teaching, time_table(root))
    if new != text:
        teaching.write_text(new)
        written.append(teaching)
    return [str(p.relative_to(root)) for p in written], stale


def drift(root: Path = ROOT, html: Path | None = None) -> list[str]:
    """What differs from ``sync``'s output (empty: nothing): a page without the set-up
    cell; a notebook missing, written from another version of its page, whose reading time
    is not its words' or which (with the built site ``html``) differs from the build;
    Markdown of a notebook that Jupyter would show as MyST; the time table."""
    problems = []
    block = setup_block(root)
    for path in pages(root):
        rel = path.relative_to(root)
        text = path.read_text()
        if with_setup(text, path, block) != text:
            problems.append(f"{rel}: its first cell is not the set-up cell")
        ipynb = path.with_suffix(".ipynb")
        nb_rel = ipynb.relative_to(root)
        if not ipynb.exists():
            problems.append(f"{nb_rel}: missing (build the book, then sync)")
            continue
        try:
            have = json.loads(ipynb.read_text())
        except json.JSONDecodeError as err:
            problems.append(f"{nb_rel}: not a notebook ({err})")
            continue
        record = _record(have)
        if record.get("source_sha256") != writer.source_digest(text):
            problems.append(
                f"{nb_rel}: written from another version of {rel} (build the book, then sync)"
            )
            continue
        stated, counted = int(TIME_LINE.search(text)["read"]), reading_minutes(record["words"])
        if stated != counted:
            problems.append(
                f"{rel}: states {stated} minutes to read; its {record['words']} words give "
                f"{counted} (sync)"
            )
        elif _cells(notebook_for(have, text, path)) != _cells(have):
            problems.append(f"{nb_rel}: its reading time is not the page's (sync)")
        if html is not None:
            want = notebook_for(built_notebook(html, path), text, path)
            if not same_notebook(want, have):
                problems.append(f"{nb_rel}: differs from the build of {rel} (sync)")
        problems += myst_problems(have, str(nb_rel))
    teaching = root / "book" / "teaching.md"
    text = teaching.read_text()
    if with_time_table(text, teaching, time_table(root)) != text:
        problems.append(f"{teaching.relative_to(root)}: the time table differs from the pages")
    return problems


def run_notebook(path: Path, timeout: int) -> float:
    """Run the notebook ``path`` top to bottom in a fresh kernel, in its folder (as Binder
    and a download run it); its run time in seconds. Raises nbclient's CellExecutionError
    (naming the cell) when a cell fails."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": path.parent}}
    )
    client.execute()
    return time.perf_counter() - start


def run(root: Path = ROOT, jobs: int = 2, timeout: int = 600, only: str | None = None) -> int:
    """Run every page's notebook (those whose name contains ``only``), ``jobs`` at a time;
    print each one's time and the wall time; exit status 1 when one fails."""
    from concurrent.futures import ThreadPoolExecutor

    sys.path.insert(0, str(ROOT / "_ext"))
    from msapod_execute import kernel_threads  # the book build's rule: CPUs // jobs each

    todo = [p.with_suffix(".ipynb") for p in pages(root) if not only or only in p.name]
    start, failed = time.perf_counter(), []
    # each job runs a kernel process
    with kernel_threads(jobs), ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(run_notebook, p, timeout): p for p in todo}
        for future, path in futures.items():
            rel = path.relative_to(root)
            try:
                print(f"{future.result():7.1f} s  {rel}", flush=True)
            except Exception as err:  # the cell and its traceback, as nbclient words them
                failed.append(rel)
                print(f"notebooks: {rel} failed: {err}", file=sys.stderr, flush=True)
    print(
        f"notebooks: ran {len(todo) - len(failed)} of {len(todo)} in "
        f"{time.perf_counter() - start:.0f} s wall ({jobs} at a time)"
    )
    return 1 if failed else 0


def launch_problems(html: Path, root: Path = ROOT) -> list[str]:
    """What is wrong with the built pages' Colab and Binder links (empty: nothing): each
    numbered page must have both, opening its ``.ipynb`` of this repository and branch,
    and the file must exist."""
    import yaml

    repo = yaml.safe_load((root / "_config.yml").read_text())["repository"]
    m = re.fullmatch(r"https://github\.com/([\w.-]+)/([\w.-]+?)/?", repo["url"])
    if m is None:
        return [f"_config.yml: repository.url {repo['url']!r} is not a GitHub repository"]
    base = f"{m[1]}/{m[2]}"
    branch = re.escape(repo["branch"])
    links = {
        "Colab": rf"https://colab\.research\.google\.com/github/{base}/blob/{branch}/([^\"?#]+)",
        "Binder": rf"https://mybinder\.org/v2/gh/{base}/{branch}\?urlpath=lab/tree/([^\"&#]+)",
    }
    problems = []
    for path in pages(root):
        page = html / "book" / path.with_suffix(".html").name
        if not page.exists():
            problems.append(f"{page}: not built")
            continue
        text = page.read_text()
        want = path.with_suffix(".ipynb").relative_to(root).as_posix()
        for name, pattern in links.items():
            found = set(re.findall(pattern, text))
            if found != {want}:
                problems.append(
                    f"{page.relative_to(html)}: {name} opens {sorted(found) or 'nothing'}, "
                    f"expected {want}"
                )
        if not (root / want).exists():
            problems.append(f"{want}: the launch buttons open it, and it does not exist")
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("command", choices=["sync", "check", "run"])
    p.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this one)")
    p.add_argument(
        "--html",
        type=Path,
        help="the built site (_build/html): sync reads the notebooks and the pages' words "
        "from it (default _build/html); check compares the notebooks and the Colab and "
        "Binder links with it",
    )
    p.add_argument("--jobs", type=int, default=2, help="run: notebooks at a time")
    p.add_argument("--timeout", type=int, default=600, help="run: seconds a cell may take")
    p.add_argument("--only", help="run: only the notebooks whose name contains this text")
    args = p.parse_args(argv)
    root = args.root.resolve()
    if args.command == "run":
        return run(root, args.jobs, args.timeout, args.only)
    try:
        if args.command == "sync":
            written, problems = sync(root, args.html)
            print("notebooks: wrote " + (", ".join(written) if written else "nothing"))
        else:
            problems = drift(root, args.html)
        problems += plan_problems(root) + hidden_code_problems(root)
        if args.html is not None and args.command == "check":
            problems += launch_problems(args.html, root)
    except Drift as err:
        print(f"notebooks: {err}", file=sys.stderr)
        return 1
    for line in problems:
        print(f"notebooks: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
