"""The browser check (.ci/browser_check.py) on tiny local pages in headless Chromium: each
rule fires on a page with a known violation and stays quiet on its compliant twin.

Needs Chromium (``apt-get install chromium``) and axe-core (``.ci/run`` installs it with
npm into ``.ci/node_modules``; ``MSAPOD_AXE`` names another ``axe.min.js``). Without
either the tests that need it are skipped, saying which tool is missing and how to
install it (CI installs both, so there they run).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import struct
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location(
    "browser_check", Path(__file__).resolve().parents[1] / ".ci" / "browser_check.py"
)
browser_check = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(browser_check)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
AXE = Path(os.environ.get("MSAPOD_AXE", browser_check.DEFAULT_AXE))

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"
)
needs_axe = pytest.mark.skipif(
    not AXE.is_file(),
    reason=f"axe-core is not installed: no {AXE} (npm install --prefix .ci axe-core@4.14.1, "
    "or set MSAPOD_AXE)",
)

PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Tiny</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><main><h1>Tiny</h1>{body}</main></body></html>"""
WORD = "x" * 120  # a table cell about 1000 px wide

BAD = (
    '<img src="figure.png" width="10" height="10">'
    f'<div style="overflow-x: hidden; width: 200px"><table><tr><td>{WORD}</td></tr></table></div>'
    '<div id="wide" style="width: 900px">a box wider than a phone</div>'
    '<div style="overflow-x: auto" tabindex="0" role="region" aria-label="A wide figure">'
    '<img src="figure.png" width="700" height="10" alt="A figure as wide as a desktop column.">'
    "</div>"
)
GOOD = (
    '<img src="figure.png" width="10" height="10" alt="A grey square.">'
    '<div style="overflow-x: auto; max-width: 200px" tabindex="0" role="region" '
    f'aria-label="A wide table"><table><tr><td>{WORD}</td></tr></table>'
    "</div>"
    '<div id="wide" style="max-width: 900px">a box that fits a phone</div>'
    '<div style="overflow-x: auto"><img src="figure.png" width="700" height="10" '
    'style="max-width: 100%; height: auto" alt="A figure that scales to the column."></div>'
)


def _site(tmp_path: Path, body: str) -> Path:
    site = tmp_path / "html"
    (site / "book").mkdir(parents=True)
    (site / "index.html").write_text(PAGE.format(body="<p>Start.</p>"), encoding="utf-8")
    (site / "book" / "page.html").write_text(PAGE.format(body=body), encoding="utf-8")
    (site / "_static").mkdir()
    (site / "_static" / "theme.html").write_text("<html>not a page</html>", encoding="utf-8")
    # a 10 x 10 grey PNG the pages show
    import zlib

    raw = b"".join(b"\0" + b"\x80" * 10 for _ in range(10))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 10, 10, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )
    (site / "book" / "figure.png").write_bytes(png)
    return site


def _run(tmp_path: Path, body: str):
    site = _site(tmp_path, body)
    shots = tmp_path / "shots"
    problems, findings = browser_check.run(site, AXE, CHROMIUM, shots)
    return problems, findings, shots


@needs_axe
def test_flags_a_page_with_known_violations(tmp_path):
    problems, findings, shots = _run(tmp_path, BAD)
    assert [f["page"] for f in findings] == ["book/page.html", "index.html"]
    text = "\n".join(problems)
    for width in (1280, 390):
        assert f"book/page.html at {width} px: axe image-alt (critical" in text
        assert f"book/page.html at {width} px: a table is cut off" in text
    # the 900 px box fits the desktop but makes the phone's page scroll sideways
    sideways = [p for p in problems if "scrolls sideways" in p]
    assert len(sideways) == 1 and sideways[0].startswith("book/page.html at 390 px")
    assert "div#wide" in sideways[0]
    # the 700 px figure fits the desktop; on the phone it scrolls inside its box
    wide = [p for p in problems if "a figure needs a sideways scroll" in p]
    assert len(wide) == 1 and wide[0].startswith("book/page.html at 390 px"), wide
    assert "A figure as wide as a desktop column." in wide[0] and "700 px wide" in wide[0]
    layout = findings[0]["widths"]["390"]["layout"]
    assert layout["figures"] == 2
    assert not [p for p in problems if p.startswith("index.html")]


@needs_axe
def test_passes_the_compliant_twin_and_writes_the_screenshots(tmp_path):
    problems, findings, shots = _run(tmp_path, GOOD)
    assert problems == []
    for name in ("book_page", "index"):
        for width in (1280, 390):
            png = (shots / f"{name}-{width}.png").read_bytes()
            assert png[:8] == b"\x89PNG\r\n\x1a\n"
            assert struct.unpack(">I", png[16:20])[0] == width
    assert (shots / "report.json").is_file()


def test_bad_input_names_the_argument(tmp_path):
    with pytest.raises(FileNotFoundError, match="expected a built site"):
        browser_check.run(tmp_path, AXE, CHROMIUM, None)
    site = _site(tmp_path, GOOD)
    with pytest.raises(FileNotFoundError, match="--axe"):
        browser_check.run(site, tmp_path / "missing.js", CHROMIUM, None)


@needs_axe
def test_the_cdn_s_mathjax_is_answered_from_the_local_folder(tmp_path):
    """A page's request to the MathJax CDN is answered from ``--mathjax``: here a stand-in
    ``tex-mml-chtml.js`` that adds an image without alt text, which axe then finds; a
    file the folder lacks is a 404, not a hang."""
    cdn = browser_check.MATHJAX_CDN
    body = f'<script src="{cdn}es5/tex-mml-chtml.js"></script><script src="{cdn}es5/none.js">'
    body += "</script><p>Text.</p>"
    site = _site(tmp_path, body)
    mathjax = tmp_path / "mathjax"
    (mathjax / "es5").mkdir(parents=True)
    (mathjax / "es5" / "tex-mml-chtml.js").write_text(
        "const img = document.createElement('img'); img.src = 'figure.png';"
        "document.addEventListener('DOMContentLoaded', () => document.body.append(img));"
    )
    problems, _ = browser_check.run(site, AXE, CHROMIUM, None, "book/", mathjax)
    assert [p.split(" (")[0] for p in problems] == [
        "book/page.html at 1280 px: axe image-alt",
        "book/page.html at 390 px: axe image-alt",
    ]
    problems, _ = browser_check.run(site, AXE, CHROMIUM, None, "book/", None)
    assert problems == []  # without the folder the CDN is not reached: no script, no image
    with pytest.raises(FileNotFoundError, match="--mathjax"):
        browser_check.run(site, AXE, CHROMIUM, None, "book/", tmp_path)
