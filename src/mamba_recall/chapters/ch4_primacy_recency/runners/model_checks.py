r"""Judge Chapter 4's claims on another S-model and keep the verdicts as a result bundle.

The claims of paper 004 and their rules are declared once, in :mod:`mamba_recall.chapters.ch4_primacy_recency.claims`; the chapter's
notebooks (§4.1–§4.4) compute their inputs on the committed ``s_small`` and call the registry. This runner
computes the same inputs with the same library calls on any Chapter 4 checkpoint, judges every claim of
§4.1–§4.4 with the registry's measurement functions and rules (nothing is recorded for the book's scorecard),
and writes the verdicts to ``results/ch4_checks_<model>_<preset>.json`` (table ``claims``: claim id, status, our
numbers, the reason where not testable or capped). Section 4.7 of the book compares the models from these
bundles. On a Mamba-2 model the claims are App. F's (:func:`claim_inputs_m2`: the U, the long-term heads of Eq. 9
and their first-triple ablation, Fig. 13), measured by :func:`~mamba_recall.chapters.ch4_primacy_recency.pipelines.mamba2_heads.mamba2_head_tests`
as notebook 4.6 measures them; the edge family's checks runner (:mod:`.edge`) makes them on its Mamba-2 recipe at
each model's pressure length.

Run::

    python -m mamba_recall.chapters.ch4_primacy_recency.runners.model_checks --model s_small_seed1 --preset ci
    python -m mamba_recall.chapters.ch4_primacy_recency.runners.model_checks --model s_small --preset ci
    python -m mamba_recall.chapters.ch4_primacy_recency.runners.model_checks --checkpoint path/to/ch4_x.pt --name x   # any .pt
"""

from __future__ import annotations

import argparse
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
from mamba_recall.paths import REPO_ROOT
from mamba_recall.presets import experiment
from mamba_recall.results import command_provenance, save_bundle
from mamba_recall.runners import runner_command

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


def judge_model(checkpoint: Path, preset: str = "ci", *, device: str = "cpu", log=print) -> tuple[list, dict]:
    """Load ``checkpoint`` and judge every claim of §4.1–§4.4 on it → (verdicts, the checkpoint's sidecar)."""
    from mamba_recall.claims import check

    model, vocab, side = load_checkpoint(Path(checkpoint), device=device)  # hash-checked
    source = Path(checkpoint).resolve()
    side = {"source": str(source.relative_to(REPO_ROOT) if source.is_relative_to(REPO_ROOT) else source), **side}
    ctx = SimpleNamespace(preset=preset, device=torch.device(device))
    start = time.perf_counter()
    inputs = claim_inputs(model, vocab, preset, device)
    log(f"inputs computed in {time.perf_counter() - start:.0f} s")
    verdicts = [check(cid, *args, ctx=ctx, side=side, record=False) for cid, args in inputs.items()]
    return verdicts, side


@command_provenance()  # one git state for the command, taken before it writes anything
def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--model",
        default=None,
        help="a committed S-model (results/checkpoints/ch4_train_<model>_ci.pt); "
        "default: every model of the preset's ch4_model_checks list",
    )
    p.add_argument("--checkpoint", default=None, help="or any Chapter 4 checkpoint .pt (then give --name)")
    p.add_argument("--name", default=None, help="bundle name part for --checkpoint")
    p.add_argument("--preset", choices=("ci", "paper"), default="ci")
    p.add_argument("--device", default="cpu")
    args = p.parse_args(argv)
    if args.model is not None and args.checkpoint is not None:
        p.error("give one of --model NAME or --checkpoint PATH (with --name), not both.")
    if args.model is None and args.checkpoint is None:
        for model in experiment("ch4_model_checks", args.preset)["models"]:
            main(["--model", model, "--preset", args.preset, "--device", args.device])
        return
    if args.checkpoint and not args.name:
        p.error("--checkpoint needs --name (the bundle is results/ch4_checks_<name>_<preset>.json).")
    path = checkpoint_path(args.model) if args.model else Path(args.checkpoint)
    name = args.model or args.name
    start = time.perf_counter()
    verdicts, side = judge_model(path, args.preset, device=args.device)
    table = pd.DataFrame(
        [{"claim_id": v.claim_id, "status": v.status, "ours": v.ours, "reason": v.reason} for v in verdicts]
    )
    out = save_bundle(
        f"ch4_checks_{name}_{args.preset}",
        {
            "model": name,
            "model_card": A.model_card(side),
            "converged": A.converged(side),
            "checkpoint_sha256": side.get("sha256"),
        },
        {"preset": args.preset, "sections": list(SECTIONS), "checkpoint": str(path.name)},
        command=f"{runner_command('ch4_model_checks')} --model {name} --preset {args.preset}"
        if args.model
        else f"{runner_command('ch4_model_checks')} --checkpoint "
        f"{args.checkpoint} --name {name} --preset {args.preset}",
        device=args.device,
        wall_seconds=time.perf_counter() - start,
        tables={"claims": table},
    )
    print(f"wrote {out}: " + ", ".join(f"{r.claim_id} {r.status}" for r in table.itertuples()))


if __name__ == "__main__":
    main()
