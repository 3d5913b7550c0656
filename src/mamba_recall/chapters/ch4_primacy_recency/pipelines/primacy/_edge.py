"""The committed edge family of :mod:`mamba_recall.chapters.ch4_primacy_recency.runners.edge` (:class:`EdgeFamily`: three seeds per
recipe, their curves, model cards and stored claim measurements) and the recall curves of committed S-models across
lengths (:func:`committed_model_curves`)."""

from __future__ import annotations

from mamba_recall.experiment import command_line
from mamba_recall.analysis import interventions as iv
from ._models import contexts, load_checkpoint
from mamba_recall.runners import runner_command

# --------------------------------------------------------------------- the edge family (3 seeds per recipe)

#: The command that trains the edge family (every recipe's seeds; the declared experiment ``ch4_edge``) and writes its
#: bundle, and the one that measures the claims on its finished models (``ch4_edge_checks``, the runner's ``--checks``);
#: ``{preset}`` is filled in where they are printed
EDGE_COMMAND = command_line("ch4_edge", "{preset}")
EDGE_CHECKS_COMMAND = runner_command("ch4_edge") + " --preset {preset} --checks --allow-long"
#: The edge family's Mamba-2 recipe (``chapters/ch4_primacy_recency/configs.py``): App. F's head claims are judged on its seeds, at each
#: model's pressure length (declared with the recipe, before any of its results).
MAMBA2_RECIPE = "m2"


class EdgeFamily:
    """The committed edge family of :mod:`mamba_recall.chapters.ch4_primacy_recency.runners.edge` (bundles ``ch4_edge_<preset>`` and
    ``ch4_edge_checks_<preset>``): ``curves`` (recipe, L, variant, k → mean recall over seeds, 95 % t-interval,
    per-seed values), ``models`` (one row per model: card, gate, L_p), ``runs`` (the per-seed stored claim
    measurements) and ``primary`` (the recipe whose verdicts the scorecard carries). The models' bundle may be
    partial (a grid with jobs left, written marked by ``--partial``): its seeds are counted by the declared rule all
    the same, and :meth:`status` leads with :meth:`partial_label`. ``missing`` says what is not committed yet and
    the command that makes it (empty when both bundles exist). Only an absent bundle counts as not committed (:class:`~mamba_recall.results.BundleMissing` from :func:`~mamba_recall.results.evidence`, which
    reads both); one that exists but is corrupt raises its
    :class:`~mamba_recall.results.BundleError` (file and regenerate command) rather than turning the chapter's
    verdicts into "not committed yet"."""

    def __init__(self, preset: str = "cpu-hours", *, smoke: bool = False, directory=None):
        from mamba_recall.results import BundleMissing, evidence

        self.preset, self.smoke = preset, smoke
        # a smoke run's bundles (``<name>_<preset>_smoke``, in _build/smoke_results, never evidence)
        asked = f"{preset}_smoke" if smoke else preset
        self.curves = self.models = self.bundle = self.checks = None
        self.runs: list[dict] = []
        self.primary: str | None = None
        missing = []
        try:
            # the models' bundle may be partial (cpu-hours: 26 of 27 jobs, d4_long seed 2 never finished): the
            # verdicts count seeds by the declared rule (edge_seeds), and the page says so (partial_label)
            self.bundle = evidence("ch4_edge", preset=asked, directory=directory, complete=False)
            self.curves, self.models = self.bundle.tables["curves"], self.bundle.tables["models"]
        except BundleMissing:
            missing.append(f"the models (`{EDGE_COMMAND.format(preset=preset)}`)")
        try:
            self.checks = evidence("ch4_edge_checks", preset=asked, directory=directory)
            self.runs = self.checks.data["records"]
            self.primary = self.checks.data["primary_recipe"]
        except BundleMissing:
            missing.append(f"their claim checks (`{EDGE_CHECKS_COMMAND.format(preset=preset)}`)")
        self.missing = "; ".join(missing)

    @classmethod
    def from_runs(cls, runs: list[dict], preset: str = "cpu-hours", *, smoke: bool = False) -> "EdgeFamily":
        """A family from the checks runner's records (before its bundle is written): runs only, no primary."""
        fam = cls.__new__(cls)
        fam.smoke = smoke
        fam.preset, fam.curves, fam.models, fam.bundle, fam.checks = preset, None, None, None, None
        fam.primary, fam.missing = None, ""
        fam.runs = [  # the same record as the bundle's runs, the model's name included (its checkpoint is re-read)
            {
                "recipe": r["config"]["recipe_name"],
                "seed": r["seed"],
                "model": r["config"].get("model_name"),
                **r["result"],
            }
            for r in runs
        ]
        return fam

    def only(self, recipe: str) -> "EdgeFamily":
        """The family restricted to one recipe (its curves, model rows and check runs); when none of its models is
        committed, ``curves`` and ``models`` are None and ``missing`` names the command that trains it."""
        fam = EdgeFamily.__new__(EdgeFamily)
        fam.preset, fam.smoke, fam.bundle, fam.checks = self.preset, self.smoke, self.bundle, self.checks
        fam.primary = self.primary if self.primary == recipe else None
        fam.runs = [r for r in self.runs if r["recipe"] == recipe]
        fam.curves = None if self.curves is None else self.curves[self.curves["recipe"] == recipe]
        fam.models = None if self.models is None else self.models[self.models["recipe"] == recipe]
        fam.missing = self.missing
        if not fam.missing and (fam.models is None or fam.models.empty):
            fam.curves = fam.models = None
            fam.missing = f"the models of recipe {recipe} (`{EDGE_COMMAND.format(preset=self.preset)}`)"
        return fam

    def seeds_of(self, recipe: str) -> list[dict]:
        """The stored check runs of ``recipe``, by seed (every one, counted or not)."""
        return sorted((r for r in self.runs if r["recipe"] == recipe), key=lambda r: r["seed"])

    @property
    def sizes(self) -> dict:
        """The preset's sizes of the family (experiment ``ch4_edge``: recipes, seeds, reserve seeds)."""
        from mamba_recall.presets import experiment

        return experiment("ch4_edge", self.preset, smoke=self.smoke)

    def evidence(self, recipe: str):
        """Which seeds of ``recipe`` its verdicts are judged on and why
        (:func:`mamba_recall.chapters.ch4_primacy_recency.pipelines.edge_seeds.evidence_seeds`, the declared rule)."""
        from ..edge_seeds import evidence_seeds

        return evidence_seeds(recipe, self.runs, self.sizes)

    def evidence_runs(self, recipe: str) -> list[dict]:
        """The stored check runs of the seeds ``recipe`` is judged on (:meth:`evidence`), in seed order."""
        keep = set(self.evidence(recipe).evidence)
        return [r for r in self.seeds_of(recipe) if r["seed"] in keep]

    def probe_table(self, name: str = "slow_states"):
        """One row per (recipe, seed) of a probe stored by the checks runner (e.g. the slow-state ablation)."""
        import pandas as pd

        rows = [
            {
                "recipe": r["recipe"],
                "seed": r["seed"],
                "L": r["at"],
                **{k: v for k, v in r.get("probes", {}).get(name, {}).items() if not isinstance(v, list)},
            }
            for r in self.runs
            if name in r.get("probes", {})
        ]
        return pd.DataFrame(rows)

    def cards(self):
        """One row per model: recipe, seed, its card, the s_small gate of its training run, the edge family's gate (from
        the checks: recall at L = 2), L_p and the recall at L_p (first, middle third, last)."""
        import pandas as pd

        if self.models is None:
            return pd.DataFrame()
        cols = ["model", "recipe", "seed", "gate_passed", "train_L_max", "L_p", "acc1_Lp", "mid_Lp", "accL_Lp", "card"]
        out = self.models[cols].rename(columns={"gate_passed": "s_small gate"}).copy()
        gates = {(r["recipe"], r["seed"]): r.get("gate", {}) for r in self.runs}
        out.insert(4, "edge gate", [gates.get((r, sd), {}).get("passed") for r, sd in zip(out["recipe"], out["seed"])])
        out.insert(
            5,
            "L=2 recall",
            [
                min(gates.get((r, sd), {}).get("metrics", {"": float("nan")}).values())
                for r, sd in zip(out["recipe"], out["seed"])
            ],
        )
        return out.round(3)

    def partial_label(self) -> str:
        """``""`` when the models' bundle is complete (or not committed); for a partial one (written by the grid's
        ``--partial``) ``"models PARTIAL: k of n jobs (not finished: <recipe> seed <s>, …)"``, the declared jobs
        (:func:`~mamba_recall.chapters.ch4_primacy_recency.pipelines.edge_seeds.declared_seeds` of every recipe) that
        have no model in it. ValueError for an incomplete bundle without its ``partial`` mark (one written
        implicitly), naming the command that writes it marked."""
        if self.bundle is None or self.bundle.data.get("complete"):
            return ""
        data = self.bundle.data
        if not data.get("partial"):
            raise ValueError(
                f"{self.bundle.path}: {data.get('jobs_finished')} of {data.get('jobs_total')} jobs, not marked "
                f"partial; rewrite it with `{EDGE_COMMAND.format(preset=self.preset).removesuffix(' --allow-long')} "
                "--aggregate-only --partial` (a grid's unfinished bundle is written only when asked)."
            )
        from ..edge_seeds import declared_seeds

        models = self.bundle.tables["models"]  # the whole bundle's (a family restricted by only() keeps its bundle)
        have = set(zip(models["recipe"], models["seed"]))
        left = [
            f"{recipe} seed {seed}"
            for recipe in sorted(self.sizes["recipes"])
            for seed in declared_seeds(self.sizes, recipe)
            if (recipe, seed) not in have
        ]
        return f"models PARTIAL: {data['partial']}" + (f" (not finished: {', '.join(left)})" if left else "")

    def status(self) -> str:
        """Which recipes have how many checked seeds past the edge gate (what decides the primary recipe): per recipe
        ``<recipe>: <ok> of <n> checked seeds past the edge gate``; a recipe with reserve seeds reads its
        :meth:`evidence` instead (e.g. ``d4: seeds passing 0, 3, 4 of seeds 0–5 trained (3 of 6 …)``, each seed's gate
        and which seeds count), followed by the rule that picks the primary recipe."""
        if self.missing:
            return f"not committed yet: {self.missing}"
        from ..edge_seeds import primary_rule, reserve_seeds

        reserves = reserve_seeds(self.sizes)
        counts = {}
        for r in self.runs:
            done, ok = counts.get(r["recipe"], (0, 0))
            counts[r["recipe"]] = (done + 1, ok + bool(r.get("gate", {}).get("passed")))
        parts = [
            self.evidence(k).summary() if k in reserves else f"{k}: {ok} of {n} checked seeds past the edge gate"
            for k, (n, ok) in sorted(counts.items())
        ]
        label = self.partial_label()
        return (
            (f"{label}; " if label else "") + ", ".join(parts) + (f". {primary_rule(self.sizes)}" if reserves else "")
        )


def committed_model_curves(names, Ls, n: int, variant: str = "repeated", device="cpu"):
    """Recall by position of committed S-models (``results/checkpoints/ch4_<name>.pt``) at every length of ``Ls``:
    a long table (model, L, k, acc, lo, hi, trained) where ``trained`` says whether L was inside the model's
    training range (its recipe's ``L_max``)."""
    import pandas as pd

    rows = []
    for name in names:
        model, vocab, side = load_checkpoint(model=name, device=device)
        L_max = side["train_config"]["L_max"]
        for L in Ls:
            s = iv.summary(iv.recall_by_position(model, contexts(vocab, L, variant, n), device=device))
            rows += [
                {
                    "model": name,
                    "L": L,
                    "k": k + 1,
                    "acc": s["acc"][k],
                    "lo": s["lo"][k],
                    "hi": s["hi"][k],
                    "trained": L <= L_max,
                }
                for k in range(L)
            ]
    return pd.DataFrame(rows)
