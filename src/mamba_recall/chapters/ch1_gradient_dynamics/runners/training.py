"""Chapter 1 runner: train the models of paper 000 on the latest-value MQAR, at every preset.

    python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.training --preset ci|paper [--only k1 wo]
    python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.training --preset cpu-hours --allow-long [--jobs 2]
    python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.training --preset cpu-hours --parts full_mamba --allow-long

Two ways of training, one command. With ``--preset cpu-hours``, or with ``--parts`` at any preset, it runs the
**run-store grid** (one job per model and seed, 3 seeds, resumable; parts ``models``, ``full_mamba``, ``wo``,
``full_onehot``; options ``--allow-long``, ``--jobs``, ``--aggregate-only``, ``--smoke``, ``--store``): see
:mod:`.cpu_hours`. Table 1's run-store parts are :mod:`.table1`'s. Otherwise it trains **one model of each name** (``--only``) in this process:
``--preset paper`` trains the paper-size models with
:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.train_recall` and writes ``results/checkpoints/ch1_<name>_<preset>.pt``
with a JSON sidecar (config, sha256, accuracy, device) plus the bundle ``results/ch1_checkpoints.json``. The
models, their data, the training recipe and the checkpoints' loaders (:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.
load_checkpoint`, :func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.load_or_train`, what the notebooks call) are in
:mod:`mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value`.
"""

from __future__ import annotations

import time
from pathlib import Path

from mamba_recall import results
from mamba_recall.paths import RESULTS_DIR
from mamba_recall.results import command_provenance
from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import Trained, checkpoint_path, train_recall
from mamba_recall.runners import runner_command
from mamba_recall.runstore import one_process_parser, two_way

MODELS = ("k1", "k1_masked", "k2", "k4", "wo")


def save_checkpoint(trained: Trained, name: str, preset: str, device: str, seed: int) -> Path:
    """``results/checkpoints/ch1_<name>_<preset>.pt`` (the state dict) and its sidecar (see ``results``)."""
    state = {k: v.detach().cpu() for k, v in trained.model.state_dict().items()}
    sidecar = {
        "name": name,
        "preset": preset,
        "seed": seed,
        "config": trained.sizes,
        "device": device,
        "test_query_accuracy": trained.test_accuracy,
        "train_query_accuracy": trained.train_accuracy,
        "steps_run": trained.result.steps_run if trained.result else None,
    }
    return results.save_checkpoint(
        checkpoint_path(name, preset),
        state,
        sidecar,
        device=device,
        command=f"{runner_command('ch1_training')} --preset {preset} --only {name}",
    )


@command_provenance()  # one git state for the command: the bundle's, from before the checkpoints were written
def main(argv=None):
    """The run-store grid (:mod:`.cpu_hours`) with ``--preset cpu-hours`` or ``--parts``; the models one by one
    otherwise."""
    from . import cpu_hours

    return two_way(argv, "paper", lambda a: cpu_hours.store_main(a, runner="ch1_training"), models_main)


def models_main(argv=None):
    from mamba_recall.presets import experiment
    from mamba_recall.results import save_bundle

    ap = one_process_parser(runner_command("ch1_training"), __doc__.splitlines()[0])
    ap.add_argument("--preset", default="paper", choices=("ci", "paper"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", nargs="*", default=list(MODELS), choices=MODELS)
    args = ap.parse_args(argv)
    rows = {}
    start = time.perf_counter()
    for name in args.only:
        sizes = experiment(f"ch1.{name}", args.preset)
        t0 = time.perf_counter()
        tr = train_recall(sizes, args.seed, args.device, progress=True)
        path = save_checkpoint(tr, name, args.preset, args.device, args.seed)
        rows[name] = {
            "test_query_accuracy": tr.test_accuracy,
            "train_query_accuracy": tr.train_accuracy,
            "steps_run": tr.result.steps_run,
            "seconds": time.perf_counter() - t0,
            "checkpoint": str(path.relative_to(RESULTS_DIR.parent)),
        }
        print(name, rows[name], flush=True)
    # A run of some models (--only) keeps the rows of the others that the committed bundle lists: the bundle always
    # names every committed checkpoint of the preset (load_or_train stops on a listed one that is missing).
    name = f"ch1_checkpoints_{args.preset}"
    try:
        kept = results.load_bundle(name).data["models"]
    except results.BundleMissing:
        kept = {}
    rows = {**{m: r for m, r in kept.items() if m not in rows}, **rows}
    names = [m for m in MODELS if m in rows]
    save_bundle(
        name,
        {"models": {m: rows[m] for m in names}},
        {
            "preset": args.preset,
            "seed": args.seed,
            "sizes": {n: experiment(f"ch1.{n}", args.preset) for n in names},
        },
        command=f"{runner_command('ch1_training')} --preset {args.preset} --device {args.device}"
        + (f" --seed {args.seed}" if args.seed else "")
        + ("" if names == list(MODELS) else " --only " + " ".join(names)),
        device=args.device,
        wall_seconds=time.perf_counter() - start,
    )


if __name__ == "__main__":
    main()
