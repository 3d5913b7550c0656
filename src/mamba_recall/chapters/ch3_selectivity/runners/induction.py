"""Trained Mamba vs Mamba-Δ⊤ on INDUCTION HEADS (paper 003, Fig. 3, Fig. A.4).

``python -m mamba_recall.chapters.ch3_selectivity.runners.induction --preset ci``.
1-layer models without gate (size-4 conv, SiLU): ``s6`` (Mamba, Δ per channel) and ``s6_dT`` (Mamba-Δ⊤,
Δ per state, Eq. 15), N = N_factor·|V|; data from :func:`~mamba_recall.tasks.induction_heads.induction_heads`
(hard-case probability p, range γ) on the fly; accuracy over all positions (blank class included) and over
non-blank positions. ``ci`` is a smoke test (|V| = 5, T = 32, one d). Every preset runs as run-store jobs
(``results/runs/ch3_induction/``, resumable) and writes ``results/ch3_induction_<preset>.json`` with the tables
``runs``, ``cells`` (mean, 95 % t-interval, per-seed values), ``rows`` (each run's row) and ``curves``.

``--preset paper --allow-long [--jobs N]``: the Fig. 3/A.4 grid, best of 5, as run-store jobs (a GPU for each job
where its process has one: ``training.selectivity.GPU_PRESETS``).

``--preset cpu-hours --allow-long [--jobs 1]``: T = 100, |V| = 5 with d ∈ {4, 10, 20} and |V| = 10 with
d ∈ {8, 20, 40} (each across its Lem. 3 bound d = 2|V|), N = 4|V|, both mixers, 5 seeds.
"""

from __future__ import annotations


import torch

from mamba_recall.experiment import runner_main
from mamba_recall.runstore import job_device
from mamba_recall.tasks.induction_heads import induction_heads
from mamba_recall.chapters.ch3_selectivity.training.selectivity import (
    build_model,
    job_config,
    recipe_fields,
    train_recipe,
)
from ..training.job_configs import InductionRun
from .common import (
    curve_of,
    store_bundle_writer,
)


@torch.no_grad()
def accuracies(model, ids, labels, V, device):
    model.eval()
    pred = torch.cat([model(ids[i : i + 256].to(device)).argmax(-1).cpu() for i in range(0, len(ids), 256)])
    ok = pred == labels
    nonblank = labels != V
    return float(ok.double().mean()), float(ok[nonblank].double().mean())


def resolved_config(cfg: dict, V: int, d: int, N: int, mixer: str) -> InductionRun:
    """The fully resolved configuration of one INDUCTION HEADS run (a run-store job's config): task (T, |V|, hard-case
    probability p, range γ), model (1 layer, size-4 conv, SiLU, no gate), recipe (Adam without weight decay, cosine
    lr to 0, early stop at 100 % held-out accuracy, evaluated every 100 steps), data seeds (training batch of step s:
    ``10⁷·(seed + 1) + s``; held-out ``10⁶ + |V|``; test ``2·10⁶ + |V|``)."""
    return InductionRun(
        task="induction_heads (paper 003, App. D.4)",
        T=cfg["T"],
        V=V,
        p=cfg["p"],
        gamma=cfg["gamma"],
        d=d,
        N=N,
        mixer=mixer,
        **recipe_fields(cfg, V),
    )


def train_one(c: InductionRun, seed: int, *, steps: int | None = None, device: str = "cpu", backend: str = "auto"):
    """Train and test one model of resolved config ``c`` and init seed ``seed`` (``steps`` overrides the budget, for
    timing). Returns (TrainResult, the ``runs`` row)."""
    T, V = c.T, c.V
    ev = induction_heads(c.eval_sequences, T, V, c.p, c.gamma, seed=c.eval_seed)
    test = induction_heads(c.test_sequences, T, V, c.p, c.gamma, seed=c.test_seed)
    torch.manual_seed(seed)
    model = build_model(
        c.mixer,
        V=V,
        d=c.d,
        N=c.N,
        T=T,
        n_classes=V + 1,
        backend=backend,
        use_conv=True,
        d_conv=4,
        activation="silu",
    )
    res = train_recipe(
        model,
        lambda n, data_seed: induction_heads(n, T, V, c.p, c.gamma, seed=data_seed),
        c,
        seed,
        ev,
        steps=steps,
        device=device,
    )
    acc, acc_nb = accuracies(model, *test, V, device)
    row = dict(
        V=V, T=T, d=c.d, N=c.N, mixer=c.mixer, seed=seed, accuracy=acc, accuracy_nonblank=acc_nb,
        steps=res.steps_run, seconds=res.seconds,
    )  # fmt: skip
    return res, row


# ------------------------------------------------------------------------------------------ run store (cpu-hours)
EXPERIMENT = "ch3_induction"
RUNNER = "mamba_recall.chapters.ch3_selectivity.runners.induction:run_job"


def ds_for(cfg: dict, V: int) -> list[int]:
    """The widths d of vocabulary ``V``: ``cfg["ds_per_V"][str(V)]`` where the preset sets one (a sweep across
    that |V|'s own Lem. 3 bound d = 2|V|), else ``cfg["ds"]``."""
    return cfg.get("ds_per_V", {}).get(str(V), cfg["ds"])


def _cells(cfg: dict):
    factors = cfg["N_factor"] if isinstance(cfg["N_factor"], list) else [cfg["N_factor"]]
    for V in cfg["Vs"]:
        for fac in factors:
            for d in ds_for(cfg, V):
                for mixer in ("s6", "s6_dT"):
                    yield V, d, fac * V, mixer


def jobs_for(preset: str, smoke: bool = False) -> list[dict]:
    from mamba_recall.presets import experiment
    from mamba_recall.runstore import make_job

    sizes = experiment(EXPERIMENT, preset, smoke=smoke)
    return [
        make_job(EXPERIMENT, job_config(resolved_config(sizes, *cell), preset), s)
        for cell in _cells(sizes)
        for s in sizes["seeds"]
    ]


def run_job(config: InductionRun, seed: int) -> dict:
    res, row = train_one(config, seed, device=job_device(config))
    return {"row": row, "curve": curve_of(res, config.eval_every)}


write_bundle = store_bundle_writer(
    "ch3_induction",
    EXPERIMENT,
    jobs_for,
    by=["V", "T", "d", "N", "mixer"],
)


main = runner_main(EXPERIMENT, "ci")


if __name__ == "__main__":
    raise SystemExit(main())
