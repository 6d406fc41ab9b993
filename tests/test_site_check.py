"""The site check's reading checks (.ci/site_check.py) on a small synthetic page: each
rule fires on a violation and stays quiet on the compliant twin."""

from __future__ import annotations

import base64
import importlib.util
import io
from pathlib import Path

import pytest

bs4 = pytest.importorskip("bs4")

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
