"""Zoo weights outside a checkout: ``$MSAPOD_ZOO`` or a verified download (no network here)."""

from __future__ import annotations

import json
import shutil

import pytest

torch = pytest.importorskip("torch")

from msapod.models import zoo  # noqa: E402
from msapod.models.train import CONFIG, WEIGHTS  # noqa: E402
from msapod.models.zoo import fetch  # noqa: E402

NAME = "baseline-1"


@pytest.fixture
def no_pooch(monkeypatch):
    """pooch fails if anything asks it to download."""
    import pooch

    def refuse(*args, **kwargs):
        raise AssertionError(f"pooch.retrieve called: {args} {kwargs}")

    monkeypatch.setattr(pooch, "retrieve", refuse)


@pytest.fixture
def installed(tmp_path, monkeypatch, no_pooch):
    """The zoo as a wheel installs it: a copy of one model folder without its weights,
    outside a checkout."""
    root = tmp_path / "zoo"
    (root / NAME).mkdir(parents=True)
    shutil.copyfile(zoo.ROOT / NAME / CONFIG, root / NAME / CONFIG)
    monkeypatch.setattr(zoo, "ROOT", root)
    monkeypatch.setattr(zoo, "_in_checkout", lambda: False)
    monkeypatch.delenv(fetch.ENV, raising=False)
    return root


def _local_zoo(tmp_path, blob: bytes):
    folder = tmp_path / "local" / NAME
    folder.mkdir(parents=True)
    (folder / WEIGHTS).write_bytes(blob)
    return folder.parent


def test_a_checkout_loads_its_own_weights_and_fetches_nothing(no_pooch, monkeypatch):
    monkeypatch.delenv(fetch.ENV, raising=False)
    assert zoo._in_checkout()
    assert zoo.path(NAME) == zoo.ROOT / NAME
    model = zoo.load(NAME)
    assert model.name == NAME
    assert (
        model.weights_sha256 == json.loads((zoo.path(NAME) / CONFIG).read_text())["weights_sha256"]
    )
    assert NAME in zoo.trained("d128")


def test_a_checkout_without_weights_is_not_trained(no_pooch, monkeypatch, tmp_path):
    root = tmp_path / "zoo"
    (root / NAME).mkdir(parents=True)
    shutil.copyfile(zoo.ROOT / NAME / CONFIG, root / NAME / CONFIG)
    monkeypatch.setattr(zoo, "ROOT", root)
    monkeypatch.delenv(fetch.ENV, raising=False)
    assert NAME not in zoo.trained("d128")
    with pytest.raises(FileNotFoundError, match="not trained yet"):
        zoo.load(NAME)


def test_msapod_zoo_supplies_the_weights(installed, tmp_path, monkeypatch):
    blob = (zoo._REPO / "msapod/models/zoo" / NAME / WEIGHTS).read_bytes()
    monkeypatch.setenv(fetch.ENV, str(_local_zoo(tmp_path, blob)))
    assert NAME in zoo.trained("d128")  # the config is there; the weights come on load
    model = zoo.load(NAME)
    assert model.name == NAME
    with torch.no_grad():
        logits = model(torch.zeros(1, 8, dtype=torch.long))
    assert torch.isfinite(logits[0] if isinstance(logits, tuple) else logits).all()
    # the package's folder is untouched: the checkpoint folder is in the cache
    assert not (installed / NAME / WEIGHTS).exists()


def test_a_corrupt_local_copy_is_refused(installed, tmp_path, monkeypatch):
    blob = bytearray((zoo._REPO / "msapod/models/zoo" / NAME / WEIGHTS).read_bytes())
    blob[-1] ^= 0xFF
    local = _local_zoo(tmp_path, bytes(blob))
    monkeypatch.setenv(fetch.ENV, str(local))
    sha = json.loads((installed / NAME / CONFIG).read_text())["weights_sha256"]
    with pytest.raises(ValueError, match=rf"{NAME}/{WEIGHTS} has sha256 \w+, expected {sha}"):
        zoo.load(NAME)


def test_msapod_zoo_without_the_model_names_the_missing_file(installed, tmp_path, monkeypatch):
    monkeypatch.setenv(fetch.ENV, str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match=rf"{NAME}/{WEIGHTS}"):
        zoo.load(NAME)


def test_a_download_is_verified_by_the_config_hash(installed, monkeypatch):
    import pooch

    sha = json.loads((installed / NAME / CONFIG).read_text())["weights_sha256"]
    calls = []

    def retrieve(address, known_hash, path, fname, progressbar):
        calls.append((address, known_hash, fname))
        raise ValueError("SHA256 hash of downloaded file does not match the known hash")

    monkeypatch.setattr(pooch, "retrieve", retrieve)
    monkeypatch.setattr(fetch, "repository_url", lambda p: f"https://example.org/r/{p}")
    with pytest.raises(ValueError, match=rf"{NAME}/{WEIGHTS} has a sha256 other than the expected"):
        zoo.load(NAME)
    assert calls == [
        (f"https://example.org/r/msapod/models/zoo/{NAME}/{WEIGHTS}", f"sha256:{sha}", WEIGHTS)
    ]


def test_the_url_names_the_commit_the_model_and_the_file(monkeypatch):
    class Dist:
        def read_text(self, name):
            assert name == "direct_url.json"
            return json.dumps(
                {
                    "url": "https://github.com/owner/repo.git",
                    "vcs_info": {"vcs": "git", "commit_id": "0123abc"},
                }
            )

    monkeypatch.setattr("importlib.metadata.distribution", lambda name: Dist())
    base = "https://raw.githubusercontent.com/owner/repo/0123abc/msapod/models/zoo/"
    assert fetch.url(NAME) == f"{base}{NAME}/{WEIGHTS}"
    assert fetch.url("ega-d256-1", "log.json") == f"{base}ega-d256-1/log.json"
    assert fetch.url(NAME, source="https://example.org/zoo/") == (
        f"https://example.org/zoo/{NAME}/{WEIGHTS}"
    )
    with pytest.raises(ValueError, match="ending in '/'"):
        fetch.url(NAME, source="https://example.org/zoo")


def test_no_source_outside_a_checkout_says_how_to_supply_the_weights(installed, monkeypatch):
    monkeypatch.setattr(fetch, "repository_url", lambda p: None)
    hint = r"not installed from a GitHub repository.*MSAPOD_ZOO"
    with pytest.raises(FileNotFoundError, match=hint):
        zoo.load(NAME)
