"""Chapter 2, section 2.3 (``book/02_hashing_scaling/03_mechanism.ipynb``): the mechanistic reading of paper 002
§3.2 — Eq. 10 on the designed Theorem 2 weights, and Figs. 2–5 (the invariant operators, key–value selectivity, the
state as a hash table, implicit attention, Conv1D copy-and-shift) on a model trained in the notebook, each with its
null control: the same model at initialisation (:func:`_with_mech_null`).

Each measurement sits above the claim it measures; the package (``ch2/__init__.py``) registers the claims.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from mamba_recall.claims.core import Claim, Control, Evidence, Measurement, Revision, Rule, conds
from ._common import NEAR_PERFECT

#: this module's book section (its claims are judged on that page)
SECTION = "02_hashing_scaling/03_mechanism"

#: This section's claims, each declared below its measurement; ``ch2/__init__.py`` registers them with their
#: quotes, in the chapter's order (:data:`mamba_recall.chapters.ch2_hashing_scaling.claims.ORDER`).
CLAIMS: list[Claim] = []


# ----------------------------------------------------------------------------------- §3.2, Eq. 10: the designed weights
def measure_eq10(V: int = 32, D: int = 16, N: int = 8, seed: int = 0) -> Measurement:
    """Eq. 10 on the designed Thm 2 weights, read as the sentence around it states the layout (G_kq "attends only to
    the query x_t and the stored key x_(τ−1)", G_vv "only to the stored values x_τ"; App. C.1): the share of ‖G_kq‖²
    in the (x_(τ−1) rows, x_t columns) block and of ‖G_vv‖² (V × 2V by Eqs. 8–9) in its x_τ half. Eq. 10 displays both
    operators transposed (G_vv as a 2V × V column (0; I_V), G_kq's identity in the (x_τ, x_(t−1)) block); the shares
    in those literal display positions are shown beside, not judged."""
    from mamba_recall.chapters.ch2_hashing_scaling.pipelines.hashing import invariant_operators
    from mamba_recall.theory.hashing_circuit import thm2_weights

    ops = invariant_operators(thm2_weights(V, D, N, seed))
    G, Gv = ops["G_kq"], ops["G_vv"]
    tot, totv = float((G**2).sum()), float((Gv**2).sum())
    kq, vv = float((G[:V, V:] ** 2).sum()) / tot, float((Gv[:, V:] ** 2).sum()) / totv
    kq_display = float((G[V:, :V] ** 2).sum()) / tot
    return Measurement(
        {"kq_block_share": kq, "vv_half_share": vv, "kq_display_share": kq_display},
        f"‖G_kq‖² share in (x_(τ−1), x_t) {kq:.3f}; ‖G_vv‖² (shape {tuple(Gv.shape)}) share in the x_τ half "
        f"{vv:.3f}; read literally at Eq. 10's displayed position (x_τ, x_(t−1)), G_kq holds {kq_display:.3f}",
        Evidence.exact(f"designed Thm 2 weights, V = {V}, D = {D}, N = {N}"),
        note="Eq. 10 displays both operators transposed relative to their definitions in Eqs. 8–9: G_vv = "
        "Π_v,out Π_v,in is V × 2V, so its designed value is the block row (0 | I_V), printed as the column (0; I_V); "
        "G_kq's identity sits in the (x_(τ−1), x_t) block, printed in (x_τ, x_(t−1)). The text right after Eq. 10 "
        "and App. C.1 state the layout measured here. A display convention used consistently for both operators: "
        "a note, not an erratum",
    )


CLAIMS += [
    Claim(
        "002/Eq10",
        "the designed circuit's invariant operators have the block structure of Eq. 10: G_kq's identity couples the "
        "stored key x_(τ−1) with the query x_t, and G_vv reads only the stored value x_τ",
        "§3.2, Eq. 10 (with Eqs. 8–9 and App. C.1)",
        "G_vv ≈ (0; I_V), G_kq ≈ (0 0; I_V 0) with ξ = (x_(t−1); x_t), both displayed transposed relative to Eqs. 8–9",
        Rule(
            why="for designed weights the block structure is exact, so all of ‖G_kq‖² must sit in the key–query "
            "block and all of ‖G_vv‖² in the x_τ half, as the sentence after Eq. 10 states them; Eq. 10 displays "
            "both operators transposed (a consistent display convention, recorded as a note, not scored)",
            reproduced=conds(("kq_block_share", ">=", 0.999), ("vv_half_share", ">=", 0.999)),
        ),
        measure_eq10,
        SECTION,
        revisions=(
            Revision(
                date="2026-12-04",
                reason="Open review (referee-C; review of d645e6c, issue 51): Eq. 10 prints G_vv and G_kq both "
                "transposed relative to Eqs. 8–9, a display convention used consistently, which is a note, not an "
                "erratum; the rule now tests both operators' layout as the text states it.",
                rule_before="reproduced if printed_layout_share ≥ 0.999; erratum confirmed if that fails while "
                "corrected_layout_share ≥ 0.999; otherwise not reproduced",
                status_before="erratum confirmed",
            ),
        ),
    ),
]


# -------------------------------------------- Figs. 2-5: a trained model, with the same model at initialisation as null
MECH_NULL = "the same linear Mamba at initialisation (the same seed), probed on the same sequences"


def _with_mech_null(fn):
    """The §3.2 mechanism measurement ``measured(d, ctx, acc, steps, n_probe, null=None)`` of ``fn(d) -> (values,
    text)``, which reads the probes ``d`` of a model trained ``steps`` steps (held-out accuracy ``acc``, kept beside
    the values as ``"accuracy"``, the gate of :func:`_mech_rule`) on ``n_probe`` sequences. Its null control: given
    ``null=(d0, acc0)``, the probes ``d0`` and held-out accuracy ``acc0`` of the same model at initialisation
    (:func:`mamba_recall.chapters.ch2_hashing_scaling.pipelines.hashing.untrained_probes`), measured the same way and
    judged beside it."""

    def measure(d: dict, ctx, acc: float, steps: int, n_probe: int) -> Measurement:
        values, text = fn(d)
        ev = Evidence.live(
            ctx,
            f"a model trained {steps} steps (held-out accuracy {acc:.3f}), {n_probe} probe sequences",
            seeds=1,
            source="trained in the notebook",
        )
        return Measurement({**values, "accuracy": acc}, text, ev)

    @functools.wraps(fn)
    def measured(d: dict, ctx, acc: float, steps: int, n_probe: int, null: tuple | None = None) -> Measurement:
        m = measure(d, ctx, acc, steps, n_probe)
        if null is None:
            return m
        d0, acc0 = null
        return replace(m, control=Control("null", MECH_NULL, measure(d0, ctx, acc0, 0, n_probe)))

    del measured.__wrapped__  # its signature (with ``null``) is the one check() binds the notebook's inputs to
    return measured


_MECH_WHY = (
    "; testable only on a model that recalls (held-out accuracy ≥ 0.9), added in the claims audit: without "
    "it a model that never learned would read 'not reproduced'"
)
_MECH_TESTABLE = conds(("accuracy", ">=", NEAR_PERFECT))
_MECH_UNTESTABLE = (
    "the probed model does not recall (held-out accuracy below 0.9, the near-perfect level): the paper "
    "reads these structures off trained models that solve the task, so an untrained one can show nothing"
)


def _mech_rule(why: str, *reproduced: tuple) -> Rule:
    """The rule of a §3.2 mechanism claim on a trained model: reproduced when every condition of ``reproduced``
    holds, testable only when the probed model recalls (held-out accuracy ≥ :data:`NEAR_PERFECT`)."""
    return Rule(
        why=why + _MECH_WHY,
        reproduced=conds(*reproduced),
        testable=_MECH_TESTABLE,
        untestable_why=_MECH_UNTESTABLE,
        trained=True,
    )


@_with_mech_null
def measure_fig2(d: dict) -> tuple[dict, str]:
    return (
        {"kq_block_share": d["kq_block_share"], "vv_half_share": d["vv_half_share"]},
        f"‖G_kq‖² in the (x_(τ−1), x_t) block {d['kq_block_share']:.3f}; ‖G_vv‖² in the x_τ half "
        f"{d['vv_half_share']:.3f}",
    )


CLAIMS += [
    Claim(
        "002/Fig2",
        "in a trained linear Mamba G_kq is non-zero only on the (stored key x_(τ−1), query x_t) block "
        "and G_vv only on the stored value x_τ; all other entries ≈ 0",
        "§3.2, Eq. 10, Fig. 2; App. C.1, Fig. 9",
        'no number given ("satisfy this structure almost precisely … all other matrix entries are ≈ 0")',
        _mech_rule(
            "≈ 0 elsewhere read as at least 90 % of the Frobenius energy in the predicted block",
            ("kq_block_share", ">=", 0.9),
            ("vv_half_share", ">=", 0.9),
        ),
        measure_fig2,
        SECTION,
    ),
]


@_with_mech_null
def measure_selectivity(d: dict) -> tuple[dict, str]:
    return (
        {k: d[k] for k in ("kk_share", "vv_share", "key_diag_hit", "value_diag_hit")},
        f"on the trained columns: key×key share {d['kk_share']:.3f}, value×value share "
        f"{d['vv_share']:.3f} (all columns, untrained ones included: {d['kk_share_all_columns']:.3f} / "
        f"{d['vv_share_all_columns']:.3f}); diagonal argmax hits keys {d['key_diag_hit']:.2f}, values "
        f"{d['value_diag_hit']:.2f}",
    )


CLAIMS += [
    Claim(
        "002/Fig2-selectivity",
        "the trained embeddings are key–value selective: inside the predicted blocks the "
        "key × key (value × value) part dominates, with a diagonal (E_k ⊥ E_v)",
        '§3.2 ("more complex patterns than ≈ I_V … responsible for key and value selectivity"); App. D, Fig. 2',
        "no number given",
        _mech_rule(
            "dominates = at least 80 % of the energy of the columns the loss trains, and a diagonal: the column "
            "argmax on the diagonal for 90 % of keys and values",
            ("kk_share", ">=", 0.8),
            ("vv_share", ">=", 0.8),
            ("key_diag_hit", ">=", 0.9),
            ("value_diag_hit", ">=", 0.9),
        ),
        measure_selectivity,
        SECTION,
    ),
]


@_with_mech_null
def measure_fig3(d: dict) -> tuple[dict, str]:
    return (
        {"fact_hit": d["d3_fact_hit"], "auroc": d["d3_auroc"]},
        f"per-fact argmax over values at the fact's value {d['d3_fact_hit']:.3f}; AUROC of the fact "
        f"entries in the values × keys block {d['d3_auroc']:.3f} (Pearson r over the whole V × V table, "
        f"mostly its zero background: {d['d3_corr_full_table']:.3f})",
    )


CLAIMS += [
    Claim(
        "002/Fig3",
        "projected back to vocabulary space the trained state is the ideal key → value table, H''_t ≈ H_t",
        "§3.2, Eq. 13, Fig. 3; App. C.3",
        "no number given (visual)",
        _mech_rule(
            "H''_t ≈ H_t on the values × keys block the figure draws: each fact's column peaks at its value "
            "(95 % of facts) and the fact entries outrank the rest of the block (AUROC ≥ 0.95)",
            ("fact_hit", ">=", 0.95),
            ("auroc", ">=", 0.95),
        ),
        measure_fig3,
        SECTION,
    ),
]


@_with_mech_null
def measure_fig4(d: dict) -> tuple[dict, str]:
    return (
        {"peak_hit": d["d4_hit"]},
        f"{d['d4_hit']:.3f} of query rows peak at the matching key + 1",
    )


CLAIMS += [
    Claim(
        "002/Fig4",
        "the implicit attention B_τ·C_t of a trained model approximates the ideal map: each query "
        "attends to the position after its key",
        "§3.2, Fig. 4",
        "no number given (visual)",
        _mech_rule(
            "approximates the ideal map = the row maximum sits where the ideal map's single 1 is, for 95 % of "
            "query rows",
            ("peak_hit", ">=", 0.95),
        ),
        measure_fig4,
        SECTION,
    ),
]


@_with_mech_null
def measure_fig5(d: dict) -> tuple[dict, str]:
    return (
        {"value_copy": d["d5_value_copy"], "key_shift": d["d5_key_shift"]},
        f"values copied (main diagonal) {d['d5_value_copy']:.3f}; keys shifted (τ = t + 1) {d['d5_key_shift']:.3f}",
    )


CLAIMS += [
    Claim(
        "002/Fig5",
        "Conv1D copies values (main diagonal) and shifts keys (second diagonal)",
        "§3.2, Fig. 5",
        'no number given ("dominant main diagonal … dominant second diagonal")',
        _mech_rule(
            "dominant diagonal = the argmax on that diagonal in 90 % of value (key) positions",
            ("value_copy", ">=", 0.9),
            ("key_shift", ">=", 0.9),
        ),
        measure_fig5,
        SECTION,
    ),
]


def check_mechanism(claim_id: str, runs: list, ctx, n_probe: int, *, record: bool = True):
    """Judge the §3.2 claim ``claim_id`` over the seeds of ``runs`` (the ``MechRun`` of
    :func:`~mamba_recall.chapters.ch2_hashing_scaling.pipelines.mechanism.train_seeds`, each with its null control),
    combined by :func:`mamba_recall.claims.check_seeds`; recorded for the scorecard unless ``record=False``."""
    from mamba_recall.claims.core import check_seeds

    inputs = [(r.d, ctx, r.acc, r.steps, n_probe, r.null) for r in runs]
    return check_seeds(claim_id, inputs, [f"seed {r.seed}" for r in runs], record=record)
