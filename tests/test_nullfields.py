"""The null ensembles (msapod.studies.measure.nullfields): untrained models at their
initialisation, shuffled snippets, their cached fields."""

import numpy as np
import pytest

from msapod.studies.measure import nullfields
from msapod.studies.measure.nullfields import shuffle_snippets
from msapod.studies.store.cache import state_sha256


def test_untrained_model_is_the_initialisation_of_training():
    import torch

    from msapod.models.gpt import GPT
    from msapod.models.zoo import ZOO_CONFIGS

    m = nullfields.untrained_model("baseline-1")
    torch.manual_seed(ZOO_CONFIGS["baseline-1"].seed)
    ref = GPT(ZOO_CONFIGS["baseline-1"].model)
    for k, v in ref.state_dict().items():
        torch.testing.assert_close(m.state_dict()[k], v, rtol=0, atol=0)
    assert m.weights_sha256 == nullfields.untrained_model("baseline-1").weights_sha256
    assert m.weights_sha256 != nullfields.untrained_model("baseline-2").weights_sha256
    assert m.name == "untrained:baseline-1" and not m.training
    with pytest.raises(ValueError, match="name"):
        nullfields.untrained_model("nope")


def test_shuffle_snippets_permutes_each_row_deterministically():
    ids = np.arange(40).reshape(4, 10)
    s = shuffle_snippets(ids, seed=1)
    assert not np.array_equal(s, ids)
    for a, b in zip(s, ids, strict=True):
        assert sorted(a) == sorted(b)
    np.testing.assert_array_equal(s, shuffle_snippets(ids, seed=1))
    np.testing.assert_array_equal(s[:2], shuffle_snippets(ids[:2], seed=1))
    with pytest.raises(ValueError, match="ids"):
        shuffle_snippets(np.arange(5))


@pytest.fixture
def tiny_model():
    import torch

    from msapod.models.data import load_corpus
    from msapod.models.gpt import GPT, GPTConfig

    torch.manual_seed(0)
    cfg = GPTConfig(
        vocab_size=load_corpus().vocab_size, n_layer=2, n_head=2, n_embd=16, block_size=32
    )
    m = GPT(cfg).eval()
    m.weights_sha256 = state_sha256(m)
    return m


def test_null_fields_are_cached_and_keyed_by_the_null(tmp_path, tiny_model):
    kw = {"n": 3, "length": 16, "cache_dir": tmp_path, "model": tiny_model}
    F = nullfields.null_fields("baseline-1", "untrained", **kw)
    assert F.dims == ("layer", "snapshot", "query", "key") and F.shape == (2, 3, 16, 16)
    assert F.attrs["null"] == "untrained"
    again = nullfields.null_fields("baseline-1", "untrained", **kw)
    assert again.encoding["source"] == F.encoding["source"]
    np.testing.assert_array_equal(again.values, F.values)
    S = nullfields.null_fields("baseline-1", "shuffled", **kw)
    assert S.encoding["source"] != F.encoding["source"]
    assert not np.allclose(S.values, F.values)
    np.testing.assert_allclose(S.sum("key").values, 1.0, atol=1e-5)  # row-stochastic
    W = nullfields.null_fields("baseline-1", "words", **kw)
    assert W.attrs["null"] == "words"
    assert len({W.encoding["source"], S.encoding["source"], F.encoding["source"]}) == 3
    assert not np.allclose(W.values, S.values) and not np.allclose(W.values, F.values)
    with pytest.raises(ValueError, match="null"):
        nullfields.null_fields("baseline-1", "random", **kw)
