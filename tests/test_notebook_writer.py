"""The build's notebook writer (_ext/msapod_notebooks.py): a tiny Jupyter Book built with
the writer gives a plain Jupyter notebook per page (glued values, numbered exercises,
links to the site, folded solutions, captions, every code cell in the page's order), which
replaces the download button's copy; and the writer's parts on small doctrees."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("sphinx", reason="the book extra is not installed (pip install -e .[book])")
from docutils import nodes  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


writer = _load("msapod_notebooks", ROOT / "_ext" / "msapod_notebooks.py")

SITE = "https://example.org/tiny/"
CONFIG = f"""title: Tiny
only_build_toc_files: true
execute:
  execute_notebooks: force
  timeout: 120
parse:
  myst_enable_extensions: [dollarmath, amsmath, colon_fence]
bibtex_bibfiles: [refs.bib]
html:
  baseurl: {SITE}
launch_buttons:
  binderhub_url: "https://mybinder.org"
repository:
  url: https://github.com/someone/tiny
  branch: main
sphinx:
  extra_extensions: [sphinx_exercise]
  local_extensions:
    msapod_notebooks: {ROOT / "_ext"}
  config:
    numfig_secnum_depth: 1
    bibtex_reference_style: author_year
"""
TOC = """format: jb-book
root: intro
parts:
  - caption: Pages
    numbered: 1
    chapters:
      - file: page
"""
BIB = """@article{doe2020,
  author = {Doe, Jane},
  title = {A paper},
  journal = {A journal},
  year = {2020}
}
"""
INTRO = "# Intro\n\nThe book.\n\n```{bibliography}\n```\n"
FRONT = """---
jupytext:
  text_representation: {format_name: myst}
kernelspec: {name: python3, display_name: Python 3}
---
"""
PAGE = (
    FRONT
    + f"""
```{{code-cell}} ipython3
:tags: [remove-cell]

{writer.SETUP_MARK}
ready = True
```

# A page

```{{admonition}} Learning objectives
:class: tip
*About 5 minutes to read.* After this page you can count.
```

Text with a\\_b\\_, an asterisk \\* and math $x_1 + y$:

$$
a = \\frac{{1}}{{2}}
$$

```{{code-cell}} ipython3
from myst_nb import glue
n = 150
```

```{{code-cell}} ipython3
:tags: [remove-cell]
glue("n", n, display=False)
```

That is {{glue:text}}`n` snippets; see {{ref}}`ex-01-1` and {{cite:p}}`doe2020`.

```{{admonition}} More
:class: dropdown
Folded text.
```

| symbol | meaning |
|---|---|
| $N$ | snapshots |

```{{code-cell}} ipython3
---
mystnb:
  figure:
    caption: |
      A line. **What to see:** it rises.
    name: fig-line
  image:
    alt: A rising line.
---
import matplotlib.pyplot as plt
plt.plot([0, 1]);
```

## Exercises

```{{exercise}}
:label: ex-01-1

Double $n$.
```

```{{solution-start}} ex-01-1
:class: dropdown
```

Multiply by two:

```{{code-cell}} ipython3
print(2 * n)
```

That prints 300.

```{{solution-end}}
```
"""
)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The tiny book, built with ``jupyter-book build -W`` (the page executed)."""
    pytest.importorskip("jupyter_book", reason="jupyter-book is not installed (the book extra)")
    pytest.importorskip("sphinx_exercise", reason="sphinx-exercise is not installed (book extra)")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (the book extra)")
    jb = shutil.which("jupyter-book", path=str(Path(sys.executable).parent))
    if jb is None:
        pytest.skip("the jupyter-book command is not installed (the book extra)")
    book = tmp_path_factory.mktemp("tiny-book")
    for name, text in {
        "_config.yml": CONFIG,
        "_toc.yml": TOC,
        "refs.bib": BIB,
        "intro.md": INTRO,
        "page.md": PAGE,
    }.items():
        (book / name).write_text(text)
    done = subprocess.run(
        [jb, "build", str(book), "-W", "--keep-going"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return book


def _notebook(built: Path) -> tuple[list[dict], dict]:
    nb = json.loads((built / "_build" / "html" / "_sources" / "page.ipynb").read_text())
    cells = [{**c, "source": "".join(c["source"])} for c in nb["cells"]]
    return cells, nb["metadata"]


def test_the_page_s_notebook_is_plain_jupyter_with_the_site_s_values(built):
    cells, _ = _notebook(built)
    markdown = "\n\n".join(c["source"] for c in cells if c["cell_type"] == "markdown")
    assert cells[1]["source"].startswith("# 1. A page\n\n> **Learning objectives**\n>\n")
    assert "> *About 5 minutes to read.* After this page you can count." in markdown
    assert r"Text with a_b\_, an asterisk \* and math $x_1 + y$:" in markdown  # a_b: no emphasis
    assert "<script" not in markdown  # sphinx-thebe's configuration is not the page's
    assert "$$\na = \\frac{1}{2}\n$$" in markdown
    assert (
        f"That is 150 snippets; see [Exercise 1.1]({SITE}page.html#ex-01-1) and "
        f"\\[[Doe, 2020]({SITE}intro.html#id" in markdown
    )
    assert "<details>\n<summary>More</summary>\n\nFolded text.\n\n</details>" in markdown
    assert "| symbol | meaning |\n|---|---|\n| $N$ | snapshots |" in markdown
    assert "**Fig. 1.1** A line. **What to see:** it rises." in markdown
    assert "### Exercise 1.1\n\nDouble $n$." in markdown
    spec = importlib.util.find_spec("markdown_it")
    if spec is None:
        pytest.skip("markdown-it-py is not installed (the book extra)")
    nbs = _load("notebooks", ROOT / ".ci" / "notebooks.py")
    assert nbs.myst_problems({"cells": cells}, "page.ipynb") == []


def test_every_code_cell_in_the_page_s_order_hidden_as_the_site_hides_it(built):
    cells, _ = _notebook(built)
    code = [(c["source"].splitlines()[0], c["metadata"].get("jupyter", {})) for c in cells
            if c["cell_type"] == "code"]  # fmt: skip
    assert code == [
        (writer.SETUP_MARK, {}),  # the set-up cell stays open
        ("from myst_nb import glue", {}),
        ('glue("n", n, display=False)', {"source_hidden": True, "outputs_hidden": True}),
        ("import matplotlib.pyplot as plt", {}),
        ("print(2 * n)", {"source_hidden": True, "outputs_hidden": True}),  # a solution's
    ]
    kinds = [c["cell_type"] for c in cells]
    glue_cell = next(n for n, c in enumerate(cells) if c["source"].startswith("glue("))
    assert cells[glue_cell + 1]["source"].startswith("That is 150 snippets")
    assert all(c["outputs"] == [] for c in cells if c["cell_type"] == "code")
    solution = [c["source"] for c in cells if c["source"].startswith("<details>\n<summary>Sol")]
    assert solution == [
        "<details>\n<summary>Solution to Exercise 1.1</summary>\n\nMultiply by two:\n\n"
        "*Its code is in the next cell (collapsed).*\n\n</details>",
        "<details>\n<summary>Solution to Exercise 1.1 (continued)</summary>\n\n"
        "That prints 300.\n\n</details>",
    ]
    assert kinds[-3:] == ["markdown", "code", "markdown"]


def test_the_notebook_records_its_page_and_replaces_the_download(built):
    cells, meta = _notebook(built)
    page = (built / "page.md").read_text()
    assert meta["msapod"]["source_sha256"] == writer.source_digest(page)
    assert 50 < meta["msapod"]["words"] < 150
    assert meta["kernelspec"]["name"] == "python3"
    html = (built / "_build" / "html" / "page.html").read_text()
    assert 'href="_sources/page.ipynb"' in html  # the download button serves this notebook


def _page(doctree=None) -> writer.Page:
    config = SimpleNamespace(html_baseurl=SITE, numfig_format={"figure": "Fig. %s"})
    env = SimpleNamespace(toc_fignumbers={}, toc_secnumbers={})
    notebook = SimpleNamespace(cells=[], metadata={})
    return writer.Page(SimpleNamespace(config=config, env=env), "page", doctree, notebook)


def test_a_node_without_markdown_is_refused_naming_it():
    sidebar = nodes.sidebar("", nodes.paragraph(text="aside"))
    with pytest.raises(writer.Unsupported, match=r"block sidebar \('aside'\)"):
        _page().block(sidebar)


def test_a_missing_site_address_is_refused():
    with pytest.raises(writer.Unsupported, match="html.baseurl"):
        writer.Page(
            SimpleNamespace(config=SimpleNamespace(html_baseurl=""), env=SimpleNamespace()),
            "page",
            None,
            SimpleNamespace(cells=[], metadata={}),
        )


@pytest.mark.parametrize(
    "text, markdown",
    [
        ("a_b_c", "a_b_c"),  # inside a word: no emphasis, no escape
        ("_x_ and *y*", r"\_x\_ and \*y\*"),
        ("costs $5 [see] <b> `q` ~", r"costs \$5 \[see\] \<b\> \`q\` \~"),
        ("two\nlines", "two lines"),
    ],
)
def test_text_renders_as_itself(text, markdown):
    assert writer.escape(text) == markdown


def test_a_table_cell_keeps_its_pipes_inside_the_cell():
    entry = nodes.entry("", nodes.paragraph("", "", nodes.Text("a | b "), nodes.math(text="|x|")))
    assert _page().cell(entry) == r"a \| b $\vert x\vert $"
    assert _page().inline(nodes.Text("a | b")) == "a | b"  # outside a table: as it is


def test_a_paragraph_that_starts_like_a_block_is_escaped():
    page = _page()
    assert page.block(nodes.paragraph(text="1. not a list")) == r"\1. not a list"
    assert page.block(nodes.paragraph(text="# not a heading")) == r"\# not a heading"


def test_reading_words_leave_out_code_and_folded_text():
    doc = nodes.document(None, None)
    doc += nodes.paragraph(text="one two three")
    cell = nodes.container(nb_element="cell_code", cell_metadata={"tags": []})
    cell += nodes.container(
        "", nodes.literal_block(text="x = 1 + 2"), nb_element="cell_code_source"
    )
    cell += nodes.container("", nodes.raw(text="<p>four <b>five</b></p>", format="html"),
                            nb_element="cell_code_output")  # fmt: skip
    doc += cell
    folded = nodes.admonition("", nodes.paragraph(text="not counted"), classes=["dropdown"])
    doc += folded
    hidden = nodes.container(nb_element="cell_code", cell_metadata={"tags": ["hide-output"]})
    hidden += nodes.container("", nodes.paragraph(text="not this"), nb_element="cell_code_output")
    doc += hidden
    assert writer.reading_words(doc) == 5


def test_the_digest_leaves_out_the_reading_time_only():
    page = "# A\n\n*About 5 minutes to read; the page runs in about 3 s.* Text."
    same = page.replace("About 5", "About 25")
    assert writer.source_digest(page) == writer.source_digest(same)
    assert writer.source_digest(page) != writer.source_digest(page.replace("Text", "Test"))
