"""The book's notebooks: each page as a plain Jupyter notebook, written from the page as
the site shows it.

When Sphinx has resolved a page (``doctree-resolved``: glue values pasted, references
and citations resolved, exercises numbered), this writes the page's notebook: its code
cells are the page's cells, source as written (the page's set-up cell first, cells the
site hides included); its Markdown cells are the page's text, as CommonMark with
``$``-math (what Jupyter, JupyterLab and Colab render):

* glued values as the values the site shows; references and citations as links to the
  site (``html.baseurl`` of ``_config.yml``), with the site's text ("Exercise 4.2",
  "Zeris (2026a)", a figure's number);
* admonitions as block quotes with a bold title (a ``dropdown`` one folded in
  ``<details>``); a figure's caption, numbered, in a Markdown cell after the cell that
  draws it;
* exercises as numbered headings; a solution's text folded in ``<details>``, its code
  cells collapsed (``jupyter.source_hidden`` and ``outputs_hidden``), as are the cells
  the site hides (tags ``hide-input``, ``remove-input``, ``hide-cell``, ``remove-cell``;
  the set-up cell, which a reader outside a checkout runs first, stays open).

Each notebook has no outputs. Its metadata (``msapod``) records the sha256 of the page it
was written from (:func:`source_digest`: the page with its reading time left out, which
``python .ci/notebooks.py sync`` writes after the build), so that ``.ci/notebooks.py check``
finds a page edited after its notebook was written; and the number of words a reader of
the site reads on the page (:func:`reading_words`), from which ``.ci/notebooks.py`` states
the page's reading time. The notebook replaces the copy of the executed page that
the theme's download button serves (``_sources/<page>.ipynb``), so the download, the
launch buttons (which open the repository's ``book/NN-*.ipynb``, copied from the build by
``python .ci/notebooks.py sync``) and the build give one notebook. A node that this
writer cannot express is a build warning (a failure under ``-W``) naming it and the page.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from urllib.parse import urljoin

from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: cell tags that the site hides the code of (and which the notebook collapses)
HIDDEN_INPUT = ("hide-input", "remove-input", "hide-cell", "remove-cell")
#: cell tags that the site hides the output of
HIDDEN_OUTPUT = ("hide-output", "remove-output", "hide-cell", "remove-cell")
#: the first line of the set-up cell (``.ci/notebooks.py`` writes the cell), which stays open
SETUP_MARK = "# Outside a checkout of msapod (Colab): install it and fetch its shipped results."
#: the reading-time line of a page's learning objectives (the same in the page and in its
#: notebook's Markdown); ``.ci/notebooks.py sync`` writes its number
TIME_LINE = re.compile(
    r"\*About (?P<read>\d+) minutes to read(?:; the page runs in about (?P<run>[^.*]+))?\.\*"
)
#: the notebook format written
NBFORMAT = (4, 5)

#: characters escaped in Markdown text (``_`` only where it could start emphasis; ``|``
#: only in a table's cell, :meth:`Page.cell`)
_ESCAPE = re.compile(r"([\\`*\[\]<>$~])")
_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
#: text at the start of a line that Markdown reads as a block (heading, list, quote, ...)
_BLOCK_START = re.compile(r"^(#{1,6}(?:\s|$)|[-+*](?:\s|$)|\d{1,9}[.)](?:\s|$)|=+\s*$|-{3,}\s*$)")


class Unsupported(Exception):
    """A doctree node that the notebook writer has no Markdown for."""


def escape(text: str) -> str:
    """``text`` as Markdown text that renders as itself (``$`` escaped: Jupyter reads it as
    math)."""
    text = _ESCAPE.sub(r"\\\1", text.replace("\n", " "))
    return _UNDERSCORE.sub(r"\\_", text)


def _code_span(text: str) -> str:
    text = text.replace("\n", " ")
    ticks = max((len(m) for m in re.findall(r"`+", text)), default=0) + 1
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{'`' * ticks}{pad}{text}{pad}{'`' * ticks}"


class Page:
    """The Markdown and cells of one resolved page (see the module docstring)."""

    def __init__(self, app, docname: str, doctree: nodes.document, notebook):
        self.app = app
        self.env = app.env
        self.docname = docname
        self.doctree = doctree
        self.source = notebook  # the page read as a notebook (myst-nb's reader)
        self.site = app.config.html_baseurl
        if not self.site:
            raise Unsupported("html.baseurl of _config.yml is empty (the site's URL)")
        self.site = self.site.rstrip("/") + "/"
        self.page_url = urljoin(self.site, f"{docname}.html")
        self.cells: list[dict] = []
        self.markdown: list[str] = []
        smap = notebook.metadata.get("source_map") or []
        # code cells the site does not render (tag remove-cell), placed by source line
        self.unplaced = [
            (smap[i] if i < len(smap) else 0, i)
            for i, cell in enumerate(notebook.cells)
            if cell.cell_type == "code" and cell.source.strip()
        ]
        self.emitted: set[int] = set()
        self.in_table = False  # in a table's cell: a "|" would end the cell
        self.figures = self.env.toc_fignumbers.get(docname, {})
        self.secnumbers = self.env.toc_secnumbers.get(docname, {})

    # -- cells -------------------------------------------------------------------------

    def flush(self) -> None:
        text = "\n\n".join(b for b in self.markdown if b.strip()).strip("\n")
        self.markdown = []
        if text:
            self.cells.append({"cell_type": "markdown", "metadata": {}, "source": text})

    def place_before(self, line: int | None) -> None:
        """Emit the not yet placed code cells whose source starts before ``line``."""
        if line is None:
            return
        while self.unplaced and self.unplaced[0][0] < line:
            self.code(self.unplaced[0][1])

    def code(self, index: int, *, solution: bool = False) -> None:
        """Emit code cell ``index`` of the page, after any earlier one not yet placed (a
        cell the site does not render)."""
        while self.unplaced and self.unplaced[0][1] <= index:
            earlier = self.unplaced.pop(0)[1]
            self._code(earlier, solution=solution and earlier == index)

    def _code(self, index: int, *, solution: bool) -> None:
        if index in self.emitted:
            return
        self.emitted.add(index)
        self.flush()
        cell = self.source.cells[index]
        tags = list(cell.metadata.get("tags", []))
        meta: dict = {"tags": tags} if tags else {}
        jupyter = {}
        if not cell.source.startswith(SETUP_MARK):  # the set-up cell stays open
            if solution or any(t in HIDDEN_INPUT for t in tags):
                jupyter["source_hidden"] = True
            if solution or any(t in HIDDEN_OUTPUT for t in tags):
                jupyter["outputs_hidden"] = True
        if jupyter:
            meta["jupyter"] = jupyter
        self.cells.append(
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": meta,
                "outputs": [],
                "source": cell.source,
            }
        )

    # -- structure ---------------------------------------------------------------------

    def run(self) -> list[dict]:
        for child in self.doctree.children:
            self.walk(child, level=1)
        self.flush()
        while self.unplaced:
            self._code(self.unplaced.pop(0)[1], solution=False)
        return self.cells

    def walk(self, node, level: int, solution: bool = False) -> None:
        """Emit ``node``: sections, cells, exercises and solutions as cells, the rest as
        Markdown blocks of the current cell."""
        if isinstance(node, nodes.section) and node.get("ids") in (
            ["exercise-content"],
            ["solution-content"],
        ):
            for child in node.children:
                self.walk(child, level, solution)
            return
        kind = type(node).__name__
        if isinstance(node, nodes.container) and node.get("nb_element") == "cell_code":
            self.code(node["cell_index"], solution=solution)
            for fig in node.findall(nodes.figure):
                self.markdown.append(self.caption(fig))
            if solution:
                self.flush()
            return
        self.place_before(node.line if isinstance(node, nodes.Element) else None)
        if isinstance(node, nodes.section):
            self.flush()
            title = node.next_node(nodes.title)
            self.markdown.append(f"{'#' * min(level, 6)} {self.heading(node, title)}")
            for child in node.children:
                if child is not title:
                    self.walk(child, level + 1, solution)
        elif kind == "exercise_enumerable_node":
            self.flush()
            self.markdown.append(f"{'#' * min(level, 6)} {self.exercise_title(node)}")
            for child in node.children[1:]:
                self.walk(child, level, solution)
        elif kind == "solution_node":
            self.solution(node, level)
        elif self._has_cells(node):
            raise Unsupported(f"a {kind} that holds code cells")
        else:
            self.markdown.append(self.block(node))

    def solution(self, node, level: int) -> None:
        """A solution: its text folded in ``<details>`` (one fold per stretch of text
        between its code cells), its code cells collapsed."""
        self.flush()
        title = plain(node.children[0]).strip()
        parts: list[list] = [[]]
        for child in self._flat(node.children[1:]):
            if self._has_cells(child):
                parts.append(child)
                parts.append([])
            else:
                parts[-1].append(child)
        first = True
        for n, part in enumerate(parts):
            if isinstance(part, list):
                blocks = []
                for child in part:
                    self.place_before(child.line)
                    blocks.append(self.block(child))
                follows = n + 1 < len(parts)
                if not any(b.strip() for b in blocks) and not (first and follows):
                    continue
                summary = title if first else f"{title} (continued)"
                if follows:
                    blocks.append("*Its code is in the next cell (collapsed).*")
                body = "\n\n".join(b for b in blocks if b.strip())
                self.markdown.append(_details(summary, body))
                self.flush()
                first = False
            else:
                self.walk(part, level, solution=True)

    def _flat(self, children):
        """Children, with the pseudo-sections of sphinx-exercise opened."""
        for child in children:
            if isinstance(child, nodes.section) and child.get("ids") == ["solution-content"]:
                yield from self._flat(child.children)
            else:
                yield child

    @staticmethod
    def _has_cells(node) -> bool:
        return isinstance(node, nodes.Element) and any(
            c.get("nb_element") == "cell_code"
            for c in node.findall(nodes.container, include_self=True)
        )

    # -- titles and numbers ------------------------------------------------------------

    def heading(self, section, title) -> str:
        ids = section.get("ids") or [""]
        top = section.parent is self.doctree
        number = self.secnumbers.get("" if top else f"#{ids[0]}")
        text = self.inline(title)
        if number:
            text = f"{'.'.join(map(str, number))}. {text}"
        return text

    def number(self, kind: str, node) -> str:
        ids = node.get("ids") or [""]
        number = self.figures.get(kind, {}).get(ids[0])
        return ".".join(map(str, number)) if number else ""

    def exercise_title(self, node) -> str:
        fmt = self.app.config.numfig_format.get("exercise", "Exercise %s")
        # the resolved title holds only " (subtitle)", if any: the number is the theme's
        return fmt % self.number("exercise", node) + self.inline_children(node.children[0])

    def caption(self, figure) -> str:
        caption = figure.next_node(nodes.caption)
        if caption is None:
            return ""
        fmt = self.app.config.numfig_format.get("figure", "Fig. %s")
        number = self.number("figure", figure)
        label = f"**{fmt % number}** " if number else ""
        return label + self.inline(caption)

    # -- Markdown ----------------------------------------------------------------------

    def url(self, node) -> str:
        if "refuri" in node:
            uri = node["refuri"]
            if re.match(r"[a-z][a-z0-9+.-]*:", uri):
                return uri
            return urljoin(self.page_url, uri)
        if "refid" in node:
            return f"{self.page_url}#{node['refid']}"
        if "filename" in node:  # a download
            return urljoin(self.site, f"_downloads/{node['filename']}")
        raise Unsupported(f"a {type(node).__name__} without a target")

    def inline(self, node) -> str:
        if isinstance(node, nodes.Text):
            text = escape(str(node))
            return text.replace("|", "\\|") if self.in_table else text
        kind = type(node).__name__
        inner = lambda: "".join(self.inline(c) for c in node.children)  # noqa: E731
        if isinstance(node, nodes.emphasis):
            return _wrap("*", inner())
        if isinstance(node, nodes.strong):
            return _wrap("**", inner())
        if isinstance(node, nodes.literal):
            return _code_span(node.astext())
        if isinstance(node, nodes.math):
            tex = node.astext().strip()
            return f"${tex.replace('|', chr(92) + 'vert ') if self.in_table else tex}$"
        if isinstance(node, nodes.reference) or kind in ("download_reference", "number_reference"):
            return f"[{inner()}]({self.url(node)})"
        if isinstance(node, nodes.subscript):
            return f"<sub>{inner()}</sub>"
        if isinstance(node, nodes.superscript):
            return f"<sup>{inner()}</sup>"
        if isinstance(node, nodes.raw):
            return _html(node)
        if isinstance(node, nodes.target | nodes.comment | nodes.substitution_definition):
            return ""
        if isinstance(
            node,
            nodes.inline | nodes.title_reference | nodes.abbreviation | nodes.title | nodes.caption,
        ) or kind in ("pending_xref", "literal_emphasis", "literal_strong"):
            return inner()
        if isinstance(node, nodes.paragraph):  # a paragraph inside a table cell or caption
            return inner()
        raise Unsupported(f"inline {kind} ({node.astext()[:40]!r})")

    def block(self, node) -> str:
        """``node`` as Markdown (blocks separated by a blank line)."""
        kind = type(node).__name__
        if isinstance(node, nodes.paragraph):
            text = "".join(self.inline(c) for c in node.children).strip()
            return "\\" + text if _BLOCK_START.match(text) else text
        if isinstance(node, nodes.bullet_list | nodes.enumerated_list):
            return self.list_(node)
        if isinstance(node, nodes.definition_list):
            return self.definitions(node)
        if isinstance(node, nodes.literal_block):
            text = node.astext().rstrip("\n")
            fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
            return f"{fence}{node.get('language', '')}\n{text}\n{fence}"
        if isinstance(node, nodes.math_block):
            tex = node.astext().strip("\n")
            if node.get("number"):
                tex += f" \\tag{{{node['number']}}}"
            return f"$$\n{tex}\n$$"
        if isinstance(node, nodes.Admonition) or kind == "exercise_node":
            return self.admonition(node)
        if kind == "dropdown_main":  # sphinx-design: a title, then the body
            title = "".join(
                plain(c)
                for t in node.children[:1]
                for c in t.findall(nodes.inline)
                if "sd-summary-text" in c.get("classes", [])
            )
            return _details(title, self.blocks(node.children[1:]))
        if isinstance(node, nodes.block_quote):
            return _quote(self.blocks(node.children))
        if isinstance(node, nodes.table):
            return self.table(node)
        if isinstance(node, nodes.rubric):
            return f"**{self.inline_children(node)}**"
        if isinstance(node, nodes.transition):
            return "---"
        if isinstance(node, nodes.raw):
            return _html(node)
        if isinstance(node, nodes.target | nodes.comment | nodes.substitution_definition):
            return ""
        if kind in ("toctree", "index", "only", "meta", "highlightlang"):
            return ""
        if isinstance(node, nodes.container | nodes.compound | nodes.section):
            return self.blocks(node.children)
        if isinstance(node, nodes.line_block):
            return "  \n".join(self.inline_children(line) for line in node.children)
        raise Unsupported(f"block {kind} ({node.astext()[:40]!r})")

    def inline_children(self, node) -> str:
        return "".join(self.inline(c) for c in node.children).strip()

    def blocks(self, children) -> str:
        return "\n\n".join(b for b in (self.block(c) for c in children) if b.strip())

    def admonition(self, node) -> str:
        children = list(node.children)
        has_title = bool(children) and isinstance(children[0], nodes.title)
        if has_title:
            children = children[1:]
        body = self.blocks(children)
        if "dropdown" in node.get("classes", []):
            title = plain(node.children[0]) if has_title else ""
            return _details(title or type(node).__name__.capitalize(), body)
        if has_title:
            title = self.inline_children(node.children[0])
        else:  # note, tip, warning, ...: the title is the kind
            title = type(node).__name__.replace("_", " ").capitalize()
        return _quote(f"**{title}**\n\n{body}")

    def list_(self, node) -> str:
        ordered = isinstance(node, nodes.enumerated_list)
        start = node.get("start", 1)
        items = []
        loose = any(
            sum(not isinstance(c, nodes.target) for c in item.children) > 1
            for item in node.children
        )
        for n, item in enumerate(node.children):
            marker = f"{start + n}. " if ordered else "- "
            body = self.blocks(item.children)
            pad = " " * len(marker)
            lines = body.split("\n")
            text = (
                marker
                + lines[0]
                + "".join("\n" + (pad + line if line else "") for line in lines[1:])
            )
            items.append(text)
        return ("\n\n" if loose else "\n").join(items)

    def definitions(self, node) -> str:
        items = []
        for item in node.children:
            term = next(c for c in item.children if isinstance(c, nodes.term))
            definition = next(c for c in item.children if isinstance(c, nodes.definition))
            body = self.blocks(definition.children)
            lines = body.split("\n")
            text = f"- **{self.inline_children(term)}**: " + lines[0]
            text += "".join("\n" + ("  " + line if line else "") for line in lines[1:])
            items.append(text)
        return "\n".join(items)

    def table(self, node) -> str:
        group = node.next_node(nodes.tgroup)
        rows_of = lambda part: [  # noqa: E731
            [self.cell(entry) for entry in row.children]
            for p in group.children
            if isinstance(p, part)
            for row in p.children
        ]
        head, body = rows_of(nodes.thead), rows_of(nodes.tbody)
        if not head:
            head, body = body[:1], body[1:]
        width = max(len(r) for r in head + body)
        align = []
        first_row = next(iter(group.findall(nodes.row)), None)
        for entry in first_row.children if first_row is not None else []:
            classes = entry.get("classes", [])
            right = "---:" if "text-right" in classes else "---"
            align.append(":---:" if "text-center" in classes else right)
        align += ["---"] * (width - len(align))
        lines = ["| " + " | ".join(r + [""] * (width - len(r))) + " |" for r in head[:1]]
        lines.append("|" + "|".join(align) + "|")
        lines += ["| " + " | ".join(r + [""] * (width - len(r))) + " |" for r in body]
        title = node.next_node(nodes.title)
        if title is not None and title.parent is node:
            lines.insert(0, f"**{self.inline_children(title)}**\n")
        return "\n".join(lines)

    def cell(self, entry) -> str:
        """A table cell on one line: a "|" of its text escaped, one of its math written
        ``\\vert`` (a renderer that reads the table before the math would end the cell
        there)."""
        parts = []
        self.in_table = True
        try:
            for child in entry.children:
                if isinstance(child, nodes.paragraph):
                    parts.append(self.inline_children(child))
                else:
                    parts.append(self.block(child).replace("\n", "<br>"))
        finally:
            self.in_table = False
        return "<br>".join(parts)


def _wrap(mark: str, text: str) -> str:
    stripped = text.strip()
    if not stripped:
        return text
    lead = text[: len(text) - len(text.lstrip())]
    trail = text[len(text.rstrip()) :]
    return f"{lead}{mark}{stripped}{mark}{trail}"


def _quote(text: str) -> str:
    return "\n".join(("> " + line) if line else ">" for line in text.split("\n"))


#: HTML that is only scripts or styles (the site's machinery, such as the thebe
#: configuration that sphinx-thebe appends to every page)
_SCRIPTS_ONLY = re.compile(r"\s*(?:<(script|style)\b.*?</\1>\s*)+", re.S)


def _html(node) -> str:
    """A raw node's HTML for Markdown (none for another format, or for scripts)."""
    text = node.astext()
    if "html" not in node.get("format", "").split() or _SCRIPTS_ONLY.fullmatch(text):
        return ""
    return text


def plain(node) -> str:
    """The text of ``node`` with its math as ``$...$`` (for HTML, where Markdown is not
    read but Jupyter still typesets math)."""
    if isinstance(node, nodes.Text):
        return str(node).replace("\n", " ")
    if isinstance(node, nodes.math):
        return f"${node.astext().strip()}$"
    if isinstance(node, nodes.raw):
        return ""
    return "".join(plain(c) for c in node.children)


def _details(summary: str, body: str) -> str:
    """A fold: the plain text ``summary`` over the Markdown ``body``."""
    text = summary.strip().replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f"<details>\n<summary>{text}</summary>\n\n{body}\n\n</details>"


def cell_ids(cells: list[dict]) -> list[dict]:
    """The cells with ids from their text (stable when other cells change)."""
    seen: set[str] = set()
    out = []
    for cell in cells:
        digest = hashlib.sha1(f"{cell['cell_type']}\n{cell['source']}".encode()).hexdigest()
        cid, n = digest[:10], 1
        while cid in seen:
            n += 1
            cid = f"{digest[:10]}-{n}"
        seen.add(cid)
        out.append({"cell_type": cell["cell_type"], "id": cid, **cell})
    return out


def source_digest(text: str) -> str:
    """The sha256 of a page's text with the number of its reading time left out."""
    blank = TIME_LINE.sub(lambda m: m.group(0).replace(m["read"], "N", 1), text, count=1)
    return hashlib.sha256(blank.encode()).hexdigest()


def reading_words(doctree) -> int:
    """The words a reader of the site reads on a page without unfolding anything: its
    text, glued values, formulas, captions, and the outputs it shows (tables, verdicts,
    printed lines); not code, images, or what the site folds (solutions, dropdowns, the
    outputs of cells tagged ``hide-output`` or ``hide-cell``). A word is a run of
    non-space characters."""
    count = 0

    def walk(node) -> None:
        nonlocal count
        if isinstance(node, nodes.Text):
            count += len(str(node).split())
            return
        kind = type(node).__name__
        classes = node.get("classes", [])
        if (
            kind in ("solution_node", "dropdown_main")
            or "dropdown" in classes
            or node.get("nb_element") == "cell_code_source"
            or (node.get("nb_element") == "cell_code_output" and _folded_output(node))
            or isinstance(node, nodes.image | nodes.comment)
        ):
            return
        if isinstance(node, nodes.raw):
            if "html" in node.get("format", "").split():
                html = re.sub(r"<(script|style)\b.*?</\1>", " ", node.astext(), flags=re.S)
                count += len(re.sub(r"<[^>]+>", " ", html).split())
            return
        for child in node.children:
            walk(child)

    walk(doctree)
    return count


def _folded_output(output) -> bool:
    tags = output.parent.get("cell_metadata", {}).get("tags", [])
    return any(t in ("hide-output", "hide-cell") for t in tags)


def notebook_json(cells: list[dict], kernelspec: dict, source: str, words: int) -> str:
    """The notebook file's text (nbformat's layout: sorted keys, one-space indent, sources
    as lists of lines); ``source`` is the page's text, ``words`` its :func:`reading_words`."""
    import nbformat

    nb = {
        "cells": cell_ids(cells),
        "metadata": {
            "kernelspec": kernelspec,
            "msapod": {"source_sha256": source_digest(source), "words": words},
        },
        "nbformat": NBFORMAT[0],
        "nbformat_minor": NBFORMAT[1],
    }
    node = nbformat.from_dict(nb)
    nbformat.validate(node)
    return nbformat.writes(node)


def page_notebook(app, docname: str, doctree) -> str | None:
    """The notebook of page ``docname`` (None: the page is not a notebook)."""
    from myst_nb.core.read import create_nb_reader

    path = Path(app.env.doc2path(docname))
    text = path.read_text(encoding="utf-8")
    reader = create_nb_reader(str(path), app.env.myst_config, app.env.mystnb_config, text)
    if reader is None:
        return None
    notebook = reader.read(text)
    cells = Page(app, docname, doctree, notebook).run()
    kernelspec = dict(notebook.metadata.get("kernelspec", {}))
    return notebook_json(cells, kernelspec, text, reading_words(doctree))


#: the notebooks of the pages written in this build, by page
_WRITTEN: dict[str, str] = {}


def on_doctree_resolved(app, doctree, docname: str) -> None:
    if app.builder.format != "html":
        return
    try:
        text = page_notebook(app, docname, doctree)
    except Unsupported as err:
        logger.warning(f"notebook: {err}", location=docname, type="msapod", subtype="notebook")
        return
    if text is not None:
        _WRITTEN[docname] = text


def on_page_context(app, pagename, templatename, context, doctree) -> None:
    """Write the page's notebook where the download button points (after the theme
    copied the executed page there)."""
    text = _WRITTEN.pop(pagename, None)
    if text is None:
        return
    out = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")


def setup(app):
    # the writer's own text as a configuration value: a changed writer makes Sphinx read
    # and write every page again, so no page keeps a notebook of the old writer
    digest = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    app.add_config_value("msapod_notebook_writer", digest, "env")
    app.connect("doctree-resolved", on_doctree_resolved, priority=900)
    app.connect("html-page-context", on_page_context, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": False}
