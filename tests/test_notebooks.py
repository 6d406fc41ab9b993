"""The book's generated parts (.ci/notebooks.py): set-up cells, paired notebooks, the
teaching page's time table, and the course plan's rules."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("jupytext")  # the book extra

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
        "00-intro.md": _page("Intro", "*About 10 minutes to read.*", "00"),
        "01-a.md": _page("Page A", "*About 30 minutes to read; the page runs in about 5 s.*", "01"),
        "02-b.md": _page("Page B", "*About 50 minutes to read; the page runs in about 9 s.*", "02"),
    }
    for name, text in pages.items():
        (tmp_path / "book" / name).write_text(text)
    (tmp_path / "book" / "teaching.md").write_text(
        PLAN.format(begin=nbs.TABLE_BEGIN, end=nbs.TABLE_END)
    )
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def test_sync_then_check_passes_and_sync_is_idempotent(book):
    assert nbs.drift(book)  # nothing written yet
    written = nbs.sync(book)
    assert "book/01-a.ipynb" in written and "book/teaching.md" in written
    assert nbs.drift(book) == [] and nbs.plan_problems(book) == []
    assert nbs.sync(book) == []  # a second sync changes nothing
    page = (book / "book" / "01-a.md").read_text()
    assert page.count(nbs.SETUP_MARK) == 1
    assert page.index(nbs.SETUP_MARK) < page.index("# Page A")


def test_the_notebook_is_the_page_without_outputs(book):
    nbs.sync(book)
    nb = json.loads((book / "book" / "01-a.ipynb").read_text())
    first, *rest = nb["cells"]
    assert first["cell_type"] == "code" and first["metadata"] == {"tags": ["remove-cell"]}
    assert "".join(first["source"]).startswith(nbs.SETUP_MARK)
    assert 'package = "msapod[book] @ git+https://github.com/someone/msapod@v1.2"' in "".join(
        first["source"]
    )
    code = [c for c in rest if c["cell_type"] == "code"]
    assert ["".join(c["source"]) for c in code] == ["x = 1"]
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in nb["cells"][:1] + code)
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


def test_check_names_the_page_that_drifted(book):
    nbs.sync(book)
    _edit(book / "book" / "02-b.md", "x = 1", "x = 2")
    assert nbs.drift(book) == [
        "book/02-b.ipynb: differs from book/02-b.md (outputs or cells; a pair is written from "
        "the .md)"
    ]
    nbs.sync(book)
    assert nbs.drift(book) == []


def test_check_refuses_a_notebook_saved_with_outputs(book):
    nbs.sync(book)
    path = book / "book" / "01-a.ipynb"
    nb = json.loads(path.read_text())
    cell = next(c for c in nb["cells"][1:] if c["cell_type"] == "code")
    cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["1\n"]}]
    path.write_text(json.dumps(nb))
    assert [p.split(":")[0] for p in nbs.drift(book)] == ["book/01-a.ipynb"]


def test_check_finds_a_missing_or_changed_set_up_cell(book):
    nbs.sync(book)
    page = book / "book" / "00-intro.md"
    _edit(page, "importlib.invalidate_caches()\n", "")
    assert "book/00-intro.md: its first cell is not the set-up cell" in nbs.drift(book)
    _edit(book / "_config.yml", "branch: v1.2", "branch: v1.3")
    nbs.sync(book)
    assert "@v1.3" in page.read_text() and "@v1.2" not in page.read_text()
    assert nbs.drift(book) == []


def test_time_table_follows_the_pages(book):
    nbs.sync(book)
    assert nbs.time_table(book).splitlines()[2:] == [
        "| [Intro](00-intro.md) | 10 min | — |",
        "| 1 [Page A](01-a.md) | 30 min | about 5 s |",
        "| 2 [Page B](02-b.md) | 50 min | about 9 s |",
    ]
    _edit(book / "book" / "01-a.md", "About 30 minutes", "About 35 minutes")
    assert [p.split(":")[0] for p in nbs.drift(book)] == ["book/01-a.ipynb", "book/teaching.md"]
    assert nbs.drift(book)[1] == "book/teaching.md: the time table differs from the pages"
    nbs.sync(book)
    assert "| 1 [Page A](01-a.md) | 35 min | about 5 s |" in (book / "book/teaching.md").read_text()


def test_a_page_without_a_time_line_is_named(book):
    _edit(book / "book" / "02-b.md", "*About 50 minutes to read; the page runs in about 9 s.*", "")
    with pytest.raises(nbs.Drift, match=r"book/02-b\.md: no '\*About N minutes to read"):
        nbs.sync(book)


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
    assert nbs.plan_problems(book) == []
    target = book / "book" / ("01-a.md" if old.startswith("About") else "teaching.md")
    _edit(target, old, new)
    assert nbs.plan_problems(book) == [f"book/teaching.md: {problem}"]


def test_a_page_range_counts_every_page(book):
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
    assert nbs.main(["sync", "--root", str(book)]) == 0
    assert nbs.main(["check", "--root", str(book)]) == 0
    _edit(book / "book" / "02-b.md", "x = 1", "x = 3")
    capsys.readouterr()
    assert nbs.main(["check", "--root", str(book)]) == 1
    err = capsys.readouterr().err
    assert "book/02-b.ipynb: differs from book/02-b.md" in err
    assert "notebooks.py sync` rewrites them" in err


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
    nbs.sync(book)
    assert nbs.launch_problems(_site(book, "book/NAME.ipynb"), book) == []
    (book / "book" / "01-a.ipynb").unlink()
    assert nbs.launch_problems(book / "_build" / "html", book) == [
        "book/01-a.ipynb: the launch buttons open it, and it does not exist"
    ]


def test_a_launch_link_to_the_markdown_source_is_refused(book):
    nbs.sync(book)
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
    nbs.sync(book)  # the set-up cell (hidden, on every page) is not counted
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
    nbs.sync(book)
    assert nbs.main(["check", "--root", str(book)]) == 1


def test_the_repository_pages_hide_less_code_than_they_show():
    assert nbs.hidden_code_problems(ROOT) == []
