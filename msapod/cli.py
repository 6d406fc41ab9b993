"""Command line: ``msapod train``, ``zoo``, ``extract``, ``reproduce`` and ``analyze``.

Examples
--------
::

    msapod train baseline-1 --threads 2        # train (or resume) a zoo model in place
    msapod train --config run.json --out runs/x  # any TrainConfig, as JSON
    msapod zoo                                  # table of the zoo, checkpoints verified
    msapod extract ega-1 --n 150 --length 256   # fill the attention-field cache
    msapod reproduce --results results          # every number of the book (resumable)
    msapod analyze baseline-1 --out report/     # dataset + HTML report of any model
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ._io import check_int, json_object, package_version
from .models.data import N_SNAPSHOTS, SNIPPET_LENGTH
from .pipeline import DEFAULT_N_MODES, SCALOGRAM_FIELDS
from .studies.own_model import DEFAULTS, UsageError, analyze_sources, save_dataset
from .studies.report import write_report
from .studies.store.cache import cached_fields
from .studies.store.results import results_dir
from .wavelets import DEFAULT_MIN_SCALE, DEFAULT_NUM_SCALES

__all__ = ["main"]


def _load_config(path: str):
    from .models.train import TrainConfig

    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"--config: {file} is not a file")
    try:
        d = json.loads(file.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"--config: {file} is not valid JSON ({err})") from None
    if isinstance(d, dict) and "train" in d and isinstance(d["train"], dict):
        d = d["train"]  # a run's config.json
    if not isinstance(d, dict):
        raise ValueError(f"--config: {file} must hold a JSON object (TrainConfig.to_dict)")
    try:
        return TrainConfig.from_dict(d)
    except (TypeError, ValueError) as err:
        raise ValueError(f"--config: {file}: {err}") from None


def _cmd_train(args) -> int:
    from .models.train import train
    from .models.zoo import ZOO_CONFIGS, path

    if (args.name is None) == (args.config is None):
        raise ValueError("train: expected exactly one of a zoo model NAME or --config FILE.json")
    if args.config is not None:
        cfg = _load_config(args.config)
        if args.out is None:
            raise ValueError("--out: required with --config (the run folder)")
        out = Path(args.out)
    else:
        if args.name not in ZOO_CONFIGS:
            raise ValueError(
                f"NAME: expected a zoo model {list(ZOO_CONFIGS)} (or use --config), "
                f"got {args.name!r}"
            )
        cfg = ZOO_CONFIGS[args.name]
        out = Path(args.out) if args.out is not None else path(args.name)
    if args.steps is not None:
        cfg = dataclasses.replace(cfg, steps=check_int(args.steps, "--steps", 1))
    _set_threads(args.threads)
    log = train(
        cfg,
        out,
        resume=not args.no_resume,
        progress=not args.quiet,
        threads=args.threads,
        device=args.device,
        snapshots=args.snapshots,
    )
    if log.get("resumed"):
        print(f"{cfg.name}: resumed from its saved state at step {log['resumed'][-1]}")
    if log["val_loss"]:
        print(
            f"{cfg.name}: final val loss {log['val_loss'][-1]:.4f} nats/char "
            f"after {log['steps'][-1]} steps -> {out}"
        )
    else:
        print(f"{cfg.name}: no evaluation logged -> {out}")
    return 0


def _zoo_rows() -> list[dict]:
    """One row per zoo model, keyed by the column titles of ``msapod zoo``."""
    from .models.train import CONFIG, load_checkpoint
    from .models.zoo import ZOO_CONFIGS, ZOOS, path

    zoo_of = {m: z for z, names in ZOOS.items() for m in names}
    rows = []
    for name, cfg in ZOO_CONFIGS.items():
        folder = path(name)
        meta = json_object(folder / CONFIG)
        val = meta.get("val_loss_split")
        loss = f"{float(val):.4f}" if val is not None else None
        verified = "not trained"
        if (folder / "model.safetensors").is_file() or (folder / CONFIG).is_file():
            try:
                load_checkpoint(folder, expect=cfg.model)
                verified = "yes"
            except (ValueError, OSError, KeyError) as err:
                verified = f"NO ({_short_reason(err)})"
        rows.append(
            {
                "model": name,
                "zoo": zoo_of[name],
                "attention": cfg.model.attention,
                "d_model": cfg.model.n_embd,
                "params": f"{int(meta.get('n_params') or _count_params(cfg.model)):,}",
                "steps": f"{meta.get('step', 0)}/{cfg.steps}",
                "val loss (whole split)": loss or ("(after training)" if "step" in meta else "-"),
                "training wall time": _train_time(folder / "log.json"),
                "verified": verified,
            }
        )
    return rows


def _train_time(log_path: Path) -> str:
    """Training wall time of a run's log, with its seconds per step and device."""
    try:
        log = json.loads(log_path.read_text())
        wall = float(log["time_s"][-1])
        steps = int(log["steps"][-1])
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return "-"
    device = (log.get("machine") or {}).get("device", "cpu")
    return f"{wall / 60:.0f} min ({wall / steps:.2f} s/step, {device})"


def _short_reason(err: Exception) -> str:
    msg = str(err)
    if isinstance(err, FileNotFoundError):
        return "missing file"
    if "sha256" in msg:
        return "sha256 mismatch"
    if "does not match expected" in msg:
        return "config differs from ZOO_CONFIGS"
    if "unreadable" in msg:
        return "unreadable weights"
    return f"{type(err).__name__}: {msg[:60]}"


def _count_params(model_cfg) -> int:
    """Parameter count of a config without allocating its weights (tied embeddings)."""
    import torch

    from .models.gpt import GPT

    with torch.device("meta"):
        return GPT(model_cfg).num_params()


def _cmd_zoo(args) -> int:
    rows = _zoo_rows()
    table = [list(rows[0])] + [list(r.values()) for r in rows]
    widths = [max(len(str(line[i])) for line in table) for i in range(len(table[0]))]
    for line in table:
        print("  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
    return 0


def _set_threads(threads: int | None, error: type[Exception] = ValueError) -> None:
    """torch's threads as ``--threads`` says (an integer >= 1); None leaves them."""
    if threads is not None:
        import torch

        torch.set_num_threads(check_int(threads, "--threads", 1, error))


def _cmd_extract(args) -> int:
    _set_threads(args.threads)
    da = cached_fields(
        args.name,
        n=args.n,
        length=args.length,
        seed=args.seed,
        layers=args.layers,
        cache_dir=args.cache_dir,
        progress=not args.quiet,
        batch_size=args.batch_size,
    )
    print(da.encoding["source"])
    return 0


def _cmd_reproduce(args) -> int:
    from .studies.reproduce import DECIDING_STEPS, check, reproduce, shipped_inputs

    args.results = results_dir(args.results)
    if args.cache_dir:
        os.environ["MSAPOD_CACHE"] = str(Path(args.cache_dir).expanduser().resolve())
    _set_threads(args.threads)
    if args.all and not args.check:
        raise ValueError("--all: only with --check")
    if args.decide and args.check:
        raise ValueError("--decide: not with --check (the check decides again by itself)")
    if args.check and (args.steps or args.models):
        raise ValueError("--check: chooses its steps and models; drop --steps/--models")
    if args.decide and (args.steps or args.models):
        raise ValueError("--decide: runs the deciding steps; drop --steps/--models")
    try:
        if args.check:
            report = check(
                args.results, llm=not args.no_llm, progress=not args.quiet, full=args.all
            )
            bad = {f: p for f, p in report.items() if p}
            if bad:
                print(
                    f"msapod: error: {len(bad)} of {len(report)} shipped results are not "
                    f"reproduced: {', '.join(bad)}",
                    file=sys.stderr,
                )
                return 1
            print(f"reproduce --check: all {len(report)} shipped results reproduced")
            return 0
        reproduce(
            args.results,
            steps=list(DECIDING_STEPS) if args.decide else args.steps,
            models=args.models,
            llm=not args.no_llm,
            progress=not args.quiet,
            inputs=shipped_inputs(args.results) if args.decide else None,
        )
    except RuntimeError as err:
        print(f"msapod: error: {err}", file=sys.stderr)
        return 2
    return 0


def _cmd_analyze(args) -> int:
    """``msapod analyze``: exit 2 for a bad input, 1 for a failure, 0 when written."""
    notes: list[str] = []

    def log(line: str) -> None:
        notes.append(line)
        print(f"msapod: note: {line}", file=sys.stderr)

    stage = "input"
    try:
        _set_threads(args.threads, UsageError)
        out = Path(args.out)
        if out.exists() and not out.is_dir():
            raise UsageError(f"--out: {out} is a file; expected a folder")
        ds = analyze_sources(
            **{k: getattr(args, k) for k in _ANALYZE_ARGS & set(vars(args))},
            average_heads=args.heads == "average",
            progress=not args.quiet,
            log=log,
            claims=not args.no_claims,
        )
        stage = "output"
        nc = save_dataset(ds, out / "analysis.nc")
        print(f"dataset: {nc}")
        if not args.no_report:
            html = write_report(ds, out / "report.html", notes=notes)
            print(f"report:  {html}")
    except UsageError:
        raise  # main reports it on one line: exit 2
    except KeyboardInterrupt:
        print("msapod: interrupted; run the same command again to resume", file=sys.stderr)
        return 1
    except Exception as err:  # noqa: BLE001 - a failure, reported on one line
        if args.debug:
            raise
        what = "writing the results" if stage == "output" else "the analysis"
        msg = " ".join(str(err).split())
        print(
            f"msapod: error: {what} failed ({type(err).__name__}: {msg}); rerun with --debug "
            "for the traceback",
            file=sys.stderr,
        )
        return 1
    return 0


#: The arguments of :func:`~msapod.studies.own_model.analyze_sources` that ``msapod
#: analyze``'s flags give by name: its parameters and the analysis options.
_ANALYZE_ARGS = set(inspect.signature(analyze_sources).parameters) | set(DEFAULTS)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="msapod", description="Multiscale POD of transformer attention fields"
    )
    p.add_argument("--version", action="version", version=f"msapod {package_version()}")
    p.add_argument(
        "--debug", action="store_true", help="let errors raise with their Python traceback"
    )
    sub = p.add_subparsers(dest="command", required=True)

    for add in (_add_train, _add_zoo, _add_extract, _add_reproduce, _add_analyze):
        add(sub)
    return p


def _add_train(sub) -> None:
    t = sub.add_parser("train", help="train or resume a zoo model or a configured run")
    t.add_argument("name", nargs="?", help="zoo model name (see `msapod zoo`)")
    t.add_argument("--config", help="TrainConfig as JSON (TrainConfig.to_dict format)")
    t.add_argument("--steps", type=int, help="override the number of steps")
    t.add_argument("--out", help="run folder (default: the zoo folder of NAME)")
    t.add_argument("--no-resume", action="store_true", help="start afresh")
    t.add_argument("--device", default="cpu", help="cpu (default) or a CUDA device, e.g. cuda")
    _add_common(t, cache_dir=False)
    t.add_argument(
        "--snapshots",
        type=_steps,
        default=(),
        help="comma-separated steps after which the weights are also kept, in "
        "OUT/snapshots/step-NNNNN (e.g. 0,30,100,300,1000,3000)",
    )
    t.set_defaults(func=_cmd_train)


def _steps(text: str) -> tuple[int, ...]:
    """``--snapshots``: comma-separated whole numbers of steps."""
    try:
        return tuple(int(s) for s in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated whole numbers of steps, got {text!r}"
        ) from None


def _add_zoo(sub) -> None:
    z = sub.add_parser("zoo", help="list the zoo models and verify their checkpoints")
    z.set_defaults(func=_cmd_zoo)


def _add_extract(sub) -> None:
    e = sub.add_parser("extract", help="fill the attention-field cache of a zoo model")
    e.add_argument("name", help="zoo model name")
    e.add_argument("--n", type=int, default=N_SNAPSHOTS, help="snapshots (default %(default)s)")
    e.add_argument(
        "--length", type=int, default=SNIPPET_LENGTH, help="characters (default %(default)s)"
    )
    e.add_argument("--seed", type=int, default=0, help="ensemble seed (default 0)")
    e.add_argument("--layers", type=int, nargs="+", help="1-based layers (default all)")
    e.add_argument("--batch-size", type=int, default=16, help="snapshots per pass")
    _add_common(e)
    e.set_defaults(func=_cmd_extract)


def _add_reproduce(sub) -> None:
    r = sub.add_parser(
        "reproduce",
        help="compute every number the book shows into a results folder (resumable)",
    )
    r.add_argument(
        "--results",
        help="results folder (default: the repository's results/, or $MSAPOD_RESULTS)",
    )
    r.add_argument(
        "--check",
        action="store_true",
        help="recompute into a temporary folder and compare with the results folder "
        "(numbers within tolerance, verdicts identical); exit 1 if they differ. Without "
        "--all: the per-model studies and the claims' evidence of one model per "
        "architecture of the main zoo (head pruning of the first only), the LLM, the whole "
        "specification curve and the scorecard",
    )
    r.add_argument(
        "--all",
        action="store_true",
        help="with --check: recompute every step for every model (run before committing "
        "new results)",
    )
    r.add_argument(
        "--steps",
        nargs="+",
        help="subset of: zoo fieldstats modestats uncertainty convergence pruning "
        "depth_pruning trajectory llm evidence multiverse scorecard (default all)",
    )
    r.add_argument(
        "--models",
        nargs="+",
        help="zoo models of the per-model steps (default: every trained model of the main "
        "zoo); the evidence, the specification curve and the scorecard always use every "
        "trained zoo",
    )
    r.add_argument(
        "--decide",
        action="store_true",
        help="decide again: recompute only the specification curve and the scorecard from "
        "the folder's shipped, verified evidence and studies (after a change to a rule or "
        "the claim registry; nothing is measured)",
    )
    r.add_argument("--no-llm", action="store_true", help="skip the SmolLM2-135M step")
    _add_common(r)
    r.set_defaults(func=_cmd_reproduce)


def _add_common(p, cache_dir: bool = True) -> None:
    """The flags of the commands that run models: cache folder, torch threads, quiet."""
    if cache_dir:
        p.add_argument(
            "--cache-dir", help="cache folder (default $MSAPOD_CACHE or ~/.cache/msapod)"
        )
    p.add_argument("--threads", type=int, help="torch threads")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def _add_analyze(sub) -> None:
    a = sub.add_parser(
        "analyze",
        help="analyse your own model(s): labelled dataset and HTML report",
        description="Multiscale POD of the attention of one or several models over an "
        "ensemble of text snippets: DIR/analysis.nc (per layer, with jackknife intervals) "
        "and DIR/report.html (self-contained). SOURCE: a zoo model name, a checkpoint "
        "folder, a Hugging Face model folder or id (any attention implementation, recorded "
        "in one forward pass per batch; the hf extra), or 'smollm2' (the SmolLM2-135M GGUF "
        "of the llm extra). Fields and per-layer analyses are cached by the source's hash: "
        "an interrupted run resumes.",
    )
    a.add_argument("sources", nargs="+", metavar="SOURCE", help="model(s) to analyse")
    a.add_argument("--out", required=True, metavar="DIR", help="output folder")
    a.add_argument("--labels", nargs="+", help="model names in the result, one per SOURCE")
    a.add_argument(
        "--text", metavar="FILE", help="UTF-8 text (default: the zoo's validation split)"
    )
    ens = {k: p.default for k, p in inspect.signature(analyze_sources).parameters.items()}
    for name, what in (
        ("n", "snapshots N"),
        ("length", "tokens per snapshot L"),
        ("seed", "ensemble seed"),
    ):
        default = ens[name]
        a.add_argument(f"--{name}", type=int, default=default, help=f"{what} (default {default})")
    a.add_argument("--layers", type=int, nargs="+", help="1-based layers (default all)")
    heads = "average" if ens["average_heads"] else "keep"
    a.add_argument(
        "--heads",
        choices=("average", "keep"),
        default=heads,
        help=f"analyse the head mean (average) or every head (keep) (default {heads})",
    )
    a.add_argument(
        "--tau-max",
        type=int,
        metavar="LAG",
        help="keep only the lags 0..LAG (query - key) of causal attention: memory grows as "
        "N L LAG instead of N L^2 (default: every lag)",
    )
    for name, (kind, what) in _OPTION_FLAGS.items():
        default = DEFAULTS[name]
        said = _NONE_MEANS[name] if default is None else _shown(default)
        a.add_argument(
            f"--{name.replace('_', '-')}", **kind, default=default, help=f"{what} (default {said})"
        )
    a.add_argument("--batch-size", type=int, help="snippets per forward pass (default: by memory)")
    _add_common(a)
    a.add_argument("--no-report", action="store_true", help="write the dataset only")
    a.add_argument(
        "--no-claims", action="store_true", help="skip the paper's claims (check_claims)"
    )
    a.set_defaults(func=_cmd_analyze)


def _centre(text: str) -> str | float:
    """``--centre``: a number of lags, else the rule's name as given (analyze checks it)."""
    try:
        return float(text)
    except ValueError:
        return text


#: The flags of the analysis options (:data:`~msapod.studies.own_model.DEFAULTS`, whose
#: defaults their help states): how argparse reads each, and what it is.
_OPTION_FLAGS = {
    "scale_min": ({"type": float}, "smallest scale"),
    "scale_max": ({"type": float}, "largest scale"),
    "n_scales": ({"type": int}, "log-spaced scales"),
    "omega0": ({"type": float}, "Morlet centre frequency"),
    "max_peaks": ({"type": int}, "dominant scales = windows"),
    "centre": ({"type": _centre}, "window centre: peak, centroid, scale or a lag"),
    "width": ({"type": float}, "window width sigma = WIDTH x a*"),
    "field": (
        {"choices": SCALOGRAM_FIELDS},
        "field whose scalogram places the windows: total (the attention A, as the paper and "
        "the book's default reading) or fluctuation (u = A - Abar; the POD decomposes u "
        "either way)",
    ),
    "eps": ({"type": float, "nargs": "+"}, "tolerances of H*"),
    "n_modes": ({"type": int}, "leading modes kept"),
}
#: What a default of None of an analysis option comes to.
_NONE_MEANS = {
    "scale_min": f"{DEFAULT_MIN_SCALE:g}",
    "scale_max": "half the lags",
    "n_scales": str(DEFAULT_NUM_SCALES),
    "n_modes": f"min({DEFAULT_N_MODES}, N)",
}


def _shown(value) -> str:
    """A default as the help shows it: numbers in their shortest form, lists spaced."""
    if isinstance(value, tuple | list):
        return " ".join(map(_shown, value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``msapod`` command line; returns the exit status.

    Bad arguments, data or files (ValueError, TypeError, OSError, RuntimeError) print one
    line ``msapod: error: ...`` naming what was wrong and return 2; ``--debug`` lets the
    exception raise with its traceback instead.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (ValueError, TypeError, OSError, RuntimeError) as err:
        if args.debug:
            raise
        msg = " ".join(str(err).split())  # one line
        print(f"msapod: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
