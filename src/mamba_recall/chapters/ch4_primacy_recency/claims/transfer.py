"""Chapter 4, section 5 (``book/04_primacy_recency/05_transfer``): Table 1, the identified channels ablated on
other long-context tasks (§4.2, downstream tasks), here on synthetic analogues of the paper's LongBench tasks."""

from __future__ import annotations

from dataclasses import replace

from mamba_recall.claims.core import Claim, Control, Measurement, NotRun, Rule, conds
from ._common import RANDOM_FACTOR, _analogues, _evidence, metric_range
from mamba_recall.runners import runner_command

SECTION = "04_primacy_recency/05_transfer"


TRANSFER_NULL = (
    "the random channel sets in the identified set's place (channels with nothing special about them), measured by "
    "the same function"
)


def measure_transfer(table, *, ctx=None, side=None, null: bool = True) -> Measurement:
    """Table 1 on the learned synthetic tasks (base ≥ 50 %): mean relative drop of the identified channels, its
    excess over the random sets' (and over twice theirs), and on which fraction of tasks the identified
    ablation scores below the random one. The null control: the same with the random sets' scores in the identified
    set's place, which a rule must not read as mattering more than random."""
    from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import check_transfer

    if table is None:
        raise NotRun("no long-term channel was identified at τ = p = 0.7, so there is nothing to ablate")
    if null:
        m = measure_transfer(table, ctx=ctx, side=side, null=False)
        swapped = table.assign(**{"long-term": table["random"], "rel. drop long-term": table["rel. drop random"]})
        return replace(
            m, control=Control("null", TRANSFER_NULL, measure_transfer(swapped, ctx=ctx, side=side, null=False))
        )
    b = check_transfer(table)
    n = b["n_learned"]
    t, r = b["mean_rel_drop_targeted"], b["mean_rel_drop_random"]
    rows = "; ".join(
        f"{x['task']} {x['base']:.0f} → {x['long-term']:.0f} vs {x['random']:.0f} ± {x['random sd']:.0f}"
        for x in table.to_dict("records")
    )
    return Measurement(
        {
            "learned_tasks": n,
            "mean_rel_drop_identified": t,
            "excess_over_random": t - r,
            "excess_over_2x_random": t - RANDOM_FACTOR * max(r, 0.0),
            "worse_fraction": b["worse_on"] / n if n else float("nan"),
        },
        f"mean relative drop {100 * t:.1f} % (identified) vs {100 * r:.1f} % (random) on {b['learned']}; "
        f"identified worse on {b['worse_on']} of {n}; {rows} (%)",
        _evidence(ctx, side, f"{len(table)} synthetic tasks, fixed held-out sets"),
    )


#: The bundle of Table 1 on the edge family (``chapters/ch4_primacy_recency/runners/edge_mix.py``) and the command that makes it.
EDGE_MIX = "ch4_edge_mix"
EDGE_MIX_BUNDLE = f"{EDGE_MIX}_cpu-hours"
EDGE_MIX_COMMAND = f"{runner_command('ch4_edge_mix')} --preset cpu-hours --allow-long"


def check_transfer_family(*, record: bool = True, name: str = EDGE_MIX_BUNDLE, directory=None):
    """``(verdict, bundle)``: 004/Table1 judged on the edge family's fine-tuned seeds (the primary recipe's evidence
    seeds, each fine-tuned on s_mix's mixture: :mod:`mamba_recall.chapters.ch4_primacy_recency.runners.edge_mix`), each seed's stored
    measurement with its swapped null combined by the registry's rule over seeds
    (:func:`mamba_recall.claims.core.check_stored`, each interval clipped to its metric's range:
    :func:`~._common.metric_range`). *Not run*, with the command, while the bundle is absent or holds
    fewer seeds than its jobs (a partial one, ``data.complete`` false; ``bundle`` None then; read by
    :func:`~mamba_recall.results.evidence`); a corrupt bundle raises its :class:`~mamba_recall.results.BundleError`. ``name`` and ``directory``: which bundle is read (by default the
    committed one). Recorded for the scorecard unless ``record=False``."""
    from mamba_recall.results import BundleMissing, evidence
    from mamba_recall.claims.core import check_stored, get, not_run_verdict, record_verdict

    if not name.startswith(f"{EDGE_MIX}_"):
        raise ValueError(f"check_transfer_family: {name!r} is not a bundle of {EDGE_MIX} (<experiment>_<preset>).")
    try:
        # complete=False: a partial bundle (--partial) is read here to say how far it is, and never judged
        bundle = evidence(EDGE_MIX, preset=name[len(EDGE_MIX) + 1 :], directory=directory, complete=False)
    except BundleMissing:
        bundle, why = None, f"the edge family's Table 1 runs are not committed yet (make them: `{EDGE_MIX_COMMAND}`)"
    else:
        data = bundle.data
        runs = sorted(data["records"], key=lambda r: r["seed"])  # each seed's stored record (edge_mix.write_bundle)
        done = f"{data['jobs_finished']} of {data['jobs_total']}"
        why = None if data["complete"] else f"{done} seeds finished (resume: `{EDGE_MIX_COMMAND}`)"
    if why:
        v = not_run_verdict(get("004/Table1"), why)
        if record:
            record_verdict(v)
        return v, None
    names = [f"{r['model']} (fine-tuned {r['base']})" for r in runs]
    stored = [r["measurement"] for r in runs]
    return check_stored("004/Table1", stored, names, record=record, bounds=metric_range), bundle


#: the section's claims as declared (each registered with its quote and setting, as an analogue:
#: :func:`~._common._analogues`)
DECLARED = (
    Claim(
        "004/Table1",
        "zeroing Ā of the recall-identified channels (all layers, all steps) lowers other long-context "
        "tasks much more than zeroing as many random channels",
        "§4.2 (downstream tasks), Table 1",
        "F1 / F1 / F1 / Rouge-L, base → long-term (random): Qasper 27.88 → 20.68 (23.94); MultiFieldQA-en 26.59 → "
        "20.43 (26.08); 2WikiMultihopQA 25.04 → 18.75 (19.76); MultiNews 25.21 → 20.5 (24.84)",
        Rule(
            why=f"on the learned synthetic analogues: the identified channels' mean relative drop positive and ≥ "
            f"{RANDOM_FACTOR:g}× the random sets', and worse than random on ≥ 3/4 of the tasks (the paper: 4/4); "
            "a larger mean drop than random alone is partial",
            reproduced=conds(
                ("mean_rel_drop_identified", ">", 0), ("excess_over_2x_random", ">=", 0), ("worse_fraction", ">=", 0.75)
            ),
            partially=conds(("mean_rel_drop_identified", ">", 0), ("excess_over_random", ">", 0)),
            testable=conds(("learned_tasks", ">=", 3)),
            untestable_why="the model learned fewer than 3 of the 4 tasks (base ≥ 50 %)",
            trained=True,
        ),
        measure_transfer,
        SECTION,
    ),
)

#: the paper's sentence each claim tests, verbatim (pieces of one passage joined with " … " where the text file breaks a
#: line or a sentence runs on; tests/claims/test_claims.py checks every piece against the paper's text)
QUOTE = {
    "004/Table1": "As shown in Table 1, these interventions cause a substantially larger drop in long-context "
    "performance than random ablations, underscoring the channels’ importance for handling information over long "
    "contexts.",
}

#: where a claim's setting differs from the chapter's S-model (:data:`~._common._S_MODEL`) in more than that
SETTING = {
    "004/Table1": "the paper ablates pretrained Falcon Mamba 7B on four LongBench tasks (natural documents); here the "
    "chapter's small Mamba-1 LMs (the edge family's primary recipe, 3 seeds), each fine-tuned on the recall task mixed "
    "with four synthetic long-context analogues of those tasks, are ablated on the analogues: different models and "
    "different tasks in kind",
}

CLAIMS = _analogues(DECLARED, QUOTE, SETTING)
