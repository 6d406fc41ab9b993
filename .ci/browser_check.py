"""The built site in a real browser: every page opened in headless Chromium at a desktop
and a phone width, photographed, laid out and checked for accessibility.

Usage: ``python .ci/browser_check.py _build/html [--shots _build/screenshots]
[--axe PATH/axe.min.js] [--mathjax PATH/mathjax] [--chromium chromium] [--only TEXT]``.
Exit status 1 with one line per problem, 2 when an input is missing (named).

For every page of the built site, at each width of :data:`WIDTHS` (1280 and 390 CSS
pixels; the narrow one as a phone, ``mobile`` viewport):

* a screenshot of the whole page (at most :data:`MAX_SHOT_HEIGHT` pixels tall) is written
  to ``--shots`` as ``<page>-<width>.png``, with ``report.json`` (every finding);
* **accessibility**: axe-core (``--axe``, the ``axe.min.js`` of the npm package) runs on
  the page; each violation of impact *serious* or *critical* is a problem, named by page,
  width, rule and element (its CSS selector and the start of its HTML). The rules of
  :data:`EXCLUDED` are not run, each for the reason written beside it;
* **layout**: the page does not scroll sideways (an element wider than the screen and not
  inside a box that scrolls is named); no figure (an image of the page's content) needs a
  sideways scroll, of the page or of a box (figures scale to the column:
  ``_static/msapod.css``); and no table is cut off by a box that hides its overflow (a
  table wider than its column must scroll inside its box);
* **script errors**: an uncaught exception in the page's scripts is a problem.

The browser is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
JSON messages separated by NUL bytes on file descriptors 3 and 4), so the check needs
only the Python standard library and a Chromium binary; the site is served from a local
HTTP server, as a reader's browser would load it. The pages load MathJax from a CDN;
with ``--mathjax`` (the npm package ``mathjax@3``, which ``.ci/run`` installs beside
axe-core) those requests are answered from that folder, so the screenshots and the
checks see the typeset formulas without a network.
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import functools
import http.server
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

#: (CSS width, CSS height, mobile) of the two screens each page is shown on
WIDTHS = ((1280, 900, False), (390, 844, True))
#: the tallest screenshot written (pixels); a longer page is cut there
MAX_SHOT_HEIGHT = 16000
#: the axe-core impacts that fail the check
FAILING_IMPACTS = ("serious", "critical")
#: axe-core rules not run, each with the reason (none: every rule runs)
EXCLUDED: dict[str, str] = {}
#: folders of the built site that hold no pages
SKIP_DIRS = {"_static", "_sources", "_images", "_sphinx_design_static", "_panels_static"}
#: the axe-core the check expects, installed by ``.ci/run`` (``npm install``)
DEFAULT_AXE = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"
#: the MathJax 3 the check serves in place of the CDN's, installed by ``.ci/run``
DEFAULT_MATHJAX = Path(__file__).resolve().parent / "node_modules" / "mathjax"
#: where the pages load MathJax from (Jupyter Book's default)
MATHJAX_CDN = "https://cdn.jsdelivr.net/npm/mathjax@3/"
MIME = {".js": "text/javascript", ".woff": "font/woff", ".json": "application/json"}

#: JS: wait until the page's fonts and MathJax have rendered (MathJax 3 or none)
READY_JS = """(async () => {
  await document.fonts.ready;
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  return document.documentElement.scrollHeight;
})()"""

#: JS: what scrolls sideways and which tables are cut (see the module docstring)
LAYOUT_JS = r"""(() => {
  const vw = document.documentElement.clientWidth;
  const describe = el => {
    let s = el.tagName.toLowerCase();
    if (el.id) s += '#' + el.id;
    const cls = [...el.classList].slice(0, 3);
    if (cls.length) s += '.' + cls.join('.');
    const text = (el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 50);
    return text ? `${s} ("${text}")` : s;
  };
  const scrollBox = el => {  // the nearest ancestor that clips or scrolls sideways
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o !== 'visible') return [p, o];
    }
    return [null, 'visible'];
  };
  const shown = el => {  // laid out in the page: not fixed (off-canvas drawers), not hidden
    for (let p = el; p && p !== document.body; p = p.parentElement) {
      const st = getComputedStyle(p);
      if (st.position === 'fixed' || st.visibility === 'hidden') return false;
    }
    return true;
  };
  const out = {sideways: [], cut: [], figures: 0, wide_figures: [], width: vw,
               scrollWidth: document.documentElement.scrollWidth};
  for (const img of document.querySelectorAll('main img, article img')) {
    const r = img.getBoundingClientRect();
    if (r.width === 0 || !shown(img)) continue;
    out.figures += 1;
    const [box] = scrollBox(img);
    const room = box ? box.clientWidth : vw;
    if (r.width > room + 1 || r.right > vw + 1) {
      const alt = (img.getAttribute('alt') || img.getAttribute('src') || '').slice(0, 50);
      out.wide_figures.push(`img ("${alt}") is ${Math.round(r.width)} px wide in ` +
                            `${Math.round(Math.min(room, vw))} px`);
    }
  }
  if (out.scrollWidth > vw + 1) {
    for (const el of document.body.querySelectorAll('*')) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.right <= vw + 1 || !shown(el)) continue;
      const [box] = scrollBox(el);
      if (box) continue;  // inside a box that scrolls or clips: not the page's overflow
      const parent = el.parentElement;
      if (parent && parent !== document.body &&
          parent.getBoundingClientRect().right > vw + 1 && !scrollBox(parent)[0]) continue;
      out.sideways.push(`${describe(el)} reaches ${Math.round(r.right)} px`);
      if (out.sideways.length >= 3) break;
    }
  }
  for (const t of document.querySelectorAll('main table, article table')) {
    const [box, o] = scrollBox(t);
    if (box && (o === 'hidden' || o === 'clip') && t.scrollWidth > box.clientWidth + 1) {
      out.cut.push(`${describe(t)}: ${t.scrollWidth} px in a ${box.clientWidth} px box ` +
                   `(${describe(box).split(' ')[0]}) that hides its overflow`);
    }
  }
  return JSON.stringify(out);
})()"""

#: JS: run axe-core, the violations as JSON (rule, impact, help, elements)
AXE_JS = """(async () => {
  const options = {resultTypes: ['violations'], rules: %s};
  const r = await axe.run(document, options);
  return JSON.stringify(r.violations.map(v => ({
    rule: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.join(' '), impact: n.impact,
                              html: n.html.slice(0, 160),
                              why: (n.failureSummary || '').slice(0, 300)}))})));
})()"""


class BrowserError(RuntimeError):
    """Chromium could not be started or did not answer."""


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe."""

    def __init__(self, binary: str, timeout: float = 60.0, local: dict | None = None):
        self.timeout = timeout
        self.local = dict(local or {})  # URL prefix -> folder that answers it
        self._id = 0
        self._events: list[dict] = []
        self._buf = b""
        self._profile = tempfile.mkdtemp(prefix="browser-check-")
        to_child, self._write = os.pipe()  # the browser reads its commands on fd 3
        self._read, from_child = os.pipe()  # and writes its answers on fd 4

        def fds():
            a = fcntl.fcntl(to_child, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_child, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [
            binary,
            "--headless",
            "--remote-debugging-pipe",
            f"--user-data-dir={self._profile}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--font-render-hinting=none",
        ]
        # no sandbox: Chromium refuses it as root, and CI containers often lack the user
        # namespaces it needs; the pages it opens are the book's own
        args.append("--no-sandbox")
        try:
            self.proc = subprocess.Popen(
                [*args, "about:blank"],
                close_fds=False,  # fds 3 and 4 (dup2 makes them inheritable); others close
                preexec_fn=fds,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        except OSError as err:
            raise BrowserError(f"--chromium {binary!r}: cannot start it ({err})") from err
        finally:
            os.close(to_child)
            os.close(from_child)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._write, self._read):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def _message(self, timeout: float) -> dict:
        """The next message from the browser; paused requests are answered on the way
        (:meth:`_answer`) and the replies to :meth:`_post` skipped."""
        while True:
            while b"\0" not in self._buf:
                ready, _, _ = select.select([self._read], [], [], timeout)
                if not ready:
                    raise BrowserError(f"Chromium did not answer within {timeout:.0f} s")
                chunk = os.read(self._read, 1 << 20)
                if not chunk:
                    raise BrowserError(f"Chromium exited (status {self.proc.poll()})")
                self._buf += chunk
            msg, self._buf = self._buf.split(b"\0", 1)
            message = json.loads(msg)
            if message.get("method") == "Fetch.requestPaused":
                self._answer(message)
            elif message.get("id", 0) >= 0:
                return message

    def _post(self, method: str, params: dict, session: str | None) -> None:
        """Send a command without waiting for its reply (which is then skipped)."""
        self._id += 1
        msg = {"id": -self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._write, json.dumps(msg).encode() + b"\0")

    def _answer(self, event: dict) -> None:
        """Answer a paused request for a :attr:`local` URL from its folder (404 if the
        file is not there)."""
        p, session = event["params"], event.get("sessionId")
        url = p["request"]["url"].split("?", 1)[0].split("#", 1)[0]
        prefix = next((k for k in self.local if url.startswith(k)), None)
        path = None
        if prefix is not None:
            folder = self.local[prefix].resolve()
            path = (folder / url[len(prefix) :]).resolve()
            if not path.is_file() or folder not in path.parents:
                path = None
        if path is None:
            answer = {"requestId": p["requestId"], "responseCode": 404}
            self._post("Fetch.fulfillRequest", answer, session)
            return
        kind = MIME.get(path.suffix, "application/octet-stream")
        headers = [
            {"name": "Content-Type", "value": kind},
            {"name": "Access-Control-Allow-Origin", "value": "*"},
        ]
        answer = {
            "requestId": p["requestId"],
            "responseCode": 200,
            "responseHeaders": headers,
            "body": base64.b64encode(path.read_bytes()).decode(),
        }
        self._post("Fetch.fulfillRequest", answer, session)

    def send(self, method: str, params=None, session=None, timeout=None) -> dict:
        """Send one command and return its result (events that arrive meanwhile are kept)."""
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._write, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._message(timeout or self.timeout)
            if reply.get("id") != self._id:
                self._events.append(reply)
                continue
            if "error" in reply:
                raise BrowserError(f"{method}: {reply['error'].get('message', reply['error'])}")
            return reply.get("result", {})

    def wait_event(self, name: str, session: str, timeout=None) -> dict:
        for n, ev in enumerate(self._events):
            if ev.get("method") == name and ev.get("sessionId") == session:
                return self._events.pop(n)
        while True:
            ev = self._message(timeout or self.timeout)
            if ev.get("method") == name and ev.get("sessionId") == session:
                return ev
            self._events.append(ev)

    def take_events(self, name: str, session: str) -> list[dict]:
        found = [e for e in self._events if e.get("method") == name]
        self._events = [e for e in self._events if e.get("method") != name]
        return [e for e in found if e.get("sessionId") == session]

    def tab(self) -> str:
        """A new tab; its session id."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        sid = session["sessionId"]
        self.send("Page.enable", session=sid)
        self.send("Runtime.enable", session=sid)
        if self.local:
            patterns = [{"urlPattern": prefix + "*"} for prefix in self.local]
            self.send("Fetch.enable", {"patterns": patterns}, session=sid)
        return sid

    def evaluate(self, session: str, expression: str, timeout=None):
        """The value of a JavaScript expression (awaited if it is a promise)."""
        r = self.send(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            session=session,
            timeout=timeout,
        )
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            text = d.get("exception", {}).get("description") or d.get("text")
            raise BrowserError(f"script failed: {text}")
        return r["result"].get("value")


@functools.cache
def _quiet_handler(directory: str):
    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=directory, **k)

        def log_message(self, *a):  # the check prints its own findings
            pass

    return Handler


def serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """A local HTTP server of ``root`` (in a thread); the server and its base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _quiet_handler(str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


REDIRECT = re.compile(r"<meta\s+http-equiv=[\"']?refresh", re.I)


def site_pages(root: Path) -> list[Path]:
    """The pages of the built site (``*.html`` outside the theme's folders; not a page that
    only redirects to another, such as the root ``index.html``), sorted."""
    return sorted(
        p
        for p in root.rglob("*.html")
        if not SKIP_DIRS & set(p.relative_to(root).parts)
        and not REDIRECT.search(p.read_text(encoding="utf-8", errors="replace")[:2000])
    )


def check_page(browser: Browser, tab: str, url: str, name: str, axe: str, shots: Path | None):
    """Problems (lines) and findings (dict) of one page at every width of :data:`WIDTHS`."""
    problems, findings = [], {"page": name, "widths": {}}
    rules = json.dumps({rule: {"enabled": False} for rule in EXCLUDED})
    for width, height, mobile in WIDTHS:
        where = f"{name} at {width} px"
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
            session=tab,
        )
        browser.take_events("Runtime.exceptionThrown", tab)
        browser.take_events("Page.loadEventFired", tab)
        browser.send("Page.navigate", {"url": url}, session=tab)
        browser.wait_event("Page.loadEventFired", tab)
        full = int(browser.evaluate(tab, READY_JS) or height)
        seen: dict = {"height": full}
        if shots is not None:
            clip = {"x": 0, "y": 0, "width": width, "height": min(full, MAX_SHOT_HEIGHT)}
            shot = browser.send(
                "Page.captureScreenshot",
                {"format": "png", "captureBeyondViewport": True, "clip": {**clip, "scale": 1}},
                session=tab,
                timeout=120,
            )
            out = shots / f"{name.removesuffix('.html').replace('/', '_')}-{width}.png"
            out.write_bytes(base64.b64decode(shot["data"]))
            seen["screenshot"] = out.name
        layout = json.loads(browser.evaluate(tab, LAYOUT_JS))
        seen["layout"] = layout
        for what in layout["sideways"]:
            problems.append(f"{where}: the page scrolls sideways: {what}")
        for what in layout["cut"]:
            problems.append(f"{where}: a table is cut off: {what}")
        for what in layout["wide_figures"]:
            problems.append(f"{where}: a figure needs a sideways scroll: {what}")
        browser.evaluate(tab, axe)
        violations = json.loads(browser.evaluate(tab, AXE_JS % rules, timeout=180))
        seen["axe"] = violations
        for v in violations:
            for node in v["nodes"]:
                impact = node.get("impact") or v.get("impact")
                if impact in FAILING_IMPACTS:
                    why = (node.get("why") or "").strip().splitlines()
                    problems.append(
                        f"{where}: axe {v['rule']} ({impact}: {v['help']}) at "
                        f"{node['target']}: {node['html'][:100]}"
                        + (f" [{why[-1].strip()}]" if why else "")
                    )
        errors = browser.take_events("Runtime.exceptionThrown", tab)
        for ev in errors:
            d = ev["params"]["exceptionDetails"]
            text = d.get("exception", {}).get("description") or d.get("text", "")
            problems.append(f"{where}: script error: {text.splitlines()[0][:120]}")
        findings["widths"][str(width)] = seen
    return problems, findings


def run(
    root: Path,
    axe_path: Path,
    chromium: str,
    shots: Path | None,
    only: str | None = None,
    mathjax: Path | None = None,
) -> tuple[list, list]:
    """Check every page of the built site ``root`` (those whose path contains ``only``);
    the problems and the findings. ``mathjax``: a folder of the npm package ``mathjax@3``
    that answers the pages' requests to :data:`MATHJAX_CDN`."""
    if not (root / "index.html").is_file():
        raise FileNotFoundError(f"{root}: expected a built site (no index.html)")
    if not axe_path.is_file():
        raise FileNotFoundError(
            f"--axe {axe_path}: no axe-core (npm install --prefix .ci axe-core installs it)"
        )
    if mathjax is not None and not (mathjax / "es5" / "tex-mml-chtml.js").is_file():
        raise FileNotFoundError(
            f"--mathjax {mathjax}: no es5/tex-mml-chtml.js (npm install --prefix .ci mathjax@3)"
        )
    binary = shutil.which(chromium) or (chromium if Path(chromium).is_file() else None)
    if binary is None:
        raise FileNotFoundError(f"--chromium {chromium!r}: not found (apt-get install chromium)")
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
    axe = axe_path.read_text(encoding="utf-8")
    server, base = serve(root)
    problems, findings = [], []
    try:
        local = {MATHJAX_CDN: mathjax} if mathjax is not None else {}
        with Browser(binary, local=local) as browser:
            tab = browser.tab()
            for page in site_pages(root):
                name = page.relative_to(root).as_posix()
                if only and only not in name:
                    continue
                try:
                    p, f = check_page(browser, tab, base + name, name, axe, shots)
                except BrowserError as err:
                    p, f = [f"{name}: the browser failed on it: {err}"], {"page": name}
                    f["widths"] = {}
                problems += p
                findings.append(f)
    finally:
        server.shutdown()
        server.server_close()
    if shots is not None:
        report = {"excluded_rules": EXCLUDED, "pages": findings}
        (shots / "report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return problems, findings


def summary(findings: list[dict]) -> list[str]:
    """Per axe rule and impact: on how many pages and elements it fired, per width."""
    count: dict[tuple, list[set]] = {}
    for f in findings:
        for width, seen in f["widths"].items():
            for v in seen.get("axe", []):
                key = (v["rule"], v["impact"], width)
                pages, nodes = count.setdefault(key, [set(), set()])
                pages.add(f["page"])
                nodes.update((f["page"], n["target"]) for n in v["nodes"])
    return [
        f"  {rule} ({impact}) at {width} px: {len(nodes)} element(s) on {len(pages)} page(s)"
        for (rule, impact, width), (pages, nodes) in sorted(count.items())
    ]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("build", type=Path, help="the built site, e.g. _build/html")
    p.add_argument("--shots", type=Path, help="folder for the screenshots and report.json")
    p.add_argument("--axe", type=Path, default=DEFAULT_AXE, help="axe-core's axe.min.js")
    p.add_argument("--chromium", default="chromium", help="the Chromium binary")
    p.add_argument("--only", help="check only the pages whose path contains this text")
    p.add_argument(
        "--mathjax",
        type=Path,
        default=DEFAULT_MATHJAX if DEFAULT_MATHJAX.is_dir() else None,
        help="the npm package mathjax@3, served in place of the CDN's (default: "
        ".ci/node_modules/mathjax where it is installed; without it formulas stay raw)",
    )
    args = p.parse_args(argv)
    try:
        problems, findings = run(
            args.build.resolve(), args.axe, args.chromium, args.shots, args.only, args.mathjax
        )
    except (FileNotFoundError, BrowserError) as err:
        print(f"browser check: {err}", file=sys.stderr)
        return 2
    for line in problems:
        print(line)
    lines = summary(findings)
    if lines:
        print("axe-core findings of every impact (serious and critical ones fail):")
        print("\n".join(lines))
    for rule, why in EXCLUDED.items():
        print(f"  rule {rule} not run: {why}")
    n_shots = sum("screenshot" in s for f in findings for s in f["widths"].values())
    for width, *_ in WIDTHS:
        seen = [f["widths"].get(str(width), {}).get("layout", {}) for f in findings]
        wide = sum(len(s.get("wide_figures", [])) for s in seen)
        print(
            f"  at {width} px: {sum(s.get('figures', 0) for s in seen)} figures, {wide} wider "
            "than their column"
        )
    print(
        f"browser check: {len(findings)} pages at {' and '.join(str(w[0]) for w in WIDTHS)} px, "
        f"{n_shots} screenshots, {len(problems)} problem(s)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
