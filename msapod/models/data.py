"""TinyShakespeare: verified download, character vocabulary, split and snippet ensemble.

The text is fetched once through :mod:`pooch`, or read from a local copy (``MSAPOD_DATA``
or ``data_dir``), and checked against its sha256 either way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from .._io import fetch, sha256_file, verify_sha256

FILENAME = "tinyshakespeare.txt"
SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
SIZE = 1_115_394
URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
VAL_FRACTION = 0.10
#: The paper's ensemble, every study's default: N snippets of L characters each.
N_SNAPSHOTS = 150
SNIPPET_LENGTH = 256

__all__ = [
    "N_SNAPSHOTS",
    "SHA256",
    "SNIPPET_LENGTH",
    "Corpus",
    "data_path",
    "ensemble_offsets",
    "load_corpus",
    "load_text",
    "check_layers",
    "ensemble_ids",
    "sha256_file",
    "shuffle_words",
]


def data_path(data_dir: str | os.PathLike | None = None) -> Path:
    """Path of a verified copy of TinyShakespeare.

    Parameters
    ----------
    data_dir
        Folder holding ``tinyshakespeare.txt``. Defaults to ``$MSAPOD_DATA``; if neither is
        given the file is downloaded once (pooch cache) from its public source.

    Raises
    ------
    FileNotFoundError
        ``data_dir`` (or ``$MSAPOD_DATA``) holds no ``tinyshakespeare.txt``.
    ValueError
        The file's sha256 differs from the published one.
    """
    folder = data_dir if data_dir is not None else os.environ.get("MSAPOD_DATA")
    if folder:
        path = Path(folder).expanduser().resolve() / FILENAME
        if not path.is_file():
            src = "data_dir" if data_dir is not None else "$MSAPOD_DATA"
            raise FileNotFoundError(f"{src}={folder!s}: expected a folder holding {FILENAME}")
        return verify_sha256(
            path, SHA256, "TinyShakespeare", "the file is corrupt or a different text"
        )
    return fetch(URL, SHA256, FILENAME)


def load_text(data_dir: str | os.PathLike | None = None) -> str:
    """The whole verified text as a string (1,115,394 characters)."""
    return data_path(data_dir).read_text(encoding="utf-8")


@dataclass(frozen=True)
class Corpus:
    """Encoded TinyShakespeare with its vocabulary and fixed split.

    Attributes
    ----------
    chars
        The sorted vocabulary (65 characters); token id = index in this string.
    train, val
        ``uint8`` token ids; ``val`` is the last 10 % of the text.
    sha256
        Hash of the source file, recorded in everything derived from it.
    """

    chars: str
    train: np.ndarray
    val: np.ndarray
    sha256: str = SHA256

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> np.ndarray:
        lut = {c: i for i, c in enumerate(self.chars)}
        try:
            return np.fromiter((lut[c] for c in text), dtype=np.uint8, count=len(text))
        except KeyError as err:
            raise ValueError(f"text: character {err.args[0]!r} is not in the vocabulary") from None

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] for i in np.asarray(ids).ravel())


@lru_cache(maxsize=4)
def _load_corpus(path: str) -> Corpus:
    text = Path(path).read_text(encoding="utf-8")
    chars = "".join(sorted(set(text)))
    lut = np.zeros(max(map(ord, chars)) + 1, dtype=np.uint8)
    lut[[ord(c) for c in chars]] = np.arange(len(chars))
    ids = lut[np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)]
    n_train = int(len(ids) * (1 - VAL_FRACTION))
    return Corpus(chars=chars, train=ids[:n_train], val=ids[n_train:])


def load_corpus(data_dir: str | os.PathLike | None = None) -> Corpus:
    """Load, verify and encode TinyShakespeare (cached per path within the process)."""
    return _load_corpus(str(data_path(data_dir)))


def ensemble_offsets(
    n_tokens: int, n: int = N_SNAPSHOTS, length: int = SNIPPET_LENGTH, seed: int = 0
) -> np.ndarray:
    """Start offsets of ``n`` non-overlapping snippets of ``length`` tokens: ``n`` of the
    ``n_tokens // length`` aligned windows, drawn without replacement by
    ``numpy.random.default_rng(seed)``, sorted.

    Raises
    ------
    ValueError
        ``n`` exceeds the number of available windows, or is below 1.
    """
    if length < 2:
        raise ValueError(f"length: expected >= 2 tokens, got {length}")
    slots = n_tokens // length
    if not 1 <= n <= slots:
        raise ValueError(
            f"n: expected 1..{slots} non-overlapping snippets of length {length} in "
            f"{n_tokens} tokens, got {n}"
        )
    return np.sort(np.random.default_rng(seed).choice(slots, size=n, replace=False)) * length


def ensemble_ids(
    corpus: Corpus | None = None,
    n: int = N_SNAPSHOTS,
    length: int = SNIPPET_LENGTH,
    seed: int = 0,
    split: str = "val",
) -> tuple[np.ndarray, np.ndarray]:
    """Token ids of the snippet ensemble.

    Parameters
    ----------
    corpus
        Encoded TinyShakespeare; defaults to :func:`msapod.models.data.load_corpus`.
    n, length, seed
        Number of snippets, characters per snippet and seed (:func:`ensemble_offsets`).
    split
        ``"val"`` (default, the held-out last 10 %) or ``"train"``.

    Returns
    -------
    ids : numpy.ndarray
        ``(n, length)`` ``int64`` token ids, one snippet per row.
    offsets : numpy.ndarray
        ``(n,)`` start offsets of the snippets within the split.
    """
    if split not in ("val", "train"):
        raise ValueError(f"split: expected 'val' or 'train', got {split!r}")
    corpus = corpus if corpus is not None else load_corpus()
    tokens = corpus.val if split == "val" else corpus.train
    offsets = ensemble_offsets(len(tokens), n=n, length=length, seed=seed)
    return np.stack([tokens[o : o + length] for o in offsets]).astype(np.int64), offsets


def check_layers(layers, n_layer: int) -> list[int]:
    """1-based, unique, sorted layer numbers."""
    if layers is None:
        return list(range(1, n_layer + 1))
    if isinstance(layers, int | np.integer):
        layers = [layers]
    out = []
    for layer in layers:
        if isinstance(layer, bool) or not isinstance(layer, int | np.integer):
            raise ValueError(f"layers: expected 1-based layer numbers (int), got {layer!r}")
        if not 1 <= int(layer) <= n_layer:
            raise ValueError(f"layers: expected numbers in 1..{n_layer}, got {int(layer)}")
        out.append(int(layer))
    if not out:
        raise ValueError("layers: expected at least one layer number, got none")
    if len(set(out)) != len(out):
        raise ValueError(f"layers: expected unique layer numbers, got {out}")
    return sorted(out)


def shuffle_words(ids: np.ndarray, corpus: Corpus, seed: int = 0) -> np.ndarray:
    """Permute the words of each snippet (row) of ``ids (N, L)``; the runs of spaces and
    line breaks between them stay in their order.

    A word is a maximal run of characters that are neither spaces nor line breaks. The
    words of snippet ``i`` are permuted by ``numpy.random.default_rng([seed, i])``, so each
    snippet keeps its characters, its words and its sequence of gaps, while the order of
    the words is destroyed.
    """
    ids = np.asarray(ids)
    if ids.ndim != 2:
        raise ValueError(f"ids: expected (snippet, position) token ids, got shape {ids.shape}")
    blank = np.isin(ids, corpus.encode(" \n"))
    out = np.empty_like(ids)
    for i, (row, gaps) in enumerate(zip(ids, blank, strict=True)):
        edges = np.flatnonzero(np.diff(np.r_[0, (~gaps).astype(np.int8), 0]))
        words = [row[a:b] for a, b in zip(edges[::2], edges[1::2], strict=True)]
        order = np.random.default_rng([int(seed), i]).permutation(len(words))
        tokens, w = [], 0
        for pos in range(row.size):  # the gaps in place, the words in the new order
            if gaps[pos]:
                tokens.append(row[pos : pos + 1])
            elif pos == 0 or gaps[pos - 1]:
                tokens.append(words[order[w]])
                w += 1
        out[i] = np.concatenate(tokens)
    return out
