"""The site check's reading checks (.ci/site_check.py) on a small synthetic page: each
rule fires on a violation and stays quiet on the compliant twin."""

from __future__ import annotations

import base64
import importlib.util
import io
from pathlib import Path

import pytest

bs4 = pytest.importorskip("bs4", reason="beautifulsoup4 is not installed (the book extra)")

SPEC = importlib.util.spec_from_file_location(
    "site_check", Path(__file__).resolve().parents[1] / ".ci" / "site_check.py"
)
site_check = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(site_check)


def _png(width_in: float, dpi: int) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(width_in, 2))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _problems(tmp_path: Path, body: str) -> list[str]:
    page = tmp_path / "index.html"
    page.write_text(f"<html><body><main>{body}</main></body></html>", encoding="utf-8")
    soup = bs4.BeautifulSoup(page.read_text(), "html.parser")
    return site_check.reading_problems(tmp_path, page, soup)


def _cell(code: str, tags: str = "") -> str:
    return (
        f'<div class="cell {tags}"><div class="cell_input"><div class="highlight"><pre>'
        f"{code}</pre></div></div></div>"
    )


def test_long_visible_code_cell(tmp_path):
    long = "\n".join(f"x{i} = {i}" for i in range(16))
    short = "\n".join(f"x{i} = {i}" for i in range(15))
    assert any("16 lines" in p for p in _problems(tmp_path, _cell(long)))
    assert _problems(tmp_path, _cell(short)) == []
    assert _problems(tmp_path, _cell(long, "tag_hide-input")) == []
    solution = f'<div class="solution dropdown">{_cell(long)}</div>'
    assert _problems(tmp_path, solution) == []


def test_tables(tmp_path):
    rows = "".join(f"<tr><td>{i}</td></tr>" for i in range(31))
    table = f"<table><tbody>{rows}</tbody></table>"
    assert any("31 rows" in p for p in _problems(tmp_path, table))
    assert _problems(tmp_path, f"<details>{table}</details>") == []
    nan = "<table><tbody><tr><td>1.2</td><td>NaN</td></tr></tbody></table>"
    assert any("missing values" in p for p in _problems(tmp_path, nan))
    assert _problems(tmp_path, nan.replace("NaN", "–")) == []


def test_scaled_down_figure(tmp_path):
    def img(b64):
        src = f"data:image/png;base64,{b64}"
        return f'<div class="cell"><div class="cell_output"><img src="{src}"/></div></div>'

    assert any("dpi" in p for p in _problems(tmp_path, img(_png(14, 90))))  # 1260 px shown at 780
    assert _problems(tmp_path, img(_png(7.3, 104))) == []  # drawn at the displayed size


def test_paper_md_and_plain_citations(tmp_path):
    assert any("PAPER.md" in p for p in _problems(tmp_path, "<p>see PAPER.md</p>"))
    plain = "<p>a specification curve (Simonsohn et al. 2020)</p>"
    assert any("plain-text citation" in p for p in _problems(tmp_path, plain))
    linked = '<p><a href="references.html#x">Simonsohn et al. [2020]</a></p>'
    assert _problems(tmp_path, linked) == []


def test_every_cited_key_is_in_the_bibliography():
    repo = Path(__file__).resolve().parents[1]
    assert site_check.citation_problems(repo) == []


#: a scorecard in the shape of _scorecard_columns (claim -> verdict columns)
CARD = {
    "c1": {"verdict": "does not hold", "verdict_paper-size": "partly", "llm_verdict": "—"},
    "c2": {"verdict": "does not hold", "verdict_paper-size": "partly", "llm_verdict": "—"},
    "c7": {"verdict": "not significant", "verdict_paper-size": "—", "llm_verdict": "—"},
    "c3": {"verdict": "does not hold", "verdict_paper-size": "—", "llm_verdict": "partly"},
    "l": {"verdict": "not significant", "verdict_paper-size": "—", "llm_verdict": "—"},
}


def _verdict_problems(body: str) -> list[str]:
    soup = bs4.BeautifulSoup(f"<html><body><article>{body}</article></body></html>", "html.parser")
    return site_check.verdict_text_problems("page.html", soup, CARD)


def test_verdict_words_next_to_claim_ids():
    agree = (
        "<p><strong>C1</strong> and <strong>C2</strong> do not hold; <strong>C7</strong> is "
        "not significant. The loss claim (<strong>L</strong>) is not significant.</p>"
    )
    assert _verdict_problems(agree) == []
    wrong = "<p>The early layers: <strong>C1</strong> is not testable as stated.</p>"
    (problem,) = _verdict_problems(wrong)
    assert "C1" in problem and "'not testable as stated'" in problem and "does not hold" in problem
    # each verdict word belongs to the ids written before it in its clause
    (problem,) = _verdict_problems("<p>C1 does not hold and C7 holds.</p>")
    assert problem.startswith("page.html: C7 is 'holds'")


def test_verdict_words_of_another_zoo_or_reading():
    # the text names the zoo: its column decides
    assert _verdict_problems("<li>On the paper-size zoo C1 holds partly.</li>") == []
    assert _verdict_problems("<li>On the paper-size zoo C1 does not hold.</li>") != []
    # the nearest heading names the LLM
    llm = "<h2>The same claims on SmolLM2</h2><p>There C3 holds partly.</p>"
    assert _verdict_problems(llm) == []
    assert _verdict_problems(llm.replace("holds partly", "holds")) != []
    # a rule's definition or another reading is not compared
    assert _verdict_problems("<p>C1 holds if every case passes.</p>") == []
    assert _verdict_problems("<p>At N = 600 the rule of C1 reads partly.</p>") == []
    # a possibility, another zoo, a quoted report line: not a verdict of the scorecard's
    assert _verdict_problems("<p>C7 cannot hold with one model.</p>") == []
    assert _verdict_problems("<p>Another zoo's C7 is not testable.</p>") == []
    assert _verdict_problems("<p>Alone, C7 says “not testable as stated”.</p>") == []
    assert _verdict_problems("<p>Alone, C7 is not testable as stated.</p>") != []


def test_verdict_tables_and_boxes():
    def table(head, word):
        return (
            f"<table><thead><tr><th>claim</th><th>{head}</th></tr></thead>"
            f"<tbody><tr><td>C1</td><td>{word}</td></tr></tbody></table>"
        )

    assert _verdict_problems(table("verdict", "does not hold")) == []
    assert any("C1" in p for p in _verdict_problems(table("verdict", "not significant")))
    assert _verdict_problems(table("paper-size (1 + 1 models)", "partly")) == []
    assert _verdict_problems(table("paper-size (1 + 1 models)", "does not hold")) != []
    # a table of verdicts per training step (one snapshot each) has no scorecard column
    step = "<h2>The patterns at each training step</h2>" + table("300", "holds")
    assert _verdict_problems(step) == []
    assert _verdict_problems(step.replace("training step", "stage")) != []

    def box(text):
        return (
            '<div class="admonition verdict claim-C1"><p class="admonition-title">C1: '
            f"fine scales early</p><p><strong>{text}</strong> (the book's default reading): "
            "every case passes.</p></div>"
        )

    assert _verdict_problems(box("does not hold</strong> on the d128 zoo<strong>")) == []
    assert _verdict_problems(box("holds</strong> on the d128 zoo<strong>")) != []
    assert _verdict_problems(box("partly</strong> on the paper-size zoo<strong>")) == []


def _output_problems(body: str) -> list[str]:
    soup = bs4.BeautifulSoup(f"<html><body><article>{body}</article></body></html>", "html.parser")
    return site_check.output_problems("page.html", soup)


def _out(text: str) -> str:
    return f'<div class="cell"><div class="cell_output"><pre>{text}</pre></div></div>'


def _figure(alt: str, caption: str | None) -> str:
    img = f'<img alt="{alt}" src="../_images/abc.png"/>'
    if caption is None:
        return f'<div class="cell_output">{img}</div>'
    cap = f"<figcaption><p>{caption}</p></figcaption>" if caption else "<figcaption></figcaption>"
    return f'<div class="cell_output"><figure id="fig-x">{img}{cap}</figure></div>'


def test_figures_need_a_caption_and_an_alt_text():
    ok = _figure(
        "Six heat maps of the mean field, one per layer.", "The mean field. What to see: ..."
    )
    assert _output_problems(ok) == []
    assert any("no caption" in p for p in _output_problems(_figure("Six heat maps.", None)))
    assert any("no caption" in p for p in _output_problems(_figure("Six heat maps.", "")))
    for alt in ("", "../_images/ca0cdcfb.png", "_images/x.svg"):
        assert any("alt text" in p for p in _output_problems(_figure(alt, "A caption."))), alt


@pytest.mark.parametrize(
    "raw",
    [
        "EGA models: [np.str_('ega-1'), np.str_('ega-2')]",
        "{'unwindowed': array([ 4. , 19.2, 66.1])}",
        "per head: {'layer': 6, 'head': 8}",
        "files: ['config.json', 'log.json']",
        "low H* and high importance: [(1, 1), (1, 3)]",
        "scales: [ 3.    4.   5.25]",
        "per model [-15. -14.  nan  nan]",
        "period of a*: nan",
        "first layer that leaks: None",
        "max relative difference: 3.6348215251310125e-16",
        "ega-4 L1: 48.1 [0.0, 2001937.2]",
    ],
)
def test_raw_values_in_an_output_fail(raw):
    problems = _output_problems(_out(raw))
    assert len(problems) == 1 and "raw value" in problems[0], problems


@pytest.mark.parametrize(
    "clean",
    [
        "EGA models: ega-1, ega-2 and ega-3",
        "max relative difference: below 1e-15",
        "a* = 25.8 [25.7, 25.9]; version 2.13.0",
        "NaN entries are shown grey; None of the layers reaches the ceiling.",
        "validation loss 1.46153 nats/char",
    ],
)
def test_formatted_outputs_pass(clean):
    assert _output_problems(_out(clean)) == []


def test_raw_values_in_glued_text_and_prose():
    glued = '<p>the mean lag is <span class="pasted-text">nan</span> characters</p>'
    assert any("raw value" in p for p in _output_problems(glued))
    # prose: reprs and long numbers fail, NaN as a word and code spans pass
    assert any("raw value" in p for p in _output_problems("<p>layers {'a': 1}</p>"))
    assert any("raw value" in p for p in _output_problems("<p>ratio 5.2468714626947754</p>"))
    prose = "<p>the result is NaN when <code>np.nan</code> or <code>{'a': 1}</code>.</p>"
    assert _output_problems(prose) == []
    doi = '<p><a class="reference external" href="https://doi.org/x">10.48550/2104.12345</a></p>'
    assert _output_problems(doi) == []


def test_elided_tables_fail():
    elided = (
        '<div class="cell_output"><table class="dataframe"><tbody><tr><th>1</th><td>0.5</td>'
        "<td>...</td><td>0.7</td></tr></tbody></table><p>6 rows × 32 columns</p></div>"
    )
    assert any("elided" in p for p in _output_problems(elided))
    whole = elided.replace("<td>...</td>", "<td>0.6</td>").replace("<p>6 rows × 32 columns</p>", "")
    assert _output_problems(whole) == []
    assert any("elided" in p for p in _output_problems(_out("  ...  \n6 rows × 32 columns")))


def test_the_book_extension_drops_a_script_declared_twice():
    """_ext/msapod_site.py: a page's exact repeats of a script go, the first stays."""
    assets = pytest.importorskip("sphinx.builders.html._assets")  # the book extra
    _JavaScript = assets._JavaScript

    spec = importlib.util.spec_from_file_location(
        "msapod_site", Path(__file__).resolve().parents[1] / "_ext" / "msapod_site.py"
    )
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    body = 'const THEBE_JS_URL = "x"'
    scripts = [
        _JavaScript(None, body=body),
        _JavaScript("a.js"),
        _JavaScript("", body=body),  # the same inline script, its file written ""
        _JavaScript("a.js", **{"async": "async"}),  # another attribute: kept
        _JavaScript("a.js"),
    ]
    context = {"script_files": scripts}
    ext.drop_repeated_scripts(None, "page", "page.html", context, None)
    assert context["script_files"] == [scripts[0], scripts[1], scripts[3]]
