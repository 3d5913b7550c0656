"""Chapter 1, section 5 (``book/01_gradient_dynamics/05_table1``): App. A's Table 1, the latest-value MQAR
across architectures. Each row is judged on the committed bundle of the notebook's preset, or over the cpu-hours
seeds (:func:`check_table1`); the rows are each other's controls (a chance-level table, the RoPE Transformer)."""

from __future__ import annotations

from dataclasses import replace

from mamba_recall.claims.core import Claim, Control, Evidence, Measurement, NotRun, Revision, Rule, conds
from ._common import DATE, RANGES, TRAINED_TEXT, chance_level, load_seeds

SECTION = "01_gradient_dynamics/05_table1"


def _origin_evidence(origin, sample: str) -> Evidence:
    """A committed bundle (its provenance) or a notebook context (a live run)."""
    if hasattr(origin, "provenance"):
        return Evidence.from_bundle(origin, sample, seeds=1)
    return Evidence.live(origin, sample, seeds=1)


def _acc(table, model):
    return table[table.model == model].set_index(["T", "kappa"]).accuracy


def _cells(series):
    return ", ".join(f"T={t} κ={k}: {100 * a:.0f}" for (t, k), a in series.items())


def _vocab(origin) -> int | None:
    """|V| of the Table 1 runs ``origin`` (a bundle's recorded sizes), or None (a live run's context)."""
    return ((getattr(origin, "config", None) or {}).get("sizes") or {}).get("vocab_size")


def _at_chance(table, origin):
    """``table`` with every cell's accuracy at the generator's chance level (one of |V| − κ values guessed
    uniformly, :func:`chance_level`), or None where |V| is not recorded."""
    V = _vocab(origin)
    if V is None:
        return None
    chance = [chance_level({"config": {"vocab_size": V, "num_keys": int(k)}}) for k in table.kappa]
    return table.assign(accuracy=chance)


CHANCE_TABLE = "every model at the generator's chance level in every cell (one of |V| − κ values guessed uniformly)"
SOLVER_TABLE = (
    "the 2-layer Transformer with convolution and RoPE of the same runs (a Transformer that does not struggle)"
)


#: Table 1's 'solves' line (the printed Mamba cells are all ≥ 99 %)
SOLVES_TABLE1 = 0.99


def _capped_short(table, model: str, bar: float) -> list:
    """The (T, κ) cells of ``model`` whose run stopped on its step cap (``stopped == "steps"``) below ``bar``: its
    accuracy is a lower bound on what the recipe reaches, not a failure (empty where ``stopped`` is not recorded)."""
    if "stopped" not in table:
        return []
    rows = table[(table.model == model) & (table.stopped == "steps") & (table.accuracy < bar)]
    return sorted({(int(t), int(k)) for t, k in zip(rows["T"], rows.kappa)})


def _cell_names(table, model: str, cells, prefix: str = "") -> list[str]:
    """``"T=128 κ=4"`` per capped cell of ``model``, with the run's rise over its last 2,000 steps where its training
    curve was kept (the reruns to the target or the cap: ``last_2000_gain``; above 0.002 the run was still learning,
    :func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.table1.stop_reason`)."""
    out = []
    for t, k in cells:
        name = f"{prefix}T={t} κ={k}"
        if "last_2000_gain" in table:
            gain = table[(table.model == model) & (table["T"] == t) & (table.kappa == k)].last_2000_gain.dropna()
            if len(gain):
                name += f" (training accuracy still rising, {float(gain.iloc[0]):+.5f} over its last 2,000 steps, above 0.002)"
        out.append(name)
    return out


def measure_table1_mamba(table, origin, null: bool = True) -> Measurement:
    """Row 1: the smallest held-out accuracy of the Mamba cells, undecided (NaN) where a cell below 99 % stopped on
    its step cap (:func:`_capped_short`: the run had not finished learning, so it neither solves nor fails); the
    κ = 1 cells' smallest accuracy is shown. The null control: the same on a table at the generator's chance level."""
    m = _acc(table, "mamba")
    capped = _capped_short(table, "mamba", SOLVES_TABLE1)
    cap = (
        "; stopped on the step cap below 99 %: " + ", ".join(_cell_names(table, "mamba", capped)) + " (undecided)"
        if capped
        else ""
    )
    out = Measurement(
        {
            "min_accuracy": float("nan") if capped else float(m.min()),
            "min_accuracy_kappa1": float(m.xs(1, level="kappa").min()),
        },
        f"1-layer Mamba: {_cells(m)} %{cap}",
        _origin_evidence(origin, f"{len(m)} cells, held-out query accuracy"),
    )
    chance = _at_chance(table, origin) if null else None
    if chance is None:
        return out
    chance = chance.drop(columns=["stopped"], errors="ignore")  # the null's cells are read as finished
    return replace(out, control=Control("null", CHANCE_TABLE, measure_table1_mamba(chance, origin, null=False)))


def measure_table1_no_pe(table, origin, model: str, null: bool = True) -> Measurement:
    """Rows 2–3: the model's best cell and its smallest gap to Mamba; the null control: the same on the RoPE
    Transformer of the same runs, which must not read as struggling. Where the model's rows carry a ``conv_width``
    (the size-matched row 3, :func:`check_table1`), every width is a row of its own and the numbers are the worst
    over them (the best cell, the smallest gap)."""
    rows = table[table.model == model]
    if rows.empty:
        raise NotRun(f"no {model} cell in these runs")
    widths = sorted(rows.conv_width.dropna().unique()) if "conv_width" in rows else []
    parts, best, smallest, n = [], -1.0, 2.0, 0
    for w in widths or [None]:
        sub = table if w is None else table[(table.model != model) | (table.conv_width == w)]
        tf, m = _acc(sub, model), _acc(sub, "mamba")
        gap = (m - tf).dropna()
        best, smallest, n = max(best, float(tf.max())), min(smallest, float(gap.min())), n + len(tf)
        parts.append(f"{'' if w is None else f'conv {int(w)}: '}{_cells(tf)} %")
    m = _acc(table, "mamba")
    out = Measurement(
        {"max_accuracy": best, "min_gap_to_mamba": smallest},
        f"{'; '.join(parts)} (Mamba {_cells(m)} %; smallest gap {100 * smallest:.0f} points)",
        _origin_evidence(origin, f"{n} cells, held-out query accuracy"),
    )
    if not null or _acc(table, "tf2_conv_rope").empty:
        return out
    solver = measure_table1_no_pe(table, origin, "tf2_conv_rope", null=False)
    return replace(out, control=Control("null", SOLVER_TABLE, solver))


#: App. A's "similar model sizes": the Transformer has at most this many times the Mamba's parameters
SIMILAR_SIZE = 2.0


def _size_ratio(table, model: str) -> float:
    """``model``'s largest parameter count over the Mamba's largest, in ``table`` (NaN where ``params`` is not
    recorded)."""
    if "params" not in table:
        return float("nan")
    return float(table[table.model == model].params.max()) / float(table[table.model == "mamba"].params.max())


#: row 4's 'solves' bar (the RoPE model ≥ 95 % everywhere: the rule's min_accuracy)
ROPE_SOLVES = 0.95


def measure_table1_rope(table, origin, null: bool = True) -> Measurement:
    """Row 4: the RoPE Transformer's largest difference to Mamba and its smallest accuracy, read only at App. A's
    "similar model sizes" (at most :data:`SIMILAR_SIZE` × the Mamba's parameters): a larger RoPE model's numbers are
    shown but undecided (NaN). As row 1 (:func:`measure_table1_mamba`), a cell below its model's bar (the RoPE
    model's :data:`ROPE_SOLVES`, the Mamba's :data:`SOLVES_TABLE1`) whose run stopped on its step cap had not
    finished learning: both numbers are then undecided (NaN), and the record names the cells. The null control: the
    same on a table at the generator's chance level (where the two are 'similar' without either solving), read at
    any size, its cells read as finished."""
    r, m = _acc(table, "tf2_conv_rope"), _acc(table, "mamba")
    diff = (r - m).abs().dropna()
    ratio = _size_ratio(table, "tf2_conv_rope")
    similar = not ratio > SIMILAR_SIZE  # NaN (no sizes recorded): read as stated
    capped = _cell_names(table, "tf2_conv_rope", _capped_short(table, "tf2_conv_rope", ROPE_SOLVES), "RoPE ")
    capped += _cell_names(table, "mamba", _capped_short(table, "mamba", SOLVES_TABLE1), "Mamba ")
    size = (
        ""
        if similar
        else f"; the RoPE model has {ratio:.0f}× the Mamba's parameters, not App. A's 'similar model sizes' (≤ "
        f"{SIMILAR_SIZE:g}×): undecided"
    )
    cap = f"; stopped on the step cap below its bar: {', '.join(capped)} (undecided)" if capped else ""
    decided = similar and not capped
    out = Measurement(
        {
            "max_diff_to_mamba": float(diff.max()) if decided else float("nan"),
            "min_accuracy": float(r.min()) if decided else float("nan"),
        },
        f"{_cells(r)} % (Mamba {_cells(m)} %; largest difference {100 * diff.max():.0f} points){size}{cap}",
        _origin_evidence(origin, f"{len(r)} cells, held-out query accuracy"),
    )
    chance = _at_chance(table, origin) if null else None
    if chance is None:
        return out
    chance = chance.drop(columns=["params", "stopped"], errors="ignore")  # the null is read at any size, finished
    return replace(out, control=Control("null", CHANCE_TABLE, measure_table1_rope(chance, origin, null=False)))


#: the Table 1 claim read on the size-matched runs when they are committed (issue 31: "similar model sizes")
MATCHED_CLAIM = "000/Table1-tf1-conv"
#: row 4 read on the size-matched RoPE Transformer (``ch1_table1_rope``, d_model 8, 2,096 parameters) when committed
ROPE_CLAIM = "000/Table1-rope"
ROPE_BUNDLE = "ch1_table1_rope"
#: row 3's deciding cell (conv width 4, κ = 1) on seeds 3-5, each with the seed's Mamba and size-matched RoPE rows
MORE_SEEDS_BUNDLE = "ch1_table1_seeds"
#: rows 1 and 4's κ = 4 cells (T = 128, seeds 0-2) and row 4's κ = 1 cells on seeds 3-5, each rerun to the target or
#: 8× the step cap (no plateau stop): the Mamba and the size-matched RoPE model
K4_BUNDLE = "ch1_table1_k4"
LONGER_BUNDLES = (K4_BUNDLE, "ch1_table1_seeds_long")


def check_table1(claim_id: str, seeds, table, origin, record: bool = True, matched=None):
    """A Table 1 claim on the cpu-hours bundle ``seeds`` when there is one (each seed's cells measured alone by the
    claim's measurement, then judged through :func:`~mamba_recall.claims.core.check_stored`, each accuracy's interval
    clipped to [0, 1]: :data:`._common.RANGES`), else on ``table`` from
    ``origin`` (one seed: *inconclusive*). ``matched``: the size-matched row-3 bundle (``ch1_table1_matched``);
    with it, row 3's claim (:data:`MATCHED_CLAIM`) reads its Transformers (both conv widths) in place of the
    d_model-32 ones, beside the same seeds' Mamba and RoPE rows, plus seeds 3-5 of its deciding cell where
    ``ch1_table1_seeds`` is committed (:data:`MORE_SEEDS_BUNDLE`). Row 4 (:data:`ROPE_CLAIM`) reads the size-matched
    RoPE Transformer of ``ch1_table1_rope`` in place of the d_model-32 one where that bundle is committed, with its
    κ = 1 cells on seeds 3-5 (``ch1_table1_seeds``). Where the longer reruns are committed (:data:`LONGER_BUNDLES`: the
    cells rerun to the target or 8× the step cap), every row reads its Mamba cells from them, and row 4 its
    size-matched RoPE model's. Every bundle is read beside ``seeds`` only at their preset."""
    import pandas as pd

    from mamba_recall.claims.core import check, check_stored, get, measurement_record

    if seeds is None:
        return check(claim_id, table, origin, record=record)
    runs, read = seeds.tables["rows"], [seeds]
    preset = (seeds.config or {}).get("preset")

    def committed(stem):  # a bundle read beside ``seeds`` only at their preset (a smoke grid reads none of them)
        b = load_seeds(stem, log=lambda *_: None)
        return b if b is not None and b.config.get("preset") == preset else None

    if claim_id == ROPE_CLAIM:
        rope = committed(ROPE_BUNDLE)
        if rope is not None:  # row 4 at similar model sizes, beside the same seeds' Mamba
            runs = pd.concat([runs[runs.model != "tf2_conv_rope"], rope.tables["rows"]], ignore_index=True)
            read.append(rope)
        more = committed(MORE_SEEDS_BUNDLE)
        if rope is not None and more is not None:  # its κ = 1 cells on seeds 3-5 too, each beside its Mamba (referee-P)
            rows = more.tables["rows"]
            runs = pd.concat([runs, rows[rows.model.isin(["mamba", "tf2_conv_rope"])]], ignore_index=True)
            read.append(more)
    if claim_id == MATCHED_CLAIM and matched is not None:
        runs = pd.concat([runs[runs.model != "tf1_conv"], matched.tables["rows"]], ignore_index=True)
        read.append(matched)
        more = committed(MORE_SEEDS_BUNDLE)
        if more is not None:  # seeds 3-5 of the deciding cell, each with its own Mamba and RoPE rows
            runs = pd.concat([runs, more.tables["rows"]], ignore_index=True)
            read.append(more)
    # the cells rerun to the target or 8× the step cap (of these seeds): every row's Mamba, row 4's RoPE model
    swap = {"mamba"} | ({"tf2_conv_rope"} if claim_id == ROPE_CLAIM else set())
    for stem in LONGER_BUNDLES:
        longer = committed(stem)
        if longer is None:
            continue
        rows = longer.tables["rows"]
        rows = rows[rows.seed.isin(set(runs.seed)) & rows.model.isin(swap)]
        if rows.empty:  # none of its cells is read here (referee-P: a bundle cited but not read)
            continue
        key = ["T", "kappa", "seed"]
        old = runs.model.isin(swap) & pd.MultiIndex.from_frame(runs[key]).isin(pd.MultiIndex.from_frame(rows[key]))
        runs = pd.concat([runs[~old], rows], ignore_index=True)
        read.append(longer)
    # the record cites every bundle it reads (referee-J: row 4 named only the one its Mamba rows came from)
    source = "; ".join(Evidence.from_bundle(b, "", seeds=1).source for b in read)  # the manifest splits on ";"
    per_seed = sorted(set(runs.seed))
    measure = get(claim_id).measure

    def stored(s):
        try:
            rec = measurement_record(measure(runs[runs.seed == s].reset_index(drop=True), seeds))
        except NotRun as exc:
            return {"not_run": f"seed {s}: {exc}"}
        rec["evidence"]["source"] = source
        return rec

    records = [stored(s) for s in per_seed]
    names = [f"seed {s}" for s in per_seed]
    return check_stored(claim_id, records, names, record=record, bounds=RANGES)


T128 = "T = 128 only (the paper's T = 256 and 512 columns are a GPU run: 000/Table1-long)"
#: where ``ch1_table1_k4`` is committed: the κ = 4 cells its rows read
K4_SETTING = (
    "; the Mamba's κ = 4 cells (every row's reference) from runs trained to 100 % training accuracy or 8× the step "
    "cap (ch1_table1_k4: 8,000 steps, no plateau stop), the 1,000-step runs having stopped on their cap still "
    "learning; a run ending on its cap counts as finished only where its training accuracy rose at most 0.002 over "
    "its last 2,000 steps, and a cell still rising below its bar is undecided until a longer run of it (16,000 "
    "steps) settles it; the Mamba is "
    "the chapter's simplified one-layer model (§2.2: fixed embedding and convolution, selective B and C at κ > 1; "
    "1,056–1,408 parameters), whose size the paper's Table 1 does not give"
)

_TABLE1_NOT_RUN = (
    "the T = 256 and 512 columns need the paper grid: `python -m mamba_recall grid ch1_table1 --preset paper "
    "--allow-long` (24 cells × 3 seeds, one run-store job each on the CPU; at most about 80 CPU-hours with every job at "
    "its step cap, measured on a shared 2-core machine)"
)

_TABLE1_SENTENCE = (
    "We observe that Mamba (top row) and 2-layer Transformer with convolution layer and RoPE (bottom row) perform "
    "similarly, whereas Transformers without RoPE (second, third row) struggle to solve the task."
)
_TABLE1_CAPTION = (
    "Table 1: Summary of Performance in MQAR Task, varying across sequence length  $T$ , the number of keys  "
    "$\\kappa$ , and architectures."
)


#: the section's claims, in the registry's order (each with the paper's sentence it tests, verbatim: pieces joined
#: by " … ")
CLAIMS = (
    Claim(
        "000/Table1-mamba",
        "1-layer Mamba solves the latest-value MQAR (99–100 % in every cell)",
        "App. A, Table 1, row 1",
        "T=128: 100, 100; T=256: 100, 99; T=512: 100, 99 (κ = 1, 4)",
        Rule(
            why="the printed cells are all ≥ 99 %, every cell; a cell below 99 % whose run stopped on its step cap "
            "has not finished learning and leaves the verdict undecided (a failure needs a model that learned as far "
            "as its recipe goes). No partial level: solving the κ = 1 column alone is part of the grid, not a weaker "
            "reading of the row",
            reproduced=conds(("min_accuracy", ">=", 0.99)),
            trained=True,
        ),
        measure_table1_mamba,
        SECTION,
        setting=T128 + K4_SETTING,
        revisions=(
            Revision(
                date=DATE,
                reason="Open review (referee-B): the partial level (κ = 1 only) covers part of the grid, and the κ = 4 "
                "cells (0.9725 [0.969, 0.976]) stopped on the 1000-step cap at training accuracy 0.975–0.976, so "
                "nothing shows the model had finished learning: such a cell is now undecided, and the partial level "
                "is dropped.",
                rule_before="reproduced if min_accuracy ≥ 0.99; partially if min_accuracy_kappa1 ≥ 0.99; otherwise not "
                "reproduced; " + TRAINED_TEXT,
                status_before="partially",
            ),
        ),
        quote=_TABLE1_CAPTION + " … " + _TABLE1_SENTENCE,
    ),
    Claim(
        "000/Table1-tf2",
        "a 2-layer Transformer without convolution or positional encoding struggles, far below Mamba",
        "App. A, Table 1, row 2",
        "T=128: 30, 42; T=256: 22, 21; T=512: 15, 18 (κ = 1, 4)",
        Rule(
            why="'struggle': ≤ 60 % in every cell (the paper's no-PE cells are ≤ 56 %) and ≥ 30 points below Mamba in "
            "the same cell (the paper's smallest gap is 43)",
            reproduced=conds(("max_accuracy", "<=", 0.6), ("min_gap_to_mamba", ">=", 0.3)),
            trained=True,
        ),
        lambda table, origin: measure_table1_no_pe(table, origin, "tf2_nope"),
        SECTION,
        setting=T128 + "; the Transformer is not size-matched (26,496 parameters, about 20× the Mamba's): a larger "
        "model that struggles",
        quote=_TABLE1_SENTENCE,
    ),
    Claim(
        "000/Table1-tf1-conv",
        "a 1-layer Transformer with convolution but no positional encoding struggles, far below Mamba",
        "App. A, Table 1, row 3",
        "T=128: 34, 56; T=256: 26, 42; T=512: 21, 36 (κ = 1, 4)",
        Rule(
            why="as for row 2: ≤ 60 % in every cell and ≥ 30 points below Mamba in the same cell; judged on the "
            "size-matched Transformers (d_model 8, conv widths 2 and 4) where committed, every cell of both widths "
            "(declared before their runs, issue 31)",
            reproduced=conds(("max_accuracy", "<=", 0.6), ("min_gap_to_mamba", ">=", 0.3)),
            trained=True,
        ),
        lambda table, origin: measure_table1_no_pe(table, origin, "tf1_conv"),
        SECTION,
        setting="T = 128 only (the paper's T = 256 and 512 columns are a GPU run); the Transformer is size-matched "
        "to the Mamba as the paper's 'similar model sizes' asks (d_model 8, about 1,200 parameters against the "
        "Mamba's 1,056–1,408), its conv width 2 and 4 (the paper does not give it); the deciding cell (conv 4, "
        "κ = 1) on 3 more seeds where committed (ch1_table1_seeds: seeds 3–5, each with its own Mamba and "
        "size-matched RoPE rows)",
        quote=_TABLE1_SENTENCE,
    ),
    Claim(
        "000/Table1-rope",
        "a 2-layer Transformer with convolution and RoPE performs similarly to Mamba",
        "App. A, Table 1, row 4 and text",
        "T=128: 100, 100; T=256: 100, 96; T=512: 77, 90 (κ = 1, 4)",
        Rule(
            why="'similar': within 5 points of Mamba in every cell (the paper's own near-equal cells differ by ≤ 4; its "
            "T = 512 cells, 23 and 9 points apart, would fail this), in a table where both solve the task (the "
            "RoPE model ≥ 95 % everywhere: two models at chance are 'within 5 points' too, the null control "
            "showed); the RoPE model solving the task while not within 5 points of Mamba is partial. A cell below "
            "its model's bar (RoPE 95 %, Mamba 99 %) whose run stopped on its step cap had not finished learning and "
            "leaves both numbers undecided, as in row 1",
            reproduced=conds(("max_diff_to_mamba", "<=", 0.05), ("min_accuracy", ">=", 0.95)),
            partially=conds(("min_accuracy", ">=", 0.95)),
            trained=True,
        ),
        measure_table1_rope,
        SECTION,
        setting=T128 + "; read only at App. A's 'similar model sizes' (the RoPE Transformer at most 2× the Mamba's "
        "parameters): a larger one's numbers are shown, undecided; read on the size-matched RoPE Transformer "
        "(d_model 8, 2,096 parameters, 1.5–2.0× the Mamba's: ch1_table1_rope) where committed"
        + K4_SETTING
        + " (and the RoPE model's own κ = 4 cells, from the same runs)",
        revisions=(
            Revision(
                date=DATE,
                reason="Open review (referee-B): App. A compares Transformers 'with similar model sizes', and the "
                "committed RoPE Transformer has 26,816 parameters, 19–25× the Mamba's 1,056–1,408, so 'performs "
                "similarly to Mamba' is shown only for a much larger model (row 3 is size-matched for the same "
                "reason); the rule now reads the row at similar size only.",
                rule_before="reproduced if max_diff_to_mamba ≤ 0.05 and min_accuracy ≥ 0.95 (at any model size); "
                "partially if min_accuracy ≥ 0.95; otherwise not reproduced; " + TRAINED_TEXT,
                status_before="reproduced",
            ),
            Revision(
                date="2026-12-06",
                reason="Open review (referee-J): the size-matched RoPE Transformer's κ = 4 runs all stopped on the "
                "1,000-step cap still learning (training accuracy 0.69, 0.70, 0.30, equal to held-out), and the "
                "Mamba's κ = 4 cells stopped on the same cap at 0.97; row 1 already reads such a cell undecided, this "
                "row counted it as a number, and its reason sent the reader to more seeds. Now a capped cell below "
                "its model's bar is undecided here too; the verdict stays inconclusive, on the cap.",
                rule_before="reproduced if max_diff_to_mamba ≤ 0.05 and min_accuracy ≥ 0.95 (a capped cell read as "
                "finished); partially if min_accuracy ≥ 0.95; otherwise not reproduced; " + TRAINED_TEXT,
                status_before="inconclusive",
            ),
        ),
        quote=_TABLE1_SENTENCE
        + " … It seems that Transformers can also achieve this via RoPE to differentiate the earlier versus later "
        "positions, and fail to solve the task without positional encoding.",
    ),
    Claim(
        "000/Table1-long",
        "at T = 256 and 512 Mamba stays at 99–100 % while the RoPE Transformer drops (77 % at "
        "T = 512, κ = 1) and the no-PE Transformers fall to 15–42 %",
        "App. A, Table 1, T = 256 and 512 columns",
        "Mamba 100, 99, 100, 99; TF 2-layer 22, 21, 15, 18; TF 1-layer conv 26, 42, 21, 36; TF RoPE 100, 96, 77, 90",
        Rule(
            why="the long-sequence columns: Mamba ≥ 99 % and the RoPE model below it at T = 512",
            reproduced=conds(("mamba_min_long", ">=", 0.99), ("rope_gap_T512", ">", 0)),
            trained=True,
        ),
        not_run=_TABLE1_NOT_RUN,
        quote=_TABLE1_CAPTION,
    ),
)
