"""What several sections of Chapter 1 share: the declared readings of the paper's words and the notebooks'
tolerances, the evidence of a committed checkpoint, the untrained null control (:func:`with_untrained_null`), the
generator's chance level, and the cpu-hours bundle over whose seeds the pages judge (:func:`load_seeds`).

A private module of :mod:`mamba_recall.chapters.ch1_gradient_dynamics.claims`: its section modules import it, and the package re-exports the
public names that code outside uses.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from mamba_recall.experiment import command_line
from mamba_recall.claims.core import Control, Evidence, Revision

#: the date of the open review's rule revisions (Claim.revisions) and the words the records show for a trained rule's
#: burden (the tail of Rule.text(), quoted in each revision's rule_before)
DATE = "2026-12-04"
TRAINED_TEXT = (
    "a trained-model verdict, in either direction, needs ≥ 3 seeds and an interval: a condition holds or fails only "
    "over its number's whole 95 % interval, else inconclusive"
)
SPIKE = 1.5  # a spike: at least 1.5× the noise-pair level of the same quantity
NEAR_ZERO = 0.1  # "close to zero": at most a tenth of the key-pair level
MUCH_LARGER = 16  # "|V| ≫ T": |V| ≥ 16 T  (and "|V| ≫ T²": |V| ≥ 16 T²)
SOLVES = 0.9  # one gradient step "succeeds": ≥ 90 % accuracy on the theory distribution
EXACT = 1e-9  # two exact float64 computations of the same gradient agree far below this
# the chapter's notebook checks read their tolerances from here (a check prints its number and this threshold)
FLOAT64_AGREE = 1e-10  # two float64 computations of the same quantity by different code paths (scan backends, trace vs
# forward, analytic vs autograd): rounding gives ~1e-16 on these sizes, a bug gives order one
FLOAT32_AGREE = 1e-7  # the same float32 factor computed twice: at most about one ulp of a number ≤ 1 (6e-8)
MC_Z = 5.0  # a Monte-Carlo gradient agrees with the exact one within 5 standard errors in every entry
MC_COSINE = 0.999  # ... and points the same way (cosine ≥ 0.999) at n = 2·10⁵ samples
#: The declared range of the chapter's numbers that are accuracies or fractions (in [0, 1]): each one's 95 % interval
#: over seeds is clipped to it wherever seeds are combined (core's ``across_seeds``: :func:`~.seeds.check_over_seeds`,
#: :func:`~.table1.check_table1`, :func:`seeds_claims_view`, the cpu-hours bundles' tables); the others (ratios,
#: differences, step counts) are not clipped.
RANGES = {
    m: (0.0, 1.0)
    for m in (
        "accuracy",
        "train_accuracy",
        "accuracy_held_except_writes",
        "accuracy_intervened",
        "fraction_within",
        "min_accuracy",
        "min_accuracy_kappa1",
        "max_accuracy",
        # the bundles' per-model tables (runners.grid_bundles) and our causal probe's accuracies and fractions
        "test_accuracy",
        "probe_accuracy_before",
        "probe_accuracy_after",
        "probe_margin_positive_before",
        "probe_margin_positive_after",
        "probe_accuracy_no_write_erase",
    )
}


# ------------------------------------------------------------------------------------------ evidence
def checkpoint_evidence(meta: dict, sample: str) -> Evidence:
    """Evidence of a committed Chapter 1 checkpoint (its sidecar ``meta``): its preset, device, one seed. A
    seed's checkpoint of the run-store grid names its own file (``meta["checkpoint"]``)."""
    from mamba_recall.paths import REPO_ROOT
    from mamba_recall.results import checkpoint_file

    if "checkpoint" in meta:
        return Evidence(meta["preset"], str(meta["device"]), 1, sample, str(meta["checkpoint"]))
    path = checkpoint_file(f"ch1_{meta['name']}", meta["preset"]).resolve().relative_to(REPO_ROOT.resolve())
    return Evidence(meta["preset"], str(meta["device"]), 1, sample, str(path))


UNTRAINED = "the same architecture untrained (its initialisation at the same seed), measured the same way"


def untrained_like(meta: dict):
    """The untrained model of a checkpoint's recipe: the same architecture initialised at the same seed (``meta``:
    the checkpoint's sidecar)."""
    from mamba_recall.models.simplified_recall import SimplifiedMamba

    return SimplifiedMamba.from_sizes(meta["config"], int(meta.get("seed", 0))).eval()


#: the learning gate of a mechanism read on a trained |K| = 1 model: a "not reproduced" says the mechanism differs
#: from the paper's only in a model that solves the task (held-out query accuracy ≥ 99 %, the accuracy the chapter
#: trains to); its untrained null reads not testable here by this gate
LEARNED = 0.99
LEARNED_WHY = (
    "the model does not solve the task (held-out query accuracy < 99 %): a mechanism unlike the paper's in a model "
    "that has not learned the task says nothing of the paper's"
)


def learned_accuracy(model, meta: dict) -> float:
    """``model``'s held-out query accuracy on its checkpoint's held-out set (``meta``: the sidecar; the seed's
    held-out sequences, :func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.held_out_accuracy`):
    the sidecar's ``test_query_accuracy`` for the trained model, chance for its untrained twin."""
    from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import held_out_accuracy

    return held_out_accuracy(model, meta["config"], int(meta.get("seed", 0)))


#: the date the learning gate was declared on the |K| = 1 mechanism claims that read not reproduced (open review,
#: issue 51's audit: a trained failure must show its model learned where it should)
GATE_DATE = "2026-12-06"


def gate_revision(rule_before: str) -> Revision:
    """The revision that added the learning gate (``testable`` accuracy ≥ :data:`~._common.LEARNED`) to a |K| = 1
    mechanism claim reading not reproduced (Fig. 7's W_o too); ``rule_before``: its rule's words before, without the trained tail."""
    return Revision(
        date=GATE_DATE,
        reason="Open review (issue 51's audit, answered open on 2026-12-04): a trained 'not reproduced' must show "
        "that the failing model learned where it should; the models read here solve the task (held-out query "
        "accuracy 1.0 on every cpu-hours seed), and the rule now declares it as its gate (testable only if "
        "accuracy ≥ 0.99, measured on each model's own held-out sequences; the untrained null fails it).",
        rule_before=rule_before + "; " + TRAINED_TEXT,
        status_before="not reproduced",
    )


def with_learning_gate(fn):
    """A measurement ``fn(model, *args)`` whose last argument is the checkpoint's ``meta``, with the model's held-out
    query accuracy added as ``accuracy`` (:func:`learned_accuracy`, shown after its line): the metric of the rules'
    learning gate (``testable`` ``accuracy ≥`` :data:`LEARNED`). Under :func:`with_untrained_null` the untrained
    twin is measured by it too (its accuracy is chance)."""

    @functools.wraps(fn)
    def measured(model, *args):
        m = fn(model, *args)
        acc = learned_accuracy(model, args[-1])
        return replace(m, values={**m.values, "accuracy": acc}, shown=f"{m.shown}; held-out query accuracy {acc:.4f}")

    return measured


def with_untrained_null(fn):
    """A measurement ``fn(model, *args)`` whose last argument is the checkpoint's ``meta``, with the null control
    attached: the same measurement on :func:`untrained_like` (judged by the same rule beside it, see
    :class:`~mamba_recall.claims.core.Control`). ``null=False``: the measurement alone."""

    @functools.wraps(fn)
    def measured(model, *args, null: bool = True):
        m = fn(model, *args)
        if not null:
            return m
        return replace(m, control=Control("null", UNTRAINED, fn(untrained_like(args[-1]), *args)))

    return measured


def chance_level(meta: dict) -> float:
    """The generator's chance level of a query: one value of |V| − |K| guessed uniformly."""
    cfg = meta["config"]
    return 1.0 / (cfg["vocab_size"] - cfg["num_keys"])


# ------------------------------------------------------------- the cpu-hours seeds (3 seeds, the run store)
SEEDS_PRESET = "cpu-hours"
SEEDS_COMMAND = command_line("ch1_mechanism", "cpu-hours")


def load_seeds(stem: str, log=print, *, directory=None, preset: str = SEEDS_PRESET):
    """The complete committed bundle ``results/<stem>_cpu-hours.json`` of experiment ``stem`` (``ch1_mechanism``,
    ``ch1_table1``, ...: 3 seeds or more at the paper's settings), read by :func:`~mamba_recall.results.evidence`,
    else ``None``: the one-seed checkpoints and the ``ci`` runs are then the evidence. This adds the chapter's answer
    to its absence (``evidence``'s :class:`~mamba_recall.results.BundleMissing`: no bundle, or an incomplete one, a
    grid still running; its message names the command that makes or finishes it) and to a smoke bundle (a handful of
    steps: not evidence), and says through ``log`` which evidence the page's verdicts rest on. A corrupt bundle
    raises :class:`~mamba_recall.results.BundleError` (never replaced by the weaker evidence). (``directory``,
    ``preset``: another folder, or another bundle ``<stem>_<preset>`` such as a smoke run's, for tests.)"""
    from mamba_recall.results import BundleMissing, evidence

    try:
        bundle = evidence(stem, preset=preset, directory=directory)
    except BundleMissing as exc:
        log(f"{exc}: the verdicts below rest on the one-seed evidence")
        return None
    name = bundle.path.stem
    if bundle.config.get("smoke"):
        log(
            f"{name} is a smoke run (a handful of steps): not evidence; the verdicts below rest on the one-seed evidence"
        )
        return None
    runs = bundle.data["runs"]
    log(
        f"using {name}: preset {preset}, {runs['runs']} runs, commit(s) {', '.join(c[:10] for c in runs['commits'])}"
        f", {runs['cpu_seconds'] / 3600:.1f} CPU-hours; verdicts are judged over the seeds (mean, 95 % t-interval)"
    )
    return bundle


def seeds_claims_view(seeds, claim_ids):
    """Per claim of ``claim_ids`` (in the bundle's order), model and number: its mean over the bundle's seeds, 95 %
    interval (clipped to the number's range, :data:`RANGES`) and per-seed values, combined now from the seeds' stored
    measurements (``seeds.data["measurements"]``) as the verdict combines them (core's ``across_seeds``): the bundle
    holds the per-seed measurements only, never numbers combined while it was written. A claim measured on several
    models (its seeds named ``"<model> seed <i>"``, e.g. Fig. 7's identity and masked targets) has a row per model and
    then ``all`` (every seed: what its verdict judges)."""
    import pandas as pd

    from mamba_recall.claims.core import across_seeds, measurement_from_record

    stored = seeds.data["measurements"]
    unknown = [cid for cid in claim_ids if cid not in stored]
    if unknown:
        raise ValueError(
            f"seeds_claims_view: {unknown} not measured in bundle {seeds.name} (it measures {sorted(stored)}); "
            "name claims its jobs measured."
        )
    rows = []
    nan = (float("nan"), float("nan"))
    for cid in (c for c in stored if c in set(claim_ids)):  # in the bundle's order
        records, names = stored[cid]["records"], stored[cid]["names"]
        if any("not_run" in d for d in records):
            rows.append(dict(claim=cid, model="all", metric="(not run)", n_seeds=len(records)))
            continue
        groups: dict[str, list[int]] = {}
        for i, name in enumerate(names):
            groups.setdefault(name.rsplit(" seed ", 1)[0], []).append(i)
        if len(groups) > 1:
            groups["all"] = list(range(len(records)))
        for model, idx in groups.items():
            m = across_seeds([measurement_from_record(records[i]) for i in idx], [names[i] for i in idx], bounds=RANGES)
            rows += [
                dict(
                    claim=cid,
                    model=model,
                    metric=k,
                    mean=float(v),
                    ci_low=m.intervals.get(k, nan)[0],
                    ci_high=m.intervals.get(k, nan)[1],
                    per_seed=" ".join(f"{float(x):.4g}" for x in m.per_seed[k]),
                    n_seeds=len(idx),
                )
                for k, v in sorted(m.values.items())
            ]
    view = pd.DataFrame(rows, columns=["claim", "model", "metric", "mean", "ci_low", "ci_high", "per_seed", "n_seeds"])
    return view.set_index(["claim", "model", "metric"])
