r"""Chapter 4's claims of §4.1–§4.4 judged on other S-models: the run-store experiment ``ch4_model_checks``.

The claims of paper 004 and their rules are declared once, in :mod:`mamba_recall.chapters.ch4_primacy_recency.claims`; the chapter's
notebooks (§4.1–§4.4) compute their inputs on the committed ``s_small`` and call the registry. This experiment
computes the same inputs with the same library calls on each committed Mamba-1 S-model of its preset's list (sizes
``ch4_model_checks``: ``s_small``, ``s_small_seed1``, ``s_mix`` at ci), one run-store job per model
(:func:`jobs_for`, :func:`run_job`), measures every claim of §4.1–§4.4 with the registry's measurement functions
(:func:`measure_model`; a job stores each claim's measurement, never a verdict) and writes one bundle,
``results/ch4_model_checks_<preset>.json`` (:func:`write_bundle`): the one layout, table ``models`` (each model's
card, whether it passed its convergence gate, the checkpoint and its sha256) and, in its data, each model's stored
measurements (``results``). Section 4.7 of the book judges them when it runs (:func:`judged_claims`: model, claim id,
status, our numbers, the reason where not testable or capped; nothing is recorded for the book's scorecard), so a rule
revised after the runs judges them anew. A job's config names the checkpoint with the sha256 its
sidecar records, so a retrained checkpoint is a new job (judged again), never read under the old verdicts.

On a Mamba-2 model the claims are App. F's (:func:`claim_inputs_m2`: the U, the long-term heads of Eq. 9
and their first-triple ablation, Fig. 13), measured by :func:`~mamba_recall.chapters.ch4_primacy_recency.pipelines.mamba2_heads.mamba2_head_tests`
as notebook 4.6 measures them; the edge family's checks (:mod:`.edge_checks`) make them on its Mamba-2 recipe at
each model's pressure length.

Run::

    python -m mamba_recall grid ch4_model_checks --preset ci          # the declared experiment (one job per model)
    python -m mamba_recall.chapters.ch4_primacy_recency.runners.model_checks --checkpoint path/to/ch4_x.pt --name x

The first is the one command of the experiment (this module's ``main`` without ``--checkpoint`` is that command under
this runner's name, :func:`mamba_recall.experiment.grid_command`). The second is what the grid cannot do: judge any
Chapter 4 checkpoint ``.pt`` outside the declared list (:func:`check_checkpoint`), written to
``results/ch4_model_checks_<name>_<preset>.json`` in the same layout; it is a researcher's bundle, not the book's.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import torch

from mamba_recall.chapters.ch4_primacy_recency.pipelines import primacy as A
from mamba_recall.chapters.ch4_primacy_recency.pipelines.mamba2_heads import mamba2_head_tests
from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import checkpoint_path, load_checkpoint
from ..claims import MAMBA2_CLAIMS
from ..claims.mamba2_heads import m2_claim_args
from mamba_recall.experiment import command_line, experiment_named, grid_command
from mamba_recall.paths import REPO_ROOT
from mamba_recall.presets import experiment
from mamba_recall.results import command_provenance, read_checkpoint, save_bundle
from mamba_recall.runners import runner_command
from mamba_recall.runstore import finished_status, make_job

from .job_configs import ModelCheckJob

EXPERIMENT = "ch4_model_checks"
RUNNER = "mamba_recall.chapters.ch4_primacy_recency.runners.model_checks:run_job"

SECTIONS = ("ch4_ucurve", "ch4_channels", "ch4_periodicity", "ch4_recency")  # the sizes of §4.1–§4.4
#: the claims of §4.1–§4.4 that :func:`claim_inputs` measures, in its order
CLAIM_IDS = (
    "004/Fig2",
    "004/Sec4.1-relations",
    "004/Sec4.4-recency",
    "004/Fig3a",
    "004/Fig4-count",
    "004/Fig3b",
    "004/Fig9",
    "004/Fig10",
    "004/Fig6a",
    "004/Sec1-delta-direction",
    "004/Fig6b",
    "004/Fig7",
    "004/Fig5b",
    "004/Fig5a",
    "004/Fig14",
)
#: the Mamba-2 claims of App. F that :func:`claim_inputs_m2` measures, in its order (declared in
#: :mod:`mamba_recall.chapters.ch4_primacy_recency.claims.mamba2_heads`, judged on the edge family's Mamba-2 recipe)
CLAIM_IDS_M2 = MAMBA2_CLAIMS
DEPENDS_ON = ("ch4_train",)  # `reproduce` retrains the checkpoints first


def _channel_ablations(model, vocab, preset, device, at, ucurve_Ls, n_random) -> tuple:
    """The channel statistics and ablations of :func:`claim_inputs` (sizes of ``ch4_channels``) → (stats, the
    identified channels, the ablation at the first triple, at all steps, {length: ablation at the first triple})."""
    from mamba_recall.analysis import channels as ch
    from mamba_recall.analysis import interventions as iv

    S = experiment("ch4_channels", preset)
    stats = ch.channel_stats(model, A.identification_prompt(vocab, S["L_ident"]))
    chans = ch.identify(stats, S["tau"], S["p"])
    targets = ch.target_set(chans, max(1, min(3, stats.n_layers // 2)))
    nr = S["n_random"] if n_random is None else n_random
    Ls = S["Ls"] if at is None else [at] + [L for L in (ucurve_Ls or []) if L > at][:2]
    L0 = Ls[0]
    bos = vocab.bos
    first = A.ablation_effects(
        model, vocab, L0, S["n"], targets, iv.first_triplet_steps(bos=bos), n_random=nr, device=device
    )
    all_steps = A.ablation_effects(
        model,
        vocab,
        L0,
        S["n"],
        targets,
        "all",
        n_random=nr,
        device=device,
        controls=("global",),
        base=first["base"],
    )
    lengths = {L0: first}
    for L in Ls[1:]:
        lengths[L] = A.ablation_effects(
            model, vocab, L, S["n"], targets, iv.first_triplet_steps(bos=bos), n_random=0, device=device
        )
    return stats, chans, first, all_steps, lengths


def _recency_tests(model, vocab, preset, device, at, distractor_pool) -> tuple:
    """The recency tests of :func:`claim_inputs` (sizes of ``ch4_recency``) → ({(L, variant): distractor sweep},
    {L: initial-state effects}, the scale sweep or None)."""
    S = experiment("ch4_recency", preset)
    sweeps = {
        (L, v): A.distractor_sweep(model, vocab, L, S["n"], S["ns"], variant=v, device=device, pool=distractor_pool)
        for L in (S["Ls"] if at is None else [at])
        for v in ("repeated", "random")
    }
    inits = {
        L: A.state_init_effects(model, vocab, L, S["n"], device=device) for L in (S["init_Ls"] if at is None else [at])
    }
    # the scale sweep U(0, s), s from 1 down to the model's typical |h|, at the first init length (the edge family's L_p)
    sweep = A.state_scale_sweep(model, vocab, min(inits), S["n"], device=device) if at is not None else None
    return sweeps, inits, sweep


def claim_inputs(
    model,
    vocab,
    preset: str = "ci",
    device: str = "cpu",
    *,
    at: int | None = None,
    ucurve_Ls: list[int] | None = None,
    n_random: int | None = None,
    distractor_pool: str = "content",
) -> dict:
    """{claim id: (args, kwargs)} for every claim of §4.1–§4.4, computed exactly as the notebooks compute them
    (the same library calls, the preset's sizes of each notebook).

    ``at``: run every length-dependent test (the channel ablations at the first triple and at all steps, the
    distractor sweep, the initial-state test) at this length, the model's pressure length L_p, instead of the
    preset's lengths (the edge family, :mod:`.edge`); the longer-sequence check (Fig. 10) then uses the
    evaluated lengths above ``at``. ``ucurve_Ls``: the lengths of the U-curves (default the preset's);
    ``n_random``: random draws per control (default the preset's). ``distractor_pool``: the tokens of the
    distractor sweep (Fig. 5b): ``"content"`` (default) or ``"filler"`` for a model trained with filler gaps, for which
    those are in distribution."""
    out = {}
    S = experiment("ch4_ucurve", preset)
    curves = A.ucurves(model, vocab, ucurve_Ls or S["Ls"], S["n"], device=device)
    out["004/Fig2"] = (curves, ucurve_Ls or S["Ls"])
    out["004/Sec4.1-relations"] = (curves, ucurve_Ls or S["Ls"])
    out["004/Sec4.4-recency"] = (curves,)

    stats, chans, first, all_steps, lengths = _channel_ablations(model, vocab, preset, device, at, ucurve_Ls, n_random)
    out["004/Fig3a"] = (stats, chans)
    out["004/Fig4-count"] = (stats,)
    out["004/Fig3b"] = (first,)
    out["004/Fig9"] = (all_steps,)
    out["004/Fig10"] = (lengths,)

    S = experiment("ch4_periodicity", preset)
    res = A.periodic_deltas(model, vocab, S["periods"], n=S["n"], length=S["length"])
    for cid in ("004/Fig6a", "004/Sec1-delta-direction", "004/Fig6b", "004/Fig7"):
        out[cid] = (res,)

    sweeps, inits, sweep = _recency_tests(model, vocab, preset, device, at, distractor_pool)
    out["004/Fig5b"] = (sweeps,)
    out["004/Fig5a"] = (inits, sweep)
    out["004/Fig14"] = (inits,)
    return out


def claim_inputs_m2(
    model, vocab, preset: str = "ci", device: str = "cpu", *, at: int | None = None, ucurve_Ls=None
) -> dict:
    """{claim id: args} for App. F's Mamba-2 claims (:data:`CLAIM_IDS_M2`), with the sizes of ``ch4_mamba2_heads``
    in ``preset``; ``at`` and ``ucurve_Ls`` as in :func:`claim_inputs` (the edge family's pressure length and
    evaluated lengths). The same library calls as notebook 4.6
    (:func:`~mamba_recall.chapters.ch4_primacy_recency.pipelines.mamba2_heads.mamba2_head_tests`)."""
    from mamba_recall.models.mamba2 import Mamba2LMHeadModel

    if not isinstance(model, Mamba2LMHeadModel):
        raise ValueError(
            "claim_inputs_m2 measures App. F's head claims on a Mamba-2 model; this one is Mamba-1: use claim_inputs."
        )
    tests = mamba2_head_tests(model, vocab, experiment("ch4_mamba2_heads", preset), device, at=at, ucurve_Ls=ucurve_Ls)
    return m2_claim_args(tests)


def measure_model(
    checkpoint: Path, preset: str = "ci", *, device: str = "cpu", smoke: bool = False, log=print
) -> tuple[dict, dict]:
    """Load ``checkpoint`` and measure every claim of §4.1–§4.4 on it (:func:`measure_inputs` of
    :func:`claim_inputs`) → (``{claim id: measurement record}``, the checkpoint's sidecar); a smoke run's records say
    so (their evidence is marked smoke, so they judge nothing). Nothing is judged here: :func:`judged_claims`
    applies the claims' rules to the records."""
    from mamba_recall.results import smoke_active

    model, vocab, side = load_checkpoint(Path(checkpoint), device=device)  # hash-checked
    source = Path(checkpoint).resolve()
    side = {"source": str(source.relative_to(REPO_ROOT) if source.is_relative_to(REPO_ROOT) else source), **side}
    ctx = SimpleNamespace(preset=preset, device=torch.device(device), smoke=smoke or smoke_active())
    start = time.perf_counter()
    inputs = claim_inputs(model, vocab, preset, device)
    log(f"inputs computed in {time.perf_counter() - start:.0f} s")
    return measure_inputs(inputs, ctx=ctx, side=side), side


def measure_inputs(inputs: dict, *, ctx, side: dict) -> dict:
    """``{claim id: measurement record}`` of the claims' ``inputs`` (``{claim id: args}``) with the registry's
    measurement functions, each given ``ctx`` and ``side`` as :func:`mamba_recall.claims.check` gives them: a claim
    not measured yet, or one whose measurement raises ``NotRun``, records ``{"not_run": why}``. Each stored record is
    judged once here and the verdict dropped, so a record its rule cannot read fails the job, not the page."""
    from mamba_recall.claims import get, judge, measure_claim, measurement_from_record, measurement_record

    records = {}
    for cid, args in inputs.items():
        m = measure_claim(cid, *args, ctx=ctx, side=side)  # check()'s measuring half: a str is why it is not run
        if isinstance(m, str):
            records[cid] = {"not_run": m}
            continue
        records[cid] = measurement_record(m)
        # the rule reads what is stored: a record it cannot read fails the job now, not the page
        judge(get(cid), measurement_from_record(records[cid]))
    return records


def judged_claims(results: list[dict]) -> pd.DataFrame:
    """The verdict of every claim on every model, from the measurements the jobs stored (``results``: each a
    job's result, :func:`check_checkpoint`): one row per (model, claim): model, claim id, status, our numbers and the
    reason, each judged now by the claim's declared rule (a record ``{"not_run": why}`` reads *not run*), so a rule
    revised after the runs judges them anew. Nothing is recorded for the scorecard."""
    from mamba_recall.claims import ClaimError, get, judge, measurement_from_record, not_run_verdict

    rows = []
    for r in results:
        order = sorted(r["measurements"], key=lambda c: (CLAIM_IDS.index(c) if c in CLAIM_IDS else len(CLAIM_IDS), c))
        for cid in order:  # the claims in :data:`CLAIM_IDS`' order (a run record keeps its keys sorted)
            claim, rec = get(cid), r["measurements"][cid]
            try:
                v = (
                    not_run_verdict(claim, rec["not_run"])
                    if "not_run" in rec
                    else judge(claim, measurement_from_record(rec))
                )
            except ClaimError as exc:  # a rule revised to read what these stored measurements lack
                raise ClaimError(
                    f"{cid} on {r['model']}: {exc} The stored measurement predates its rule; measure again: "
                    f"{command_line(EXPERIMENT, 'ci')} (after changing ModelCheckJob.stores: a new value makes new jobs)."
                ) from exc
            rows.append({"model": r["model"], "claim_id": cid, "status": v.status, "ours": v.ours, "reason": v.reason})
    return pd.DataFrame(rows, columns=["model", "claim_id", "status", "ours", "reason"])


# ------------------------------------------------------------------------------------------------------ run store


def jobs_for(preset: str, smoke: bool = False) -> list[dict]:
    """One job per model of the preset's ``ch4_model_checks`` list (``smoke``: the first model only, at the ci
    sizes): its config names the model, the preset, the sizes' preset, the committed checkpoint
    (``results/checkpoints/ch4_train_<model>_ci.pt``, :func:`checkpoint_path`) and the sha256 its sidecar records
    (the pair checked by :func:`mamba_recall.results.read_checkpoint`, the one reader of a checkpoint and its
    sidecar). ValueError (naming the command that trains it) when a checkpoint's sidecar is missing, the reader's
    ``BundleError`` when the pair does not check out; the preset's error when the experiment has no sizes there."""
    models = experiment(EXPERIMENT, preset)["models"]
    train_it = command_line("ch4_train", "ci")
    jobs = []
    for model in models[:1] if smoke else models:
        path = checkpoint_path(model)
        sidecar = path.with_suffix(".json")
        if not sidecar.is_file():
            raise ValueError(
                f"{EXPERIMENT}: the checkpoint of {model} is missing ({sidecar.relative_to(REPO_ROOT)}); train it "
                f"first: {train_it}."
            )
        config = ModelCheckJob(
            model=model,
            preset=preset,
            sizes_preset="ci" if smoke else preset,
            smoke=smoke,
            checkpoint=str(path.relative_to(REPO_ROOT)),
            checkpoint_sha256=read_checkpoint(path, regenerate=f"{train_it} --only {model}")[1]["sha256"],
        )
        jobs.append(make_job(EXPERIMENT, config, 0))  # one run per model: the checks draw from their own seeds
    return jobs


def check_checkpoint(
    path: Path, name: str, preset: str = "ci", *, device: str = "cpu", smoke: bool = False, log=print
) -> dict:
    """Measure every claim of §4.1–§4.4 on the checkpoint ``path`` (:func:`measure_model`) → the result of one model:
    ``measurements`` (claim id → its measurement record, judged by :func:`judged_claims`), ``model_card``,
    ``converged``, ``checkpoint_sha256`` (the sidecar's, checked on loading) and ``seconds``."""
    start = time.perf_counter()
    records, side = measure_model(Path(path), preset, device=device, smoke=smoke, log=log)
    return {
        "model": name,
        "measurements": records,
        "model_card": A.model_card(side),
        "converged": A.converged(side),
        "checkpoint_sha256": side.get("sha256"),
        "seconds": round(time.perf_counter() - start, 1),
    }


def run_job(config: ModelCheckJob, seed: int) -> dict:
    """Measure one declared model (the run store's job function): :func:`check_checkpoint` on its committed checkpoint
    at the sizes of ``config.sizes_preset``; ValueError if the checkpoint is not the one the job names."""
    out = check_checkpoint(REPO_ROOT / config.checkpoint, config.model, config.sizes_preset, smoke=config.smoke)
    if out["checkpoint_sha256"] != config.checkpoint_sha256:
        raise ValueError(
            f"{config.checkpoint}: its sha256 is not the one this job was made for; make the jobs again "
            f"({command_line(EXPERIMENT, config.preset)})."
        )
    return out


def estimate(left: list[dict]) -> tuple[float, str]:
    """About 10 s per model: the ci checks took 8.5–9.3 s per model on one thread (the first per-model bundles,
    2026-11-28); the paper sizes are not measured."""
    return 10.0 * len(left), "about 10 s per model (measured at ci on one thread; paper sizes not measured)"


def _tables(results: list[dict]) -> dict[str, pd.DataFrame]:
    """The bundle's table ``models`` from the results of :func:`check_checkpoint` (each with its ``checkpoint``
    added), in the order given. The claims' measurements go into the bundle's data (``results``), never a verdict."""
    columns = ("model", "model_card", "converged", "checkpoint", "checkpoint_sha256", "seconds")
    return {"models": pd.DataFrame([{k: r[k] for k in columns} for r in results])}


def write_bundle(preset: str, *, store=None, smoke: bool = False, log=print):
    """``results/ch4_model_checks_<preset>.json`` (``_smoke`` for a smoke run; beside a scratch ``store``) from the
    finished jobs: the one layout, table ``models`` and data ``results`` (each model's stored measurements; module
    docstring), the models in the order of the preset's list; None when no job has finished."""
    jobs = jobs_for(preset, smoke)
    runs, data = finished_status(jobs, store, preset=preset, log=log)
    if not runs:
        return None
    order = {j["key"]: i for i, j in enumerate(jobs)}
    runs = sorted(runs, key=lambda r: order[r["key"]])
    results = [{**r["result"], "checkpoint": r["config"]["checkpoint"]} for r in runs]
    data["results"] = [{"model": r["model"], "measurements": r["measurements"]} for r in results]
    config = {"preset": preset, "smoke": smoke, "sections": list(SECTIONS), "runner": RUNNER}
    return experiment_named(EXPERIMENT).save_bundle(preset, data, config, _tables(results), smoke=smoke, log=log)


def _checkpoint_main(argv: list[str]) -> int:
    """``--checkpoint PATH --name X [--preset P] [--device D]``: :func:`check_checkpoint` on any checkpoint, written
    to ``results/ch4_model_checks_<X>_<P>.json`` (a researcher's bundle, not a run-store one: its table ``models`` and
    the measurements in ``data.results``, as the experiment's; the statuses, judged now, are printed)."""
    p = argparse.ArgumentParser(
        prog=runner_command(EXPERIMENT),
        description="Judge the claims of §4.1–§4.4 on any Chapter 4 checkpoint (the declared models: "
        f"{command_line(EXPERIMENT, 'ci')}).",
    )
    p.add_argument("--checkpoint", required=True, help="a Chapter 4 checkpoint .pt (its JSON sidecar beside it)")
    p.add_argument("--name", required=True, help="the model's name: the bundle is ch4_model_checks_<name>_<preset>")
    p.add_argument("--preset", choices=("ci", "paper"), default="ci", help="the sizes of §4.1–§4.4 to judge at")
    p.add_argument("--device", default="cpu")
    args = p.parse_args(argv)
    if not args.name.replace("_", "").isalnum():
        p.error(f"--name {args.name!r}: a plain name such as 's_wide' (it names the bundle).")
    start = time.perf_counter()
    result = check_checkpoint(Path(args.checkpoint), args.name, args.preset, device=args.device)
    result["checkpoint"] = args.checkpoint
    out = save_bundle(
        f"{EXPERIMENT}_{args.name}_{args.preset}",
        {"model": args.name, "results": [{"model": args.name, "measurements": result["measurements"]}]},
        {"preset": args.preset, "sections": list(SECTIONS), "checkpoint": args.checkpoint},
        command=f"{runner_command(EXPERIMENT)} --checkpoint {args.checkpoint} --name {args.name} "
        f"--preset {args.preset}",
        device=args.device,
        wall_seconds=time.perf_counter() - start,
        tables=_tables([result]),
    )
    judged = judged_claims([result])
    print(f"wrote {out}: " + ", ".join(f"{c} {s}" for c, s in zip(judged.claim_id, judged.status)))
    return 0


@command_provenance()  # one git state for the command, taken before it writes anything
def main(argv=None) -> int:
    """``python -m mamba_recall grid ch4_model_checks --preset P`` under this runner's command
    (:func:`mamba_recall.experiment.grid_command`: the run store's options, the same jobs and bundle); with
    ``--checkpoint PATH --name X``, the claims judged on that checkpoint (:func:`_checkpoint_main`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a.split("=", 1)[0] in ("--checkpoint", "--name") for a in argv):
        return _checkpoint_main(argv)
    return grid_command(argv, name=EXPERIMENT, prog=runner_command(EXPERIMENT), default_preset="ci")


if __name__ == "__main__":
    raise SystemExit(main())
