"""Training: loss falls, checkpoints round-trip and verify, interrupted runs resume."""

from __future__ import annotations

import json
import math

import pytest
import torch

import msapod.models.train as train_mod
from msapod.cli import main
from msapod.models.data import SHA256, load_corpus
from msapod.models.gpt import GPT, GPTConfig
from msapod.models.train import TrainConfig, load_checkpoint, save_checkpoint, train

torch.set_num_threads(1)

TINY = TrainConfig(
    name="tiny",
    seed=3,
    steps=40,
    batch_size=8,
    lr=3e-3,
    min_lr=3e-4,
    warmup=5,
    eval_interval=10,
    eval_batches=4,
    model=GPTConfig(n_layer=2, n_head=2, n_embd=32, block_size=32),
)


@pytest.fixture(scope="module")
def corpus():
    return load_corpus()


@pytest.fixture(scope="module")
def trained(tmp_path_factory, corpus):
    """One uninterrupted tiny run, shared by the tests below."""
    run = tmp_path_factory.mktemp("run") / "tiny"
    log = train(TINY, run, corpus=corpus, progress=False)
    return run, log


def test_loss_falls(trained):
    run, log = trained
    assert log["steps"] == [10, 20, 30, 40]
    val = log["val_loss"]
    assert val[0] < math.log(65)  # better than uniform after 10 steps
    assert val[-1] < val[0] - 0.2, val
    meta = json.loads((run / "config.json").read_text())
    assert meta["step"] == 40 and meta["data_sha256"] == SHA256
    assert meta["val_loss"] == val[-1]
    assert json.loads((run / "log.json").read_text())["val_loss"] == val


def test_checkpoint_round_trip_bit_exact(tmp_path):
    torch.manual_seed(0)
    cfg = TrainConfig(
        name="rt", model=GPTConfig(n_layer=2, n_head=2, n_embd=16, block_size=16, attention="ega")
    )
    model = GPT(cfg.model)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p))  # not the init values
    digest = save_checkpoint(tmp_path / "rt", model, cfg)
    loaded = load_checkpoint(tmp_path / "rt", expect=cfg.model)
    assert loaded.weights_sha256 == digest and loaded.name == "rt"
    assert not loaded.training
    ref, got = model.state_dict(), loaded.state_dict()
    assert ref.keys() == got.keys()
    for k in ref:
        assert torch.equal(ref[k], got[k]), k
    assert loaded.lm_head.weight is loaded.wte.weight  # tying survives loading


def _save_tiny(folder):
    torch.manual_seed(0)
    cfg = TrainConfig(name="c", model=GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=16))
    save_checkpoint(folder, GPT(cfg.model), cfg)
    return cfg


def test_corrupted_weights_raise(tmp_path):
    _save_tiny(tmp_path)
    w = tmp_path / "model.safetensors"
    raw = bytearray(w.read_bytes())
    raw[-10:] = bytes(b ^ 0xFF for b in raw[-10:])
    w.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="sha256"):
        load_checkpoint(tmp_path)


def test_truncated_weights_raise(tmp_path):
    _save_tiny(tmp_path)
    w = tmp_path / "model.safetensors"
    w.write_bytes(w.read_bytes()[:100])
    with pytest.raises(ValueError, match="sha256"):
        load_checkpoint(tmp_path)
    # even with a matching hash recorded, an unreadable file gives a clear error
    meta = json.loads((tmp_path / "config.json").read_text())
    meta["weights_sha256"] = train_mod.sha256_file(w)
    train_mod.write_config(tmp_path, meta)  # a consistent config over unreadable weights
    with pytest.raises(ValueError, match="unreadable"):
        load_checkpoint(tmp_path)


def test_missing_files_raise(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_checkpoint(tmp_path)
    _save_tiny(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        load_checkpoint(tmp_path)


def test_config_mismatch_raises(tmp_path):
    cfg = _save_tiny(tmp_path)
    assert load_checkpoint(tmp_path, expect=cfg.model).config == cfg.model
    other = GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=16, attention="ega")
    with pytest.raises(ValueError, match="does not match expected"):
        load_checkpoint(tmp_path, expect=other)


def test_resume_is_bit_identical(tmp_path, monkeypatch, trained, corpus):
    """A run interrupted after its step-20 checkpoint and resumed ends with the same
    weights, bit for bit, as the uninterrupted run."""
    real_write = train_mod.write_json

    def interrupting_write(path, obj):
        real_write(path, obj)
        if path.name == "log.json" and obj["steps"][-1] == 20:
            raise KeyboardInterrupt

    run = tmp_path / "tiny"
    monkeypatch.setattr(train_mod, "write_json", interrupting_write)
    with pytest.raises(KeyboardInterrupt):
        train(TINY, run, corpus=corpus, progress=False)
    monkeypatch.setattr(train_mod, "write_json", real_write)
    assert json.loads((run / "config.json").read_text())["step"] == 20
    log = train(TINY, run, corpus=corpus, progress=False)

    ref_run, ref_log = trained
    assert log["steps"] == ref_log["steps"]
    assert log["val_loss"] == ref_log["val_loss"]
    # stopped after the step-20 log but before that step's state: resumed from step 10
    assert log["resumed"] == [10] and ref_log["resumed"] == []
    ref, got = load_checkpoint(ref_run).state_dict(), load_checkpoint(run).state_dict()
    for k in ref:
        assert torch.equal(ref[k], got[k]), k
    # a completed run resumes to a no-op; a different config in the folder is refused
    assert train(TINY, run, corpus=corpus, progress=False)["steps"] == ref_log["steps"]
    with pytest.raises(ValueError, match="different config"):
        train(TrainConfig(**{**TINY.__dict__, "lr": 1e-3}), run, corpus=corpus, progress=False)


#: Dropout on the residual stream and on the attention weights: a resume must restore the
#: torch RNG state, not only the weights and the data position.
DROP = TrainConfig(
    **{
        **TINY.__dict__,
        "name": "drop",
        "steps": 30,
        "eval_interval": 15,
        "model": GPTConfig(
            n_layer=2, n_head=2, n_embd=32, block_size=32, dropout=0.2, attention="ega"
        ),
    }
)


def test_resume_between_evaluations_with_dropout_is_bit_identical(tmp_path, monkeypatch, corpus):
    """Stopped at step 23 (state saved every 4 steps, so at 20), the run resumes from its
    cached state at step 20 and ends equal to the uninterrupted run: weights, optimizer
    path, the training loss of the interrupted interval and the validation losses."""
    ref_run = tmp_path / "ref"
    ref_log = train(DROP, ref_run, corpus=corpus, progress=False, save_every=4)
    state = train_mod.state_file(DROP, corpus.sha256)
    assert not state.exists()  # removed once the run is finished

    real_step = train_mod._step

    def stop_at_23(model, opt, cfg, corp, step, *args):
        if step == 23:
            raise KeyboardInterrupt
        return real_step(model, opt, cfg, corp, step, *args)

    run = tmp_path / "run"
    monkeypatch.setattr(train_mod, "_step", stop_at_23)
    with pytest.raises(KeyboardInterrupt):
        train(DROP, run, corpus=corpus, progress=False, save_every=4)
    monkeypatch.setattr(train_mod, "_step", real_step)
    assert state.is_file()
    assert "train-state" in state.parts and str(run) not in str(state)  # under the cache
    log = train(DROP, run, corpus=corpus, progress=False, save_every=4)
    assert log["resumed"] == [20]
    assert log["train_loss"] == ref_log["train_loss"]
    assert log["val_loss"] == ref_log["val_loss"]
    ref, got = load_checkpoint(ref_run).state_dict(), load_checkpoint(run).state_dict()
    for k in ref:
        assert torch.equal(ref[k], got[k]), k
    # without the saved state (another machine) the run restarts from step 0
    run2 = tmp_path / "run2"
    monkeypatch.setattr(train_mod, "_step", stop_at_23)
    with pytest.raises(KeyboardInterrupt):
        train(DROP, run2, corpus=corpus, progress=False, save_every=4)
    monkeypatch.setattr(train_mod, "_step", real_step)
    state.unlink()
    log2 = train(DROP, run2, corpus=corpus, progress=False, save_every=4)
    assert log2["resumed"] == [] and log2["val_loss"] == ref_log["val_loss"]


def test_train_checks_save_every_and_device(tmp_path, corpus):
    for bad in (0, 101, 2.5, True):
        with pytest.raises(ValueError, match="save_every"):
            train(TINY, tmp_path / "x", corpus=corpus, progress=False, save_every=bad)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device"):
            train(TINY, tmp_path / "x", corpus=corpus, progress=False, device="cuda")


def test_state_key_names_config_and_data():
    a = train_mod.state_key(TINY, "0" * 64)
    assert a == train_mod.state_key(TrainConfig(**TINY.__dict__), "0" * 64)
    assert a != train_mod.state_key(TINY, "1" * 64)
    assert a != train_mod.state_key(TrainConfig(**{**TINY.__dict__, "lr": 1e-3}), "0" * 64)


def test_attention_dropout_is_separate():
    cfg = GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=16, dropout=0.1)
    assert GPT(cfg).blocks[0].attn.dropout == 0.1  # None: the same as dropout
    sep = GPTConfig(**{**cfg.__dict__, "attention_dropout": 0.0})
    m = GPT(sep)
    assert m.blocks[0].attn.dropout == 0.0 and m.blocks[0].attn.resid_drop.p == 0.1
    with pytest.raises(ValueError, match="attention_dropout"):
        GPTConfig(attention_dropout=1.5)


def test_train_rejects_wrong_vocab(tmp_path, corpus):
    bad = TrainConfig(model=GPTConfig(vocab_size=64, n_layer=1, n_head=1, n_embd=8, block_size=8))
    with pytest.raises(ValueError, match="vocab_size"):
        train(bad, tmp_path, corpus=corpus, progress=False)


def test_cli_train_with_config(tmp_path, capsys):
    cfg = TrainConfig(**{**TINY.__dict__, "steps": 10, "name": "cli"})
    (tmp_path / "cfg.json").write_text(json.dumps(cfg.to_dict()))
    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--config",
                str(tmp_path / "cfg.json"),
                "--out",
                str(out),
                "--quiet",
                "--threads",
                "1",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    val = json.loads((out / "log.json").read_text())["val_loss"][-1]
    assert f"{val:.4f}" in printed and "cli" in printed
    assert load_checkpoint(out).config == cfg.model
    # --steps overrides: resuming the 10-step run with 20 steps is a different config
    assert (
        main(
            [
                "train",
                "--config",
                str(tmp_path / "cfg.json"),
                "--out",
                str(out),
                "--steps",
                "20",
                "--quiet",
            ]
        )
        == 2
    )
    assert "different config" in capsys.readouterr().err
    assert (
        main(
            [
                "train",
                "--config",
                str(tmp_path / "cfg.json"),
                "--out",
                str(out),
                "--steps",
                "20",
                "--quiet",
                "--no-resume",
            ]
        )
        == 0
    )
    assert json.loads((out / "config.json").read_text())["step"] == 20


def test_cli_train_bad_arguments(tmp_path, capsys):
    assert main(["train", "not-a-model", "--quiet"]) == 2
    assert "zoo model" in capsys.readouterr().err
    assert main(["train", "--quiet"]) == 2
    assert main(["train", "--config", str(tmp_path / "missing.json"), "--out", str(tmp_path)]) == 2
    assert "missing.json" in capsys.readouterr().err


def test_trained_lists_only_finished_checkpoints(tmp_path, monkeypatch):
    """A checkpoint saved at an evaluation during training is not a trained model."""
    import msapod.models.zoo as zoo

    monkeypatch.setattr(zoo, "ROOT", tmp_path)
    torch.manual_seed(0)
    for name, step in (("baseline-1", 250), ("baseline-2", 3000), ("ega-1", 3000)):
        cfg = zoo.ZOO_CONFIGS[name]
        save_checkpoint(zoo.path(name), GPT(cfg.model), cfg, {"step": step, "val_loss": 2.0})
    assert zoo.trained("d128") == ("baseline-2", "ega-1")
    assert zoo.trained("d128", architecture="baseline") == ("baseline-2",)
    (zoo.path("ega-1") / "config.json").write_text("{")
    with pytest.raises(ValueError, match="config.json: not valid JSON"):
        zoo.trained("d128")


def test_cli_zoo_table(tmp_path, monkeypatch, capsys):
    import msapod.models.zoo as zoo

    monkeypatch.setattr(zoo, "ROOT", tmp_path)
    cfg = zoo.ZOO_CONFIGS["baseline-1"]
    torch.manual_seed(0)
    save_checkpoint(
        zoo.path("baseline-1"), GPT(cfg.model), cfg, {"step": 250, "val_loss": 2.5, "n_params": 123}
    )
    cfg2 = zoo.ZOO_CONFIGS["ega-1"]
    save_checkpoint(zoo.path("ega-1"), GPT(cfg2.model), cfg2, {"step": 500, "val_loss": 2.25})
    w = zoo.path("ega-1") / "model.safetensors"
    w.write_bytes(w.read_bytes()[:-4] + b"\0\0\0\0")
    assert main(["zoo"]) == 0
    lines = {ln.split()[0]: ln for ln in capsys.readouterr().out.splitlines()}
    assert set(lines) == {"model", *zoo.MODELS}
    assert "250/3000" in lines["baseline-1"] and "(after training)" in lines["baseline-1"]
    assert lines["baseline-1"].rstrip().endswith("yes") and "123" in lines["baseline-1"]
    assert "500/3000" in lines["ega-1"] and "NO" in lines["ega-1"] and "sha256" in lines["ega-1"]
    assert "not trained" in lines["ega-2"] and "0/3000" in lines["ega-2"]
    assert "1,237,216" in lines["ega-2"]


def test_snapshots_keep_weights_and_change_nothing(tmp_path, trained, corpus):
    """Snapshots at steps 0, 15 and 40 are verified checkpoints of those steps, and the
    run that writes them ends with the weights of the run that does not."""
    run = tmp_path / "tiny"
    train(TINY, run, corpus=corpus, progress=False, snapshots=(0, 15, 40))
    ref_run, _ = trained
    final = json.loads((run / "config.json").read_text())["weights_sha256"]
    assert final == json.loads((ref_run / "config.json").read_text())["weights_sha256"]
    steps = {}
    for step in (0, 15, 40):
        folder = train_mod.snapshot_path(run, step)
        steps[step] = json.loads((folder / "config.json").read_text())
        assert steps[step]["step"] == step
        load_checkpoint(folder)  # verified against its sha256
    assert steps[40]["weights_sha256"] == final
    assert len({s["weights_sha256"] for s in steps.values()}) == 3
    torch.manual_seed(TINY.seed)
    init = GPT(TINY.model).state_dict()
    at0 = load_checkpoint(train_mod.snapshot_path(run, 0)).state_dict()
    assert all(torch.equal(init[k], at0[k]) for k in at0)


@pytest.mark.parametrize("bad", [(-1,), (41,), (2.5,)])
def test_snapshots_out_of_range_are_refused(tmp_path, corpus, bad):
    with pytest.raises((ValueError, TypeError), match="snapshots"):
        train(TINY, tmp_path / "x", corpus=corpus, progress=False, snapshots=bad)
