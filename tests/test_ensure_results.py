"""The shipped results outside a checkout: fetched, verified by sha256, or left alone."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import threading
from pathlib import Path

import pytest

from msapod.studies.store import results
from msapod.studies.store.results import ResultsError, ensure_results


@pytest.fixture
def no_env(monkeypatch):
    """``$MSAPOD_RESULTS`` unset for the test and restored (unset) after it."""
    monkeypatch.setenv("MSAPOD_RESULTS", "placeholder")  # recorded, so undo unsets it
    monkeypatch.delenv("MSAPOD_RESULTS")


@pytest.fixture
def outside_checkout(no_env, monkeypatch, tmp_path):
    """The package as pip installs it: no ``results/`` beside it."""
    beside = tmp_path / "site-packages-results"
    real = results.results_dir

    def results_dir(folder=None):
        return real(folder) if folder or os.environ.get("MSAPOD_RESULTS") else beside

    monkeypatch.setattr(results, "results_dir", results_dir)


@pytest.fixture
def server(tmp_path):
    """A results folder served over HTTP on localhost: (folder, URL of the folder)."""
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{httpd.server_port}/"
    httpd.shutdown()
    httpd.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _publish(root: Path, files: dict[str, bytes], wrong: str | None = None) -> None:
    """Write ``files`` and their manifest into ``root``; ``wrong``: a file listed with a
    sha256 that is not its own."""
    hashes = {}
    for name, data in files.items():
        (root / name).write_bytes(data)
        hashes[name] = hashlib.sha256(data + (b"!" if name == wrong else b"")).hexdigest()
    (root / "manifest.json").write_text(json.dumps({"files": hashes, "timings_s": {}}))


def test_inside_a_checkout_does_nothing(no_env, monkeypatch):
    def no_download(*args, **kwargs):
        raise AssertionError("ensure_results downloaded in a checkout")

    monkeypatch.setattr("pooch.retrieve", no_download)
    repo_results = Path(results.__file__).resolve().parents[3] / "results"
    assert (repo_results / "manifest.json").exists()  # the tests run in a checkout
    assert ensure_results() == repo_results
    assert "MSAPOD_RESULTS" not in os.environ


def test_a_set_results_folder_is_used_as_is(monkeypatch, tmp_path):
    monkeypatch.setenv("MSAPOD_RESULTS", str(tmp_path))
    assert ensure_results("http://127.0.0.1:9/unreachable/") == tmp_path


def test_fetches_and_verifies_outside_a_checkout(outside_checkout, server):
    root, url = server
    files = {"uncertainty.nc": b"netcdf bytes", "scorecard.csv": b"claim,verdict\n"}
    _publish(root, files)
    folder = ensure_results(url)
    assert os.environ["MSAPOD_RESULTS"] == str(folder)
    assert results.results_dir() == folder
    for name, data in files.items():
        assert (folder / name).read_bytes() == data
    assert json.loads((folder / "manifest.json").read_text())["files"].keys() == files.keys()
    # a second call in the same kernel returns the folder
    assert ensure_results(url) == folder


def test_a_file_with_a_wrong_sha256_is_refused(outside_checkout, server):
    root, url = server
    _publish(root, {"llm.nc": b"weights", "pruning.nc": b"masks"}, wrong="pruning.nc")
    with pytest.raises(ResultsError, match=r"pruning\.nc.*sha256 differs from the manifest"):
        ensure_results(url)
    assert "MSAPOD_RESULTS" not in os.environ
    fetched = list((Path(os.environ["MSAPOD_CACHE"]) / "results").glob("*/*"))
    assert not [p for p in fetched if p.name in ("pruning.nc", "manifest.json")]


def test_a_manifest_naming_a_path_is_refused(outside_checkout, server):
    root, url = server
    (root / "manifest.json").write_text(json.dumps({"files": {"../evil.nc": "0" * 64}}))
    with pytest.raises(ResultsError, match=r"'\.\./evil\.nc' is not allowed"):
        ensure_results(url)


def test_source_must_be_a_folder(outside_checkout):
    with pytest.raises(ValueError, match="ending in '/'"):
        ensure_results("https://example.org/results")


def test_default_source_is_the_installed_commit(outside_checkout, monkeypatch):
    class Dist:
        def __init__(self, direct_url):
            self.direct_url = direct_url

        def read_text(self, name):
            assert name == "direct_url.json"
            return json.dumps(self.direct_url) if self.direct_url else None

    vcs = {
        "url": "https://github.com/owner/repo.git",
        "vcs_info": {"vcs": "git", "commit_id": "0123abc", "requested_revision": "main"},
    }
    monkeypatch.setattr("importlib.metadata.distribution", lambda name: Dist(vcs))
    assert results._vcs_source() == "https://raw.githubusercontent.com/owner/repo/0123abc/results/"
    # an install from an index or a local folder has no commit to fetch from
    for direct_url in (None, {"url": "file:///src/msapod", "dir_info": {"editable": True}}):
        monkeypatch.setattr("importlib.metadata.distribution", lambda name, d=direct_url: Dist(d))
        with pytest.raises(ResultsError, match="not installed from a GitHub repository"):
            ensure_results()
