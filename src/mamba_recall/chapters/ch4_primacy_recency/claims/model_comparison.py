"""Chapter 4, section 7 (``book/04_primacy_recency/07_model_comparison``) and every section's verdicts on the edge
family (3 seeds per recipe): a claim judged over the seeds of one recipe from the measurements its checks job stored
(:func:`check_family`, called by each section's notebook), and §4.7's table of every claim on every recipe
(:func:`family_table`). The section declares no claim of its own."""

from __future__ import annotations

from .mamba2_heads import MAMBA2_CLAIMS
from mamba_recall.runners import runner_command


EDGE_CHECKS = f"{runner_command('ch4_edge')} --preset cpu-hours --allow-long --checks"


def stored_measurement(claim_id: str, run: dict) -> dict:
    """The measurement record of ``claim_id`` on one checked seed of the edge family, as its checks job stored it
    (with its null control, the same measurement on the model's untrained twin). A record from before the checks
    measured the null is not judged: *not run*, with the command that re-measures it."""
    rec = run["measurements"][claim_id]
    if "not_run" in rec:
        return rec
    if not rec.get("control"):
        return {
            "not_run": "the stored measurement has no null control (the same measurement on the untrained twin): "
            "re-run the edge family's checks (`" + EDGE_CHECKS + "`)"
        }
    return _derived(claim_id, rec)


def _derive_values(claim_id: str, m: dict) -> dict:
    """The numbers a claim's revised rule reads that a stored measurement record predates, from what it stored."""
    from .serial_recall import RELATION_NEEDED, ends_from_shown, recency_from_shown

    v = m["values"]
    if claim_id == "004/Sec4.4-recency" and "recency_cells_fraction" not in v:
        return recency_from_shown(m["shown"])
    if claim_id == "004/AppF-ushape" and "recency_longest" not in v:
        return ends_from_shown(m["shown"])
    if claim_id == "004/Sec4.1-relations" and "relation_needed" not in v:
        return {"relation_needed": RELATION_NEEDED}
    return {}


def _derived(claim_id: str, rec: dict) -> dict:
    """``rec`` (a stored measurement record and its control) with :func:`_derive_values` filled in (a copy)."""
    extra = _derive_values(claim_id, rec)
    if not extra:
        return rec
    out = {**rec, "values": {**rec["values"], **extra}}
    ctl = rec.get("control")
    if ctl:
        cm = ctl["measurement"]
        out["control"] = {**ctl, "measurement": {**cm, "values": {**cm["values"], **_derive_values(claim_id, cm)}}}
    return out


def check_family(claim_id: str, family, recipe: str | None = None, *, record: bool = True):
    """The verdict of ``claim_id`` on the committed edge family (:class:`mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy.EdgeFamily`):
    each seed's stored measurement (made at that model's pressure length L_p by the family's checks runner),
    combined over the seeds ``recipe`` is judged on (``EdgeFamily.evidence_runs``:
    :func:`mamba_recall.chapters.ch4_primacy_recency.pipelines.edge_seeds.evidence_seeds`) and judged by the declared rule
    (:func:`mamba_recall.claims.core.check_stored`, each interval clipped to its metric's range:
    :func:`~._common.metric_range`). ``recipe`` defaults to the family's primary recipe (Mamba-1) for
    a claim of §4.1–§4.4 and to the Mamba-2 recipe for a claim of App. F (:data:`MAMBA2_CLAIMS`); with fewer than 3
    checked seeds the rule caps the verdict (a trained-model claim needs 3). Recorded for the scorecard unless
    ``record=False``; *not run* with the reason when the family or the recipe's models are not committed, or no
    Mamba-1 recipe converged on every seed. Each seed's record carries its null control, the same measurement on the
    model's untrained twin (:func:`stored_measurement`)."""
    from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import (
        EDGE_CHECKS_COMMAND,
        EDGE_COMMAND,
        MAMBA2_RECIPE,
    )
    from mamba_recall.claims.core import check_stored, get, not_run_verdict, record_verdict
    from ._common import metric_range

    mamba2 = claim_id in MAMBA2_CLAIMS
    recipe = recipe or (MAMBA2_RECIPE if mamba2 else family.primary)
    # the seeds the recipe is judged on (analysis.edge_seeds.evidence_seeds: all of its seeds, or with reserve seeds
    # the first 3 in seed order past the edge gate)
    seeds = [] if family.missing or recipe is None else family.evidence_runs(recipe)
    if not seeds:
        train = EDGE_COMMAND.format(preset=family.preset)
        checks = EDGE_CHECKS_COMMAND.format(preset=family.preset) + f" --only {recipe}"
        why = (
            f"the edge family is not committed yet: {family.missing}"
            if family.missing
            else "no recipe of the edge family has 3 seeds past its convergence gate yet (" + family.status() + "); a "
            "verdict needs 3 seeds of one recipe (see the model cards)"
            if recipe is None
            else f"no checked seed of the edge family's recipe {recipe} counts yet "
            f"({family.evidence(recipe).summary()})"
            if family.seeds_of(recipe)
            else f"the edge family's recipe {recipe} has no checked model committed yet (train it: `{train}`, then "
            f"measure it at each model's L_p: `{checks}`)"
        )
        v = not_run_verdict(get(claim_id), why)
        if record:
            record_verdict(v)
        return v
    measured = list(seeds[0]["measurements"])
    if claim_id not in measured:
        raise ValueError(
            f"{claim_id} is not measured on the edge family's recipe {recipe} (its checks measured {measured}): "
            f"judge App. F's claims {list(MAMBA2_CLAIMS)} on the Mamba-2 recipe and the others on a Mamba-1 recipe "
            "(recipe=None picks the right one)."
        )
    names = [
        f"{recipe} seed {r['seed']} (L_p {'not reached' if r['L_p'] is None else r['L_p']}, tested at L = {r['at']})"
        for r in seeds
    ]
    stored = [stored_measurement(claim_id, r) for r in seeds]
    return check_stored(claim_id, stored, names, record=record, bounds=metric_range)


def family_table(family):
    """Claim × recipe: the verdict (mark and status) of every claim of the edge family's checks on each recipe's seeds,
    re-judged now by the declared rules (nothing recorded); "—" where a recipe does not measure the claim (App. F's
    claims on the Mamba-2 recipe only, the others on the Mamba-1 recipes); empty when the family is not committed."""
    import pandas as pd

    from mamba_recall.claims.core import MARK

    recipes = sorted({r["recipe"] for r in family.runs})
    if not recipes:
        return pd.DataFrame()
    measured = {r: list(family.seeds_of(r)[0]["measurements"]) for r in recipes}
    ids = list(dict.fromkeys(cid for r in recipes for cid in measured[r]))  # in the first recipe's order, then new
    rows = {
        cid: {
            f"{r} ({len(family.evidence_runs(r))} seeds)": (lambda v: f"{MARK[v.status]} {v.status}")(
                check_family(cid, family, r, record=False)
            )
            if cid in measured[r]
            else "—"
            for r in recipes
        }
        for cid in ids
    }
    return pd.DataFrame(rows).T
