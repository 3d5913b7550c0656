r"""Chapter 2's one-model-per-job figure grids: Fig. 7, Figs. 10–11 and Tab. 10, Fig. 8 and Thm 5 of paper 002 with
3 seeds, one run-store job per model and seed (preset ``cpu-hours``: the paper's settings on the part of each grid a
2-core CPU trains in about 3 CPU-hours). Each is the declared experiment ``ch2_<part>``
(:mod:`..experiments`), run by its name:

    python -m mamba_recall grid ch2_fig7 --preset cpu-hours --allow-long [--jobs 1]
    python -m mamba_recall grid ch2_fig8 ch2_thm5 --preset cpu-hours --allow-long
    python -m mamba_recall grid ch2_fig7 --preset cpu-hours --aggregate-only

One route per figure and preset: at ``ci`` and ``paper`` Fig. 7, Figs. 10–11 and Tab. 10 are parts of the ensembles
of ``ch2_scaling`` and Fig. 8 is the grid of ``ch2_multihead`` (:mod:`.ensembles`), so :func:`jobs_for` refuses those
presets for them, naming that command (:func:`ensemble_route`); ``thm5`` (its own sizes, ``ch2_thm5``) runs at every
preset.

Parts (sizes: ``chapters/ch2_hashing_scaling/configs.py``, ``ch2_scaling[preset]`` for fig7 / fig10_11 / tab10, ``ch2_multihead[preset]``
for fig8; the comments there say what was cut from the paper's grids and why):
* ``fig7`` — §5.2, Fig. 7: the Λ-layer simplified model (Alg. 2, residual) at (N, Λ); Thm 4 / 6: accuracy is a
  function of N_eff = Λ N;
* ``fig10_11`` — App. G, Figs. 10–11: repeating keys (N_k) and queries (N_q) against 1–3 layers, and N_q = 2 with
  value tokens after every query (the sequences of Remark 5's 3/4);
* ``fig8`` — §5.2, Fig. 8 and Thm 5: head patterns MHA / MQA / MKA / MVA at M heads and state N, and the
  full-width value ablation (``values="full"``: every head reads the whole value vector, as Lemma 5's proof);
* ``thm5`` — App. E.2, Thm 5 at the paper's 4000 steps: the MHA cells of Thm 5's pairs (one head at N ∈ {2, 4, 8};
  (M, N) = (2, 2), (2, 4), (4, 2)), trained as the fig8 part's (the same job function);
* ``tab10`` — App. K, Tab. 10: rows Base, A, B (selective, d_conv 4) and C, D, E (linear, d_conv 4 / 2 / none).

Every job trains one model alone (one process, one torch thread) with the functions of the ci runners
(:func:`..training.ensemble.train_members`, :func:`..training.ensemble.train_selective_rows`,
:func:`..training.heads.train_heads`):
initialisation seed ``seed``, training stream ``seed · 100003 + step``, the held-out evaluation stream
``EVAL_SEED`` (10⁶, shared by every model), best accuracy over the evaluations, early stop at 0.999. Its fully
resolved config (preset, sizes, recipe, evaluation) is the job's config, so the job key names what ran.
Jobs live in ``results/runs/ch2_<part>/``; the command skips finished jobs (resumable). The bundle
``results/ch2_<part>_<preset>.json`` has the one layout, ``cells`` (per cell the mean best accuracy over seeds with a
95 % t-interval clipped to [0, 1], the per-seed values and the seed-max) and ``runs``, then ``figure`` (the cells
with the columns the figure reads: ``acc`` = the mean, ``acc_max``, Fig. 7's ``N_eff``) and ``rows`` (one row per
job: its cell, seed and exact per-seed numbers, which the claims read seed by seed).
"""

from __future__ import annotations

import math
import time

import pandas as pd

from mamba_recall.chapters.ch2_hashing_scaling.pipelines.scaling_grids import CELL_COLUMNS
from mamba_recall.experiment import command_line
from mamba_recall.presets import experiment
from mamba_recall.runstore import (
    finished_status,
    make_job,
)

from . import ensemble_presets
from .job_configs import CodeRecipe, Evaluation, Fig7Cell, Fig10Cell, FigData, HeadCell, Tab10Cell

RUNNER = "mamba_recall.chapters.ch2_hashing_scaling.runners.figure_grids:run_job"
#: part → (preset experiment, key inside it or None, columns of a cell, what it reproduces)
PARTS = {
    "fig7": ("ch2_scaling", "multilayer", CELL_COLUMNS["fig7"], "§5.2, Fig. 7"),
    "fig10_11": ("ch2_scaling", "repetition", CELL_COLUMNS["fig10_11"], "App. G, Figs. 10-11"),
    "fig8": ("ch2_multihead", None, CELL_COLUMNS["fig8"], "§5.2, Fig. 8; Thm 5"),
    "thm5": ("ch2_thm5", None, CELL_COLUMNS["thm5"], "App. E.2, Thm 5 at the paper's 4000 steps"),
    "tab10": ("ch2_scaling", "ablation", CELL_COLUMNS["tab10"], "App. K, Tab. 10"),
}
#: Tab. 10's rows: (row, label, selective, d_conv).
TAB10_ROWS = (
    ("Base", "Base (Mamba, no norm)", True, 4),
    ("A", "A (Base, Ā = I)", True, 4),
    ("B", "B (A, no gate)", True, 4),
    ("C", "C (d_conv=4, linear)", False, 4),
    ("D", "D (d_conv=2) = Alg. 1", False, 2),
    ("E", "E (no Conv1D)", False, 0),
)
#: the parts whose jobs train the multi-head model of Alg. 3 (one job function, one per-run layout)
HEAD_PARTS = ("fig8", "thm5")


EVAL_EVERY_MIN = 50  # evaluations every max(50, steps // 6) steps, as the ci runners


def experiment_name(part: str) -> str:
    _check_part(part)
    return f"ch2_{part}"


def _check_part(part: str) -> None:
    if part not in PARTS:
        raise ValueError(f"unknown part {part!r}; use one of {', '.join(PARTS)}.")


def part_sizes(part: str, preset: str, smoke: bool = False) -> tuple[dict, dict]:
    """``(sizes of the part, the preset entry it sits in)`` (the entry carries batch / warmup / hold / n_eval)."""
    _check_part(part)
    name, key, _, _ = PARTS[part]
    cfg = experiment(name, preset, smoke=smoke)
    if key is None:
        return cfg, cfg
    if key not in cfg:
        raise ValueError(
            f"preset {preset!r} of {name} has no {key!r} part; add it in chapters/ch2_hashing_scaling/configs.py."
        )
    return cfg[key], cfg


def _eval(n: int, steps: int) -> Evaluation:
    from ..training.ensemble import EVAL_SEED

    return Evaluation(
        n=n,
        seed=EVAL_SEED,
        every=max(EVAL_EVERY_MIN, steps // 6),
        target_accuracy=0.999,
        metric="per-query accuracy, full-vocabulary argmax; best over the evaluations; training stops once it "
        "reaches target_accuracy",
    )


def _schedule(entry: dict, steps: int, batch: int, **recipe) -> dict:
    """``recipe`` and ``eval`` of one cell: the authors' ``code`` recipe with warmup ``min(entry["warmup"], steps -
    1)`` and ``entry["hold"]`` (``recipe``: further overrides, e.g. ``grad_clip``) and the held-out schedule of
    ``entry["n_eval"]`` sequences (``entry``: the preset entry that carries them)."""
    overrides = {"warmup": min(entry["warmup"], steps - 1), "hold": entry["hold"], **recipe}
    return {"recipe": CodeRecipe.of("code", batch, **overrides), "eval": _eval(entry["n_eval"], steps)}


def _regime(c: dict) -> dict:
    """The regime sizes of a cell (vocabulary V, facts N_f, length L, width D) as the part's sizes give them."""
    return {"V": c["V"], "Nf": c["Nf"], "L": c["L"], "D": c["D"]}


def _data(task: str, task_kw: dict) -> FigData:
    return FigData(task=task, task_kw=task_kw, train_seed="seed*100003 + step", init_seed="seed")


def _fig7_cells(c: dict, top: dict, base: dict) -> list[Fig7Cell]:
    """The fig7 cells: one per layer count and state size N (LinearMamba, Alg. 2, residual)."""
    out = []
    steps, batch = c["steps"], top["batch"]
    for lam in c["layers"]:
        for n in c["Ns"]:
            out.append(
                Fig7Cell(
                    **base,
                    model="LinearMamba (Alg. 2, residual)",
                    **_regime(c),
                    N=n,
                    layers=lam,
                    N_eff=n * lam,
                    d_conv=2,
                    residual=True,
                    batch=batch,
                    steps=steps,
                    **_schedule(top, steps, batch),
                    data=_data("mqar", {}),
                )
            )
    return out


def _fig10_11_cells(c: dict, top: dict, base: dict) -> list[Fig10Cell]:
    """The fig10_11 cells: one per (task, repeats, layers, post-query) entry of the part's ``cells``."""
    out = []
    steps, batch = c["steps"], c["batch"]
    for task, reps, lam, post in c["cells"]:
        L = 2 * c["Nf"] * (reps + 1)  # N_f facts, then N_f queries repeated ``reps`` times (ch2_scaling's rule)
        L += L % 2
        V = max(c["V"], L + 2)
        if task == "repeated_keys":
            if post != "full":
                raise ValueError(f"fig10_11 cell {[task, reps, lam, post]}: post-query tokens apply to queries.")
            kw = {"Nk": reps}
        elif task == "repeated_queries":
            kw = {"Nq": reps, "post_query": post}
        else:
            raise ValueError(f"fig10_11 cell task {task!r}: use 'repeated_keys' or 'repeated_queries'.")
        out.append(
            Fig10Cell(
                **base,
                model="LinearMamba (Alg. 2, residual)",
                task=task,
                repeats=reps,
                post_query=post,
                V=V,
                Nf=c["Nf"],
                L=L,
                D=c["D"],
                N=c["N"],
                layers=lam,
                d_conv=2,
                residual=True,
                batch=batch,
                steps=steps,
                **_schedule(top, steps, batch),
                data=_data(task, kw),
            )
        )
    return out


def _head_cells(c: dict, base: dict) -> list[HeadCell]:
    """The cells of a multi-head part (fig8, thm5): one per (pattern, values, M, N) entry of its ``cells``."""
    out = []
    steps, batch = c["steps"], c["batch"]
    for pattern, values, M, n in c["cells"]:
        out.append(
            HeadCell(
                **base,
                model="MultiHeadLinearMamba (Alg. 3)",
                pattern=pattern,
                values=values,
                M=M,
                N=n,
                **_regime(c),
                d_conv=2,
                batch=batch,
                steps=steps,
                **_schedule(c, steps, batch, grad_clip=c["grad_clip"]),
                n_noise=c["n_noise"],
                data=_data("mqar", {}),
            )
        )
    return out


def _tab10_cells(c: dict, top: dict, base: dict) -> list[Tab10Cell]:
    """The tab10 cells: one per row of :data:`TAB10_ROWS`."""
    out = []
    for row, label, selective, d_conv in TAB10_ROWS:
        half = selective and row in c.get("half_batch_rows", ())
        steps, batch = (2 * c["steps"], c["batch"] // 2) if half else (c["steps"], c["batch"])
        out.append(
            Tab10Cell(
                **base,
                model=("SelectiveAblationMamba" if selective else "LinearMamba (Alg. 1)") + f", row {row}",
                row=row,
                label=label,
                selective=selective,
                **_regime(c),
                N=c["N"],
                d_conv=d_conv,
                residual=False,
                batch=batch,
                steps=steps,
                sizes=c,
                **_schedule(top, steps, batch),
                data=_data("mqar", {}),
            )
        )
    return out


def cell_configs(part: str, preset: str, smoke: bool = False) -> list[Fig7Cell | Fig10Cell | HeadCell | Tab10Cell]:
    """The fully resolved config of every cell of ``part`` (one job per cell and seed)."""
    c, top = part_sizes(part, preset, smoke)
    base = {"part": part, "preset": preset, "smoke": smoke, "reproduces": PARTS[part][3]}
    if part == "fig7":
        return _fig7_cells(c, top, base)
    if part == "fig10_11":
        return _fig10_11_cells(c, top, base)
    if part in HEAD_PARTS:
        return _head_cells(c, base)
    return _tab10_cells(c, top, base)  # tab10


def ensemble_route(part: str, preset: str) -> str | None:
    """The grid command that makes ``part``'s figure at ``preset`` where Chapter 2's ensembles make it (the part
    lives in ``ch2_scaling``'s or ``ch2_multihead``'s sizes and ``preset`` is one of :data:`.ensemble_presets.PRESETS`:
    ``ch2_scaling``'s part ``--only multilayer`` / ``repetition`` / ``ablation``, ``ch2_multihead``'s grid), else
    None (this module's one-model grid makes it: ``cpu-hours``, and ``thm5`` at every preset)."""
    _check_part(part)
    name, key, _, _ = PARTS[part]
    if name not in ensemble_presets.EXPERIMENTS or preset not in ensemble_presets.PRESETS:
        return None
    return ensemble_presets.grid_command(name, preset) + (f" --only {key}" if key else "")


def jobs_for(part: str, preset: str, smoke: bool = False) -> list[dict]:
    """One job per cell of ``part`` and seed at ``preset``; a preset at which the figure is an ensemble part (one
    route per figure and preset: :func:`ensemble_route`) raises, naming that route's command."""
    route = ensemble_route(part, preset)
    if route is not None:
        raise ValueError(f"at preset {preset!r} the figure trains as ensembles, made only by `{route}`")
    c, _ = part_sizes(part, preset, smoke)
    return [
        make_job(experiment_name(part), cfg, s) for cfg in cell_configs(part, preset, smoke) for s in range(c["seeds"])
    ]


# ---------------------------------------------------------------------------------------------- one job


def run_job(config: Fig7Cell | Fig10Cell | HeadCell | Tab10Cell, seed: int) -> dict:
    """One model of one cell and seed (the run store's job function): ``{"best_accuracy", ...}``."""
    if isinstance(config, (Fig7Cell, Fig10Cell)) or (isinstance(config, Tab10Cell) and not config.selective):
        from ..training.ensemble import train_members  # one simplified model: a single member

        (acc,) = train_members(
            config.V,
            config.Nf,
            config.L,
            [(config.D, config.N, getattr(config, "layers", 1))],
            steps=config.steps,
            batch=config.batch,
            warmup=config.recipe.warmup,
            hold=config.recipe.hold,
            n_eval=config.eval.n,
            seed=seed,
            device="cpu",
            task=config.data.task,
            task_kw=config.data.task_kw,
            d_conv=config.d_conv,
            residual=config.residual,
            way="ensemble",
        )
        return {"best_accuracy": float(acc)}
    if isinstance(config, Tab10Cell):
        from ..training.ensemble import train_selective_rows

        recipe = {"n_eval": config.eval.n, **config.recipe.to_record()}
        accs, curve = train_selective_rows(config.row, config.sizes, recipe, "cpu", seed=seed, members=1)
        return {"best_accuracy": float(accs[0]), "eval_curve": [[s, a] for s, a in curve]}
    if isinstance(config, HeadCell):
        from mamba_recall.tasks.mqar import mqar
        from ..pipelines.heads import NOISE_SEED, logit_noise
        from ..training.heads import train_heads

        V, Nf, L = config.V, config.Nf, config.L
        ev = mqar(V, Nf, L, config.eval.n, config.eval.seed)
        rec = config.recipe
        cfg = dict(
            V=V, Nf=Nf, L=L, D=config.D, values=config.values, batch=config.batch, steps=config.steps,
            warmup=rec.warmup, hold=rec.hold, grad_clip=rec.grad_clip,
        )  # fmt: skip
        model, r = train_heads(cfg, config.pattern, config.M, [config.N], ev, init_seed=seed, seed=seed)
        xn, yn = mqar(V, Nf, L, config.n_noise, NOISE_SEED)
        st = logit_noise(model, xn, yn, V, Nf)[0]
        return {
            "best_accuracy": float(r.best_accuracy[0]),
            "steps_run": r.steps_run,
            **{k: v for k, v in st.items() if k != "norm"},
        }
    raise TypeError(f"figure_grids.run_job: a config of the figure grids (Fig7Cell, ...), got {type(config).__name__}.")


# ---------------------------------------------------------------------------------------------- estimate


def measure(config: dict, steps: int = 3) -> float:
    """CPU seconds of one training step of ``config``'s model, one thread (a 1-step warm-up, then ``steps``):
    CPU time rather than wall time, so that other processes on the machine do not inflate it."""
    import torch

    from mamba_recall.models.linear_mamba import LinearMamba, MultiHeadLinearMamba, SelectiveAblationMamba
    from mamba_recall.tasks.mqar import batch_fn
    from ..training.ensemble import train_ensemble

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        V, Nf, L, B = config["V"], config["Nf"], config["L"], config["batch"]
        if config["part"] in HEAD_PARTS:
            model = MultiHeadLinearMamba(
                V, config["D"], config["N"], config["M"], config["pattern"], values=config["values"], ensemble=1, seed=0
            )
        elif config["part"] == "tab10" and config["selective"]:
            model = SelectiveAblationMamba(V, config["D"], config["N"], config["row"], d_conv=4, ensemble=1, seed=0)
        else:
            model = LinearMamba(
                V, config["D"], config["N"], config.get("layers", 1), d_conv=config["d_conv"],
                residual=config["residual"], ensemble=1, seed=0,
            )  # fmt: skip
        task = config["data"]["task"]
        mb = batch_fn(V, Nf, L, B, 0, task="standard" if task == "mqar" else task, **config["data"]["task_kw"])
        train_ensemble(model, mb, steps=1, overrides={"batch_size": B})
        t0 = time.process_time()
        train_ensemble(model, mb, steps=steps, overrides={"batch_size": B})
        return (time.process_time() - t0) / steps
    finally:
        torch.set_num_threads(threads)


def _cost_key(config: dict) -> tuple:
    """Cells with the same key cost the same per step (N barely matters at these sizes)."""
    return (
        config["part"], config["V"], config["L"], config["D"], config["batch"], config.get("layers"),
        config.get("M"), config.get("values"), config.get("selective"), config.get("d_conv"),
    )  # fmt: skip


def estimate(left: list[dict]) -> tuple[float, str]:
    """Upper bound (no early stop) in CPU seconds: the step time of every distinct model measured here (one
    thread, CPU time), times the job's steps, plus its evaluations (≈ 1/3 of a step per 128 sequences each)."""
    per_step: dict[tuple, float] = {}
    total = 0.0
    for job in left:
        c = job["config"]
        key = _cost_key(c)
        if key not in per_step:
            per_step[key] = measure(c)
        n_evals = math.ceil(c["steps"] / c["eval"]["every"])
        total += per_step[key] * (c["steps"] + n_evals * c["eval"]["n"] / c["batch"] / 3)
    lo, hi = min(per_step.values()), max(per_step.values())
    basis = (
        f"measured here, 1 thread, CPU time: {len(per_step)} distinct models, {lo * 1e3:.0f}-{hi * 1e3:.0f} ms per "
        "step; every job at its full step count (early stopping at 0.999 makes some shorter)"
    )
    print(f"step time: {basis}; {total / 3600:.2f} CPU-hours for {len(left)} jobs", flush=True)
    return total, basis


# ---------------------------------------------------------------------------------------------- bundle


def bundle_name(part: str, preset: str, smoke: bool = False) -> str:
    return f"ch2_{part}_{preset}" + ("_smoke" if smoke else "")


METRICS = {part: ["best_accuracy", "rel_var_empty", "rel_var_wrong", "margin"] for part in HEAD_PARTS}


def write_bundle(part: str, preset: str, *, store=None, smoke: bool = False, log=print):
    """Aggregate the finished jobs of ``part`` at ``preset`` into ``results/ch2_<part>_<preset>.json``: the one
    layout (``runs``, ``cells`` over the part's cell keys), then ``figure`` (the cells with the columns the figure
    reads: ``acc``, ``acc_max``, Fig. 7's ``N_eff``) and ``rows`` (each run's cell, seed and metrics)."""
    from mamba_recall.experiment import experiment_named

    c, top = part_sizes(part, preset, smoke)
    jobs = jobs_for(part, preset, smoke)
    runs, data = finished_status(jobs, store, preset=preset, log=log)
    if not runs:
        return None
    by = PARTS[part][2]
    metrics = METRICS.get(part, ["best_accuracy"])
    cells = experiment_named(experiment_name(part)).layout(data, by=by)["cells"].copy()  # the one layout's cells
    cells["acc"] = cells["best_accuracy_mean"]
    cells["acc_max"] = cells["best_accuracy_max"]
    if part == "fig7":
        cells["N_eff"] = cells["N"] * cells["layers"]
    per_run = pd.DataFrame(
        [
            {**{k: r["config"][k] for k in by}, "seed": r["seed"], **{m: r["result"][m] for m in metrics}}
            for r in sorted(runs, key=lambda r: (tuple(str(r["config"][k]) for k in by), r["seed"]))
        ]
    )
    if part == "fig7":
        per_run["N_eff"] = per_run["N"] * per_run["layers"]
    data.update(
        store=f"results/runs/{experiment_name(part)}/",
        aggregation="best accuracy over evaluations per run; mean and 95 % interval over seeds, and seed-max",
    )
    config = {
        "preset": preset,
        "smoke": smoke,
        "part": part,
        "reproduces": PARTS[part][3],
        "sizes": c,
        "n_eval": top["n_eval"],
        "seeds": c["seeds"],
        "job_configs": [cell.to_record() for cell in cell_configs(part, preset, smoke)],
        "runner": RUNNER,
    }
    tables = {"figure": cells, "rows": per_run}
    return experiment_named(experiment_name(part)).save_bundle(
        preset, data, config, tables, smoke=smoke, by=by, name=bundle_name(part, preset, smoke), log=log
    )


if __name__ == "__main__":
    raise SystemExit(
        "error: figure_grids holds the jobs of Chapter 2's one-model figure grids, declared experiments run by name: "
        + command_line([experiment_name(p) for p in PARTS], "cpu-hours")
    )
