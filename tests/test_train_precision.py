"""bf16 autocast training, float16 storage, the whole-split validation metric and the
hash that covers a checkpoint's config."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch
from safetensors import safe_open

import msapod.models.train as train_mod
from msapod.models.data import Corpus, load_corpus
from msapod.models.gpt import GPT, GPTConfig
from msapod.models.train import (
    TrainConfig,
    load_checkpoint,
    read_config,
    save_checkpoint,
    train,
    validation_loss,
    write_config,
)

torch.set_num_threads(1)

TINY = TrainConfig(
    name="tiny",
    seed=5,
    steps=20,
    batch_size=8,
    lr=3e-3,
    min_lr=3e-4,
    warmup=5,
    eval_interval=10,
    eval_batches=4,
    model=GPTConfig(n_layer=2, n_head=2, n_embd=32, block_size=32),
)


@pytest.fixture(scope="module")
def small_corpus():
    """The real corpus with a 2,000-character validation split (fast whole-split scores)."""
    c = load_corpus()
    return Corpus(chars=c.chars, train=c.train, val=c.val[:2000], sha256=c.sha256)


def _reference_loss(model: GPT, ids: np.ndarray, stride: int) -> float:
    """Hand-written loop: one forward pass per target, on exactly the context the metric
    promises (the first window, then windows advancing by ``stride``)."""
    block, n = model.config.block_size, len(ids) - 1
    total = 0.0
    with torch.no_grad():
        for j in range(1, n + 1):  # target ids[j]
            if j <= block:
                start = 0
            else:
                end = min(block + stride * math.ceil((j - block) / stride), n)
                start = end - block
                assert j - start >= block - stride  # the promised context
            x = torch.as_tensor(ids[start:j], dtype=torch.long)[None]
            logp = torch.log_softmax(model(x)[0][0, -1].double(), -1)
            total -= float(logp[int(ids[j])])
    return total / n


@pytest.mark.parametrize("attention", ["standard", "ega"])
@pytest.mark.parametrize(("length", "stride"), [(200, 16), (77, 16), (33, 32), (150, 7)])
def test_validation_loss_equals_a_hand_written_loop(attention, length, stride):
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=2, n_head=2, n_embd=16, block_size=32, attention=attention))
    model.eval()
    ids = np.random.default_rng(1).integers(0, 65, size=length)
    got = validation_loss(model, ids, stride=stride, batch_size=3)
    assert got == pytest.approx(_reference_loss(model, ids, stride), rel=1e-5)


def test_validation_loss_short_sequence_and_bad_arguments():
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=1, n_head=1, n_embd=8, block_size=32)).eval()
    ids = np.arange(10) % 65
    assert validation_loss(model, ids) == pytest.approx(_reference_loss(model, ids, 16))
    for bad, match in [
        (dict(ids=ids[:1]), "ids"),
        (dict(ids=ids.reshape(2, 5)), "ids"),
        (dict(ids=ids, stride=0), "stride"),
        (dict(ids=ids, stride=33), "stride"),
        (dict(ids=ids, stride=2.5), "stride"),
    ]:
        with pytest.raises(ValueError, match=match):
            validation_loss(model, **bad)


def test_bf16_autocast_agrees_with_fp32(tmp_path, small_corpus):
    """Tolerance: the bf16 run's logged losses stay within 0.05 nats of the fp32 run's
    (bf16 keeps 8 bits of mantissa in the matmuls; the master weights stay float32)."""
    logs = {
        p: train(dataclasses.replace(TINY, precision=p), tmp_path / p, small_corpus, progress=False)
        for p in ("fp32", "bf16")
    }
    for key in ("train_loss", "val_loss"):
        a, b = np.array(logs["fp32"][key]), np.array(logs["bf16"][key])
        assert np.all(np.abs(a - b) < 0.05), (key, a, b)
    assert logs["bf16"]["val_loss"][-1] < math.log(65) - 0.5  # it learned
    assert len(logs["bf16"]["s_per_step"]) == 2 and min(logs["bf16"]["s_per_step"]) > 0
    assert logs["bf16"]["machine"]["torch_threads"] >= 1


def test_float16_storage_is_the_model_and_resumes_exactly(tmp_path, monkeypatch, small_corpus):
    cfg = dataclasses.replace(TINY, storage="float16")
    ref = tmp_path / "ref"
    train(cfg, ref, small_corpus, progress=False)
    with safe_open(str(ref / "model.safetensors"), "pt") as f:
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.float16}
    model = load_checkpoint(ref)
    assert next(model.parameters()).dtype == torch.float32
    meta = read_config(ref)
    # the recorded metric is the one of the stored (rounded) model
    assert meta["val_loss_split"] == pytest.approx(validation_loss(model, small_corpus.val))

    # interrupted after step 10 and resumed: the float32 master weights carry on exactly
    real_write = train_mod.write_json

    def interrupting_write(path, obj):
        real_write(path, obj)
        if path.name == "log.json" and obj["steps"][-1] == 10:
            raise KeyboardInterrupt

    run = tmp_path / "resumed"
    monkeypatch.setattr(train_mod, "write_json", interrupting_write)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, run, small_corpus, progress=False)
    monkeypatch.setattr(train_mod, "write_json", real_write)
    train(cfg, run, small_corpus, progress=False)
    assert (run / "model.safetensors").read_bytes() == (ref / "model.safetensors").read_bytes()


def _saved(tmp_path):
    torch.manual_seed(0)
    save_checkpoint(tmp_path, GPT(TINY.model), TINY, {"step": 1})
    return tmp_path


def test_config_edit_is_caught_by_its_hash(tmp_path):
    run = _saved(tmp_path)
    meta = json.loads((run / "config.json").read_text())
    meta["train"]["model"]["n_head"] = 4  # 32 / 4 still divides: would load silently
    (run / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=r"config\.json.*config_sha256"):
        load_checkpoint(run)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"weights_sha256": "x"}', "no 'train'"),
    ],
)
def test_unreadable_config_names_the_file(tmp_path, content, match):
    run = _saved(tmp_path)
    (run / "config.json").write_text(content)
    with pytest.raises(ValueError, match=match) as err:
        load_checkpoint(run)
    assert "config.json" in str(err.value)


def test_config_without_hash_is_refused(tmp_path):
    run = _saved(tmp_path)
    meta = json.loads((run / "config.json").read_text())
    del meta["config_sha256"]
    (run / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="no config_sha256"):
        load_checkpoint(run)


def test_bad_types_in_a_config_name_the_field_and_file(tmp_path):
    run = _saved(tmp_path)
    meta = read_config(run)
    meta["train"]["model"]["n_embd"] = "32"
    write_config(run, meta)  # a consistent hash over a bad value
    with pytest.raises(ValueError, match=r"config\.json.*n_embd"):
        load_checkpoint(run)


def test_tensors_that_do_not_fit_the_config_raise(tmp_path):
    run = _saved(tmp_path)
    meta = read_config(run)
    meta["train"]["model"]["n_embd"] = 64  # weights are 32 wide
    write_config(run, meta)
    with pytest.raises(ValueError, match="do not fit the config"):
        load_checkpoint(run)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        (dict(steps="10"), "steps"),
        (dict(batch_size=0), "batch_size"),
        (dict(lr=-1.0), "lr"),
        (dict(precision="fp16"), "precision"),
        (dict(storage="int8"), "storage"),
        (dict(seed=True), "seed"),
    ],
)
def test_bad_train_config_raises(kw, match):
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(TINY, **kw)


@pytest.mark.parametrize(
    ("kw", "match"),
    [(dict(n_embd="32"), "n_embd"), (dict(dropout=1.0), "dropout"), (dict(n_head=2.0), "n_head")],
)
def test_bad_model_config_raises(kw, match):
    with pytest.raises(ValueError, match=match):
        GPTConfig(**kw)
