"""The book's generated parts (.ci/notebooks.py): set-up cells, the notebooks copied from
the build, reading times, the teaching page's time table, the course plan's rules, the
MyST check of the notebooks' Markdown and the notebook runner. The build's notebook writer
itself (_ext/msapod_notebooks.py) is tested on a built book in test_notebook_writer.py;
here a build is stood in for by the notebooks it would write."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("jupytext", reason="the book extra is not installed (pip install -e .[book])")
pytest.importorskip("sphinx", reason="the book extra is not installed (pip install -e .[book])")

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("notebooks", ROOT / ".ci" / "notebooks.py")
nbs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbs)

FRONT = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""
KERNEL = {"display_name": "Python 3", "language": "python", "name": "python3"}
#: words the stand-in build counts on each page (at 120 a minute: 10, 30 and 50 minutes)
WORDS = {"00": 1150, "01": 3500, "02": 5990}


def _page(title: str, times: str, num: str, code: str = "x = 1") -> str:
    exercises = "".join(
        f"```{{exercise}}\n:label: ex-{num}-{k}\n\nQuestion {k}.\n```\n\n" for k in (1, 2, 3)
    )
    return (
        f"{FRONT}\n# {title}\n\n```{{admonition}} Learning objectives\n:class: tip\n{times} "
        f"After this page you can\n```\n\n```{{code-cell}} ipython3\n{code}\n```\n\n"
        f"## Exercises\n\n{exercises}"
    )


PLAN = """# Teaching

{begin}
{end}

Two lectures of 60 minutes and two labs of 60 minutes.

| session | content | pages | lab exercises | homework |
|---|---|---|---|---|
| lecture 1 | a | [intro](00-intro.md), [1](01-a.md) | — | {{ref}}`ex-00-3`, {{ref}}`ex-01-3` |
| lab 1 | b | [1](01-a.md) | {{ref}}`ex-01-1` | — |
| lecture 2 | c | [2](02-b.md) | — | {{ref}}`ex-02-3` |
"""


@pytest.fixture
def book(tmp_path) -> Path:
    """A three-page book with a teaching page whose plan keeps every rule."""
    (tmp_path / "book").mkdir()
    (tmp_path / "_config.yml").write_text(
        "repository:\n  url: https://github.com/someone/msapod\n  branch: v1.2\n"
    )
    pages = {
        "00-intro.md": _page("Intro", "*About 5 minutes to read.*", "00"),
        "01-a.md": _page("Page A", "*About 5 minutes to read; the page runs in about 5 s.*", "01"),
        "02-b.md": _page("Page B", "*About 5 minutes to read; the page runs in about 9 s.*", "02"),
    }
    for name, text in pages.items():
        (tmp_path / "book" / name).write_text(text)
    (tmp_path / "book" / "teaching.md").write_text(
        PLAN.format(begin=nbs.TABLE_BEGIN, end=nbs.TABLE_END)
    )
    return tmp_path


def _build(book: Path, words: dict | None = None) -> Path:
    """Stand in for the book's build: write, for every page, a notebook as the build's
    writer would (the title, the learning objectives, the page's code; no set-up cell),
    with ``words`` (page number -> count) as the words the build counted."""
    html = book / "_build" / "html"
    built = html / "_sources" / "book"
    built.mkdir(parents=True, exist_ok=True)
    for path in nbs.pages(book):
        text = path.read_text()
        cells = [
            {"cell_type": "markdown", "metadata": {}, "source": f"# {nbs._title(path)}"},
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": "> **Learning objectives**\n>\n> "
                + (m[0] if (m := nbs.TIME_LINE.search(text)) else ""),
            },
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
             "source": "x = 1"},
        ]  # fmt: skip
        count = (words or WORDS)[path.name[:2]]
        (built / path.with_suffix(".ipynb").name).write_text(
            nbs.writer.notebook_json(cells, KERNEL, text, count)
        )
    return html


def _sync(book: Path, words: dict | None = None) -> list[str]:
    """Sync as after a build: set-up cells, a build, then the notebooks and times."""
    nbs.sync(book, _build(book, words))  # the set-up cells change the pages: build again
    written, stale = nbs.sync(book, _build(book, words))
    assert stale == []
    return written


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def test_sync_then_check_passes_and_sync_is_idempotent(book):
    assert nbs.drift(book)  # nothing written yet
    written, stale = nbs.sync(book, _build(book))
    assert stale and all("its build is older than the page" in s for s in stale)
    written, stale = nbs.sync(book, _build(book))  # the build of the pages with set-up cells
    assert stale == [] and "book/01-a.ipynb" in written and "book/teaching.md" in written
    html = book / "_build" / "html"
    assert nbs.drift(book) == [] and nbs.drift(book, html) == []
    assert nbs.plan_problems(book) == []
    assert nbs.sync(book, html) == ([], [])  # a second sync changes nothing
    page = (book / "book" / "01-a.md").read_text()
    assert page.count(nbs.SETUP_MARK) == 1
    assert page.index(nbs.SETUP_MARK) < page.index("# Page A")


def test_reading_minutes_rule():
    per_step = nbs.WORDS_PER_MINUTE * nbs.MINUTES_STEP
    assert nbs.reading_minutes(0) == nbs.MINUTES_STEP  # never "0 minutes"
    assert nbs.reading_minutes(per_step) == nbs.MINUTES_STEP
    assert nbs.reading_minutes(per_step + 1) == 2 * nbs.MINUTES_STEP  # rounded up
    assert nbs.reading_minutes(7 * per_step) == 7 * nbs.MINUTES_STEP
    with pytest.raises(ValueError, match="words: expected a count"):
        nbs.reading_minutes(-1)


def test_sync_states_each_page_s_reading_time_from_its_words(book):
    _sync(book)
    for name, minutes in (("00-intro", 10), ("01-a", 30), ("02-b", 50)):
        page = (book / "book" / f"{name}.md").read_text()
        assert f"*About {minutes} minutes to read" in page
        nb = json.loads((book / "book" / f"{name}.ipynb").read_text())
        assert f"*About {minutes} minutes to read" in "".join(nb["cells"][1]["source"])
    assert (
        "| 1 [Page A](01-a.md) | 30 min | about 5 s |"
        in (book / "book" / "teaching.md").read_text()
    )
    # a page that gains words: the build counts them, sync states the new time
    _sync(book, {**WORDS, "01": 3700})
    assert (
        "*About 35 minutes to read; the page runs in about 5 s.*"
        in (book / "book" / "01-a.md").read_text()
    )
    assert nbs.drift(book, book / "_build" / "html") == []


def test_the_notebook_is_the_build_s_with_the_set_up_cell_first(book):
    _sync(book)
    _build(book)  # the build of the pages as synced: the same notebook, cell ids included
    built = book / "_build" / "html" / "_sources" / "book" / "01-a.ipynb"
    assert (book / "book" / "01-a.ipynb").read_text() == built.read_text()
    page = (book / "book" / "01-a.md").read_text()
    assert 'package = "msapod[book] @ git+https://github.com/someone/msapod@v1.2"' in page
    record = json.loads(built.read_text())["metadata"]["msapod"]
    assert record == {"source_sha256": nbs.writer.source_digest(page), "words": WORDS["01"]}


def test_check_names_a_page_edited_after_its_notebook_without_a_build(book):
    _sync(book)
    _edit(book / "book" / "02-b.md", "x = 1", "x = 2")
    assert nbs.drift(book) == [
        "book/02-b.ipynb: written from another version of book/02-b.md (build the book, then sync)"
    ]
    _sync(book)
    assert nbs.drift(book) == []


def test_check_names_a_notebook_that_differs_from_the_build(book):
    _sync(book)
    path = book / "book" / "01-a.ipynb"
    nb = json.loads(path.read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code")
    cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["1\n"]}]
    path.write_text(json.dumps(nb))
    assert nbs.drift(book) == []  # the same page: only the build tells
    assert nbs.drift(book, book / "_build" / "html") == [
        "book/01-a.ipynb: differs from the build of book/01-a.md (sync)"
    ]


@pytest.mark.parametrize(
    "a, b, same",
    [
        ("within 8.0e-05 characters", "within 7.9e-05 characters", True),  # last digit
        ("a share of 0.57", "a share of 0.58", True),
        ("a share of 0.57", "a share of 0.59", False),
        ("150 snippets", "151 snippets", False),  # whole numbers: exact
        ("8.0e-05", "8.0e-04", False),
        ("layers 1 and 2", "layers 1 or 2", False),
    ],
)
def test_a_number_computed_live_may_differ_in_its_last_digit(a, b, same):
    assert nbs.same_text(a, b) is same


def test_check_with_the_build_allows_round_off_only(book):
    _sync(book)
    built = book / "_build" / "html" / "_sources" / "book" / "01-a.ipynb"
    for text, problems in (("N = 2.5 and 7", []), ("N = 2.9 and 7", ["book/01-a.ipynb"])):
        nb = json.loads(built.read_text())
        nb["cells"][0]["source"] = ["# Page A: " + text]
        built.write_text(json.dumps(nb))
        committed = json.loads((book / "book" / "01-a.ipynb").read_text())
        cells = [{k: v for k, v in c.items() if k != "id"} for c in nbs._cells(committed)]
        cells[0]["source"] = "# Page A: N = 2.6 and 7"
        committed["cells"] = nbs.writer.cell_ids(cells)  # ids follow the text
        (book / "book" / "01-a.ipynb").write_text(json.dumps(committed))
        found = nbs.drift(book, book / "_build" / "html")
        assert [p.split(":")[0] for p in found] == problems


def test_check_names_a_stated_time_that_is_not_the_words(book):
    _sync(book)
    _edit(book / "book" / "01-a.md", "About 30 minutes", "About 20 minutes")
    assert nbs.drift(book) == [
        "book/01-a.md: states 20 minutes to read; its 3500 words give 30 (sync)",
        "book/teaching.md: the time table differs from the pages",
    ]


def test_check_finds_a_missing_or_changed_set_up_cell(book):
    _sync(book)
    page = book / "book" / "00-intro.md"
    _edit(page, "importlib.invalidate_caches()\n", "")
    assert "book/00-intro.md: its first cell is not the set-up cell" in nbs.drift(book)
    _edit(book / "_config.yml", "branch: v1.2", "branch: v1.3")
    _sync(book)
    assert "@v1.3" in page.read_text() and "@v1.2" not in page.read_text()
    assert nbs.drift(book) == []


def test_time_table_follows_the_pages_and_states_the_rule(book):
    _sync(book)
    table = nbs.time_table(book).splitlines()
    assert f"at {nbs.WORDS_PER_MINUTE} words a minute" in table[0]
    assert table[4:] == [
        "| [Intro](00-intro.md) | 10 min | — |",
        "| 1 [Page A](01-a.md) | 30 min | about 5 s |",
        "| 2 [Page B](02-b.md) | 50 min | about 9 s |",
    ]


def test_a_page_without_a_time_line_is_named(book):
    _edit(book / "book" / "02-b.md", "*About 5 minutes to read; the page runs in about 9 s.*", "")
    with pytest.raises(nbs.Drift, match=r"book/02-b\.md: no '\*About N minutes to read"):
        _sync(book)


def test_sync_without_a_build_says_so(book):
    with pytest.raises(nbs.Drift, match=r"00-intro\.ipynb: no notebook \(build the book"):
        nbs.sync(book, book / "_build" / "html")


@pytest.mark.parametrize(
    "markdown, construct",
    [
        ("That is {glue:text}`n_snap` snippets.", "role"),
        ("See {ref}`ex-04-2`.", "role"),
        ("As {cite:p}`zeris2026` shows.", "role"),
        ("```{exercise}\n:label: ex-01-1\n\nQuestion.\n```", "directive"),
        (":::{note}\nA note.\n:::", "colon fence"),
        ("(claims-table)=\n\n# Claims", "target"),
        ("Text\n\n:class: dropdown\n\nmore", "directive option"),
        ("The value {{ n }}.", "substitution"),
        ("+++\n\nNext cell.", "cell break"),
        ("% a MyST comment\n\nText.", "comment"),
        ("Text.\n\n    <script>kernelName = 'python3'</script>", "script"),
    ],
)
def test_myst_syntax_in_a_notebook_s_markdown_is_named(markdown, construct):
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": markdown}]}
    problems = nbs.myst_problems(nb, "book/01-a.ipynb")
    assert problems and problems[0].startswith("book/01-a.ipynb: cell 1: "), problems
    assert f" {construct} in its Markdown (" in problems[0], problems


def test_plain_jupyter_markdown_passes_the_myst_check():
    markdown = (
        "# 1. Title\n\n> **Learning objectives**\n>\n> *About 20 minutes to read.*\n\n"
        "A set $\\{x : x > 0\\}$, a role written as code: `{ref}`, "
        "[Exercise 4.2](https://example.org/book/04-windows.html#ex-04-2).\n\n"
        "$$\n\\frac{a}{b} \\tag{1}\n$$\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "<details>\n<summary>Solution to Exercise 1.1</summary>\n\nText.\n\n</details>"
    )
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": markdown}]}
    assert nbs.myst_problems(nb, "x") == []


def test_the_repository_notebooks_are_plain_jupyter_written_from_their_pages():
    """Every committed notebook: written from its page as it is (digest), stating the time
    its words give, its Markdown free of MyST syntax (no build needed)."""
    assert nbs.drift(ROOT) == []


@pytest.mark.parametrize(
    "old, new, problem",
    [
        (  # 10 + 30 + 25 > 60 minutes
            "About 30 minutes",
            "About 55 minutes",
            "lecture 1: 65 minutes of stated reading (pages 0, 1) in a 60-minute lecture",
        ),
        (
            "{ref}`ex-00-3`, {ref}`ex-01-3`",
            "{ref}`ex-00-3`, {ref}`ex-01-2`",
            "lecture 1: homework ['ex-00-3', 'ex-01-2'], expected the third exercise of each of "
            "its pages ['ex-00-3', 'ex-01-3']",
        ),
        ("{ref}`ex-01-1` |", "{ref}`ex-02-1` |", "lab 1: ex-02-1 is not on one of its pages"),
        ("{ref}`ex-01-1` |", "{ref}`ex-01-3` |", "lab 1: ex-01-3 is homework (a third exercise)"),
        ("Two lectures", "After {ref}`ex-02-7`: two lectures", "{ref}`ex-02-7` names no exercise"),
        (
            "| lecture 2 | c | [2](02-b.md) | — | {ref}`ex-02-3` |\n",
            "",
            "pages [2] are in no session of the plan",
        ),
    ],
)
def test_plan_rules(book, old, new, problem):
    _sync(book, {"00": 1150, "01": 3500, "02": 5990})
    assert nbs.plan_problems(book) == []
    target = book / "book" / ("01-a.md" if old.startswith("About") else "teaching.md")
    _edit(target, old, new)
    assert nbs.plan_problems(book) == [f"book/teaching.md: {problem}"]


def test_a_page_range_counts_every_page(book):
    _sync(book)
    _edit(
        book / "book" / "teaching.md",
        "| [2](02-b.md) | — | {ref}`ex-02-3` |",
        "| [1](01-a.md)–[2](02-b.md) | — | {ref}`ex-01-3`, {ref}`ex-02-3` |",
    )
    assert nbs.plan_problems(book) == []  # page 1 was read in lecture 1: 50 minutes are new


def test_the_set_up_cell_does_nothing_in_a_checkout(monkeypatch):
    def no_pip(*args, **kwargs):
        raise AssertionError("the set-up cell ran pip in a checkout")

    monkeypatch.setattr(subprocess, "run", no_pip)
    monkeypatch.delenv("MSAPOD_RESULTS", raising=False)
    code = nbs.SETUP.replace("{requirement}", nbs.requirement(ROOT))
    namespace: dict = {}
    exec(compile(code, "set-up cell", "exec"), namespace)
    assert namespace["ensure_results"]() == ROOT / "results"
    assert "MSAPOD_RESULTS" not in os.environ


def test_the_installed_extra_exists_and_the_repository_is_configured():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert nbs.EXTRA in extras
    assert nbs.requirement(ROOT).startswith(f"msapod[{nbs.EXTRA}] @ git+https://")


def test_the_repository_teaching_plan_keeps_the_rules():
    """The time table and plan of book/teaching.md against the pages' stated times."""
    assert nbs.plan_problems(ROOT) == []
    text = (ROOT / "book" / "teaching.md").read_text()
    assert nbs.with_time_table(text, ROOT / "book/teaching.md", nbs.time_table(ROOT)) == text


def test_command_line_check_fails_naming_the_page(book, capsys):
    _build(book)
    html = str(book / "_build" / "html")
    nbs.main(["sync", "--root", str(book), "--html", html])  # the set-up cells: stale
    _build(book)
    assert nbs.main(["sync", "--root", str(book), "--html", html]) == 0
    assert nbs.main(["check", "--root", str(book)]) == 0
    _edit(book / "book" / "02-b.md", "x = 1", "x = 3")
    capsys.readouterr()
    assert nbs.main(["check", "--root", str(book)]) == 1
    err = capsys.readouterr().err
    assert "book/02-b.ipynb: written from another version of book/02-b.md" in err


def test_run_executes_every_notebook_and_names_the_one_that_fails(book, capsys):
    pytest.importorskip("nbclient", reason="nbclient is not installed (the book extra)")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (the book extra)")
    _sync(book)  # the stand-in notebooks have no set-up cell (it would install msapod here)
    assert nbs.run(book, jobs=2) == 0
    out = capsys.readouterr().out
    assert "notebooks: ran 3 of 3" in out and "book/01-a.ipynb" in out
    path = book / "book" / "02-b.ipynb"
    nb = json.loads(path.read_text())
    next(c for c in nb["cells"] if c["cell_type"] == "code")["source"] = "1 / 0"
    path.write_text(json.dumps(nb))
    assert nbs.run(book, jobs=1, only="02-b") == 1
    captured = capsys.readouterr()
    assert "notebooks: ran 0 of 1" in captured.out
    assert "book/02-b.ipynb failed" in captured.err and "ZeroDivisionError" in captured.err


def _site(book: Path, colab_path: str) -> Path:
    """A built site whose pages carry the theme's launch links (Colab to ``colab_path``)."""
    html = book / "_build" / "html"
    (html / "book").mkdir(parents=True)
    for page in nbs.pages(book):
        colab = colab_path.replace("NAME", page.stem)
        (html / "book" / f"{page.stem}.html").write_text(
            f'<a href="https://colab.research.google.com/github/someone/msapod/blob/v1.2/'
            f'{colab}">Colab</a><a href="https://mybinder.org/v2/gh/someone/msapod/v1.2?'
            f'urlpath=lab/tree/book/{page.stem}.ipynb">Binder</a>'
        )
    return html


def test_launch_links_open_the_notebooks(book):
    _sync(book)
    assert nbs.launch_problems(_site(book, "book/NAME.ipynb"), book) == []
    (book / "book" / "01-a.ipynb").unlink()
    assert nbs.launch_problems(book / "_build" / "html", book) == [
        "book/01-a.ipynb: the launch buttons open it, and it does not exist"
    ]


def test_a_launch_link_to_the_markdown_source_is_refused(book):
    _sync(book)
    problems = nbs.launch_problems(_site(book, "book/NAME.md"), book)
    assert (
        problems[0] == "book/00-intro.html: Colab opens ['book/00-intro.md'], expected "
        "book/00-intro.ipynb"
    )
    assert len(problems) == 3


def _hidden_cell(lines: list[str]) -> str:
    return "```{code-cell} ipython3\n:tags: [hide-input]\n" + "\n".join(lines) + "\n```\n\n"


def test_hidden_code_outweighing_the_shown_code_is_named(book):
    assert nbs.hidden_code_problems(book) == []
    page = book / "book" / "01-a.md"
    _edit(page, "## Exercises", _hidden_cell(["y = 2"]) + "## Exercises")
    assert nbs.hidden_code(page) == {"hidden": 1, "visible": 1, "cells": [(3, 1)]}
    assert nbs.hidden_code_problems(book) == [
        "book/01-a.md: hides 1 lines of code and shows 1 (hide fewer than it shows: move "
        "the rest into the library)"
    ]
    _sync(book)  # the set-up cell (hidden, on every page) is not counted
    assert nbs.hidden_code(page)["hidden"] == 1


def test_a_long_hidden_cell_is_named_its_imports_not_counted(book):
    page = book / "book" / "02-b.md"
    visible = "\n".join(f"v{k} = {k}" for k in range(40))
    _edit(page, "x = 1", visible)
    imports = [f"import mod{k}" for k in range(5)]
    _edit(
        page,
        "## Exercises",
        _hidden_cell(imports + [f"h{k} = {k}" for k in range(15)]) + "## Exercises",
    )
    assert nbs.hidden_code_problems(book) == []  # 15 lines besides 5 imports
    _edit(page, "h0 = 0", "h0 = 0\nh15 = 15")
    assert nbs.hidden_code_problems(book) == [
        "book/02-b.md: cell 3 hides 16 lines of code besides imports (at most 15: move the "
        "rest into the library)"
    ]
    _sync(book)
    assert nbs.main(["check", "--root", str(book)]) == 1


def test_the_repository_pages_hide_less_code_than_they_show():
    assert nbs.hidden_code_problems(ROOT) == []
