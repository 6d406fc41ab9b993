"""TinyShakespeare loading, verification, vocabulary and the snippet ensemble."""

from __future__ import annotations

import numpy as np
import pytest

from msapod.models import data
from msapod.models.data import (
    SHA256,
    SIZE,
    data_path,
    ensemble_ids,
    ensemble_offsets,
    load_corpus,
    load_text,
)


def test_real_file_loads_via_env():
    text = load_text()
    assert len(text) == SIZE == 1_115_394
    corpus = load_corpus()
    assert corpus.vocab_size == 65
    assert corpus.chars == "".join(sorted(set(text)))
    assert len(corpus.train) + len(corpus.val) == SIZE
    assert len(corpus.val) == SIZE - int(SIZE * 0.9)
    assert corpus.sha256 == SHA256
    # the split is the text in order: val is the tail
    assert corpus.decode(corpus.val[:50]) == text[int(SIZE * 0.9) :][:50]


def test_wrong_hash_raises(tmp_path, monkeypatch, data_dir):
    text = (data_dir / data.FILENAME).read_text(encoding="utf-8")
    (tmp_path / data.FILENAME).write_text(text.replace("ROMEO", "ROMEX", 1), encoding="utf-8")
    with pytest.raises(ValueError, match="sha256"):
        data_path(tmp_path)
    monkeypatch.setenv("MSAPOD_DATA", str(tmp_path))
    with pytest.raises(ValueError, match=SHA256):
        load_corpus()


def test_missing_file_raises(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="data_dir"):
        data_path(tmp_path)
    monkeypatch.setenv("MSAPOD_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="MSAPOD_DATA"):
        data_path()


def test_data_dir_overrides_env(tmp_path, monkeypatch, data_dir):
    monkeypatch.setenv("MSAPOD_DATA", str(tmp_path))  # empty: would raise
    assert data_path(data_dir) == (data_dir / data.FILENAME).resolve()
    assert len(load_text(data_dir)) == SIZE


def test_encode_decode_round_trip():
    corpus = load_corpus()
    text = "First Citizen:\nBefore we proceed any further, hear me speak.\n"
    ids = corpus.encode(text)
    assert ids.dtype == np.uint8 and len(ids) == len(text)
    assert ids.max() < corpus.vocab_size
    assert corpus.decode(ids) == text
    assert corpus.decode(corpus.val[:1000]) == load_text()[int(SIZE * 0.9) :][:1000]
    with pytest.raises(ValueError, match="vocabulary"):
        corpus.encode("naïve")


@pytest.mark.parametrize("seed", [0, 7])
def test_ensemble_offsets(seed):
    n_tokens, length = len(load_corpus().val), 256
    a = ensemble_offsets(n_tokens, n=150, length=length, seed=seed)
    b = ensemble_offsets(n_tokens, n=150, length=length, seed=seed)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (150,)
    assert np.all(np.diff(a) >= length)  # sorted and non-overlapping
    assert a.min() >= 0 and a.max() + length <= n_tokens
    assert not np.array_equal(a, ensemble_offsets(n_tokens, 150, length, seed=seed + 1))


def test_ensemble_offsets_bad_input():
    n_tokens = 10_000
    slots = n_tokens // 256
    assert len(ensemble_offsets(n_tokens, n=slots, length=256)) == slots
    with pytest.raises(ValueError, match="n:"):
        ensemble_offsets(n_tokens, n=slots + 1, length=256)
    with pytest.raises(ValueError, match="n:"):
        ensemble_offsets(n_tokens, n=0, length=256)
    with pytest.raises(ValueError, match="length"):
        ensemble_offsets(n_tokens, n=3, length=1)


def test_shuffle_words_keeps_characters_words_and_gaps():
    from msapod.models.data import shuffle_words

    corpus = load_corpus()
    ids, _ = ensemble_ids(corpus, n=4)
    out = shuffle_words(ids, corpus, seed=1)
    assert out.shape == ids.shape and out.dtype == ids.dtype
    blank = set(corpus.encode(" \n").tolist())
    for a, b in zip(ids, out, strict=True):
        assert sorted(a.tolist()) == sorted(b.tolist())  # the same characters
        ta, tb = corpus.decode(a), corpus.decode(b)
        assert sorted(ta.split()) == sorted(tb.split())  # the same words
        gaps = [c for c in ta if corpus.encode(c)[0] in blank]
        assert gaps == [c for c in tb if corpus.encode(c)[0] in blank]  # gaps in order
        assert ta.split() != tb.split()  # the order is gone
    assert np.array_equal(out, shuffle_words(ids, corpus, seed=1))  # seeded
    assert not np.array_equal(out, shuffle_words(ids, corpus, seed=2))
    with pytest.raises(ValueError, match="ids"):
        shuffle_words(ids[0], corpus)
