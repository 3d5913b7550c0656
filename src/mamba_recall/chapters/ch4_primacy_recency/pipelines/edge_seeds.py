"""Which seeds of a recipe of Chapter 4's edge family its verdicts are judged on, and which recipe is primary.

The edge family (:mod:`mamba_recall.chapters.ch4_primacy_recency.runners.edge`, preset ``ch4_edge`` in ``chapters/ch4_primacy_recency/configs.py``) trains every
recipe on the seeds ``0 … seeds-1``, and some recipes on reserve seeds after them (preset entry ``reserve_seeds``,
e.g. ``{"d4": [3, 4, 5]}``, declared before any of them ran). The one rule (:func:`evidence_seeds`), used by the
checks bundle's primary recipe (:func:`primary_recipe`), by :class:`mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy.EdgeFamily` and by
:func:`mamba_recall.chapters.ch4_primacy_recency.claims.check_family`:

* a recipe **without reserve seeds** is judged on its checked seeds; it can be the primary recipe when all of its
  (≥ 3) seeds are checked and every one passed the edge gate;
* a recipe **with reserve seeds** is judged on the first three seeds, in seed order (``0 … seeds-1``, then the
  reserves), that passed the edge gate, each trained to its full step count. No seed is skipped or reordered, and a
  seed that has not finished yet (no checks record) stops the count: the seeds after it cannot count until it has
  finished, so which seeds count cannot depend on which run finished first.

Every seed's outcome (passed or not, with its gate numbers) is reported beside the verdicts
(:meth:`SeedSelection.summary`, printed by ``EdgeFamily.status``).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The recipe whose verdicts the scorecard carries, declared before any result: the first of these whose evidence
#: seeds (:func:`evidence_seeds`: its 3 seeds, or for a recipe with reserve seeds the first 3 in seed order) all
#: passed its convergence gate (the ≥ 4-layer family first, as the issue specifies the family).
# d4_long, d2_smalldt and d4_zinit were added with their recipes, before any of their results
# (Mamba-1 recipes only: the m2 recipe serves the Mamba-2 claims of App. F)
PRIMARY_ORDER = ("d4", "d4_long", "d4_zinit", "d2_bos", "d2_smalldt", "d2")


def reserve_seeds(sizes: dict) -> dict[str, tuple[int, ...]]:
    """The preset's ``reserve_seeds`` ({recipe: seeds trained after ``0 … seeds-1``}), checked: every recipe must be
    one of the preset's, its reserve seeds distinct integers ≥ ``seeds``, in increasing order."""
    reserves = sizes.get("reserve_seeds") or {}
    if not isinstance(reserves, dict):
        raise ValueError(
            f"reserve_seeds must be a dict {{recipe: [seeds]}}, got {reserves!r}; fix chapters/ch4_primacy_recency/configs.py."
        )
    out = {}
    for recipe, seeds in reserves.items():
        if recipe not in sizes["recipes"]:
            raise ValueError(
                f"reserve_seeds names unknown edge recipe {recipe!r}; choose from {sorted(sizes['recipes'])} "
                "(chapters/ch4_primacy_recency/configs.py)."
            )
        seeds = list(seeds)
        if not all(isinstance(k, int) and k >= sizes["seeds"] for k in seeds) or seeds != sorted(set(seeds)):
            raise ValueError(
                f"reserve seeds of {recipe!r} must be distinct integers ≥ seeds = {sizes['seeds']} in increasing "
                f"order (they are counted in that order after seeds 0 … {sizes['seeds'] - 1}); got {seeds!r} "
                "(chapters/ch4_primacy_recency/configs.py)."
            )
        out[recipe] = tuple(seeds)
    return out


def declared_seeds(sizes: dict, recipe: str) -> tuple[int, ...]:
    """The seeds of ``recipe`` in the order they are counted: ``0 … seeds-1``, then its reserve seeds."""
    return tuple(range(sizes["seeds"])) + reserve_seeds(sizes).get(recipe, ())


#: How many seeds past the edge gate a recipe's verdicts need (a trained-model claim needs 3 seeds).
EVIDENCE_SEEDS = 3


def _seed_list(seeds) -> str:
    """``0–5`` for a run of consecutive seeds, ``0, 3, 4`` otherwise, ``none`` for none."""
    seeds = list(seeds)
    if not seeds:
        return "none"
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(str(k) for k in seeds)


@dataclass(frozen=True)
class SeedSelection:
    """Which seeds of one recipe its verdicts are judged on (:func:`evidence_seeds`). ``order``: the declared seeds
    in counting order; ``reserve``: its reserve seeds (empty: the plain rule); ``outcomes``: seed → its edge gate
    (``{"passed", "metrics", …}``) or None while it has not finished; ``evidence``: the seeds judged;
    ``complete``: whether they are :data:`EVIDENCE_SEEDS` seeds all past the gate (the recipe can be primary);
    ``why``: the reason, in words."""

    recipe: str
    order: tuple[int, ...]
    reserve: tuple[int, ...]
    outcomes: dict
    evidence: tuple[int, ...]
    complete: bool
    why: str

    @property
    def finished(self) -> tuple[int, ...]:
        return tuple(k for k in self.order if self.outcomes[k] is not None)

    @property
    def passed(self) -> tuple[int, ...]:
        return tuple(k for k in self.finished if self.outcomes[k].get("passed"))

    @property
    def pending(self) -> tuple[int, ...]:
        return tuple(k for k in self.order if self.outcomes[k] is None)

    def summary(self) -> str:
        """One line: e.g. ``d4: seeds passing 0, 3, 4 of seeds 0–5 trained (3 of 6 declared seeds 0–5; …)``, each
        finished seed's gate numbers, the seeds not trained yet, and why the selection is (not) complete."""
        gates = [f"seed {k} {_gate_words(self.outcomes[k])}" for k in self.finished]
        if self.pending:
            gates.append(f"seed(s) {_seed_list(self.pending)} not finished yet")
        return (
            f"{self.recipe}: seeds passing {_seed_list(self.passed)} of seeds {_seed_list(self.finished)} trained "
            f"({len(self.passed)} of {len(self.order)} declared seeds {_seed_list(self.order)}; {'; '.join(gates)}): "
            f"{self.why}"
        )


def _gate_words(gate: dict) -> str:
    metrics = ", ".join(f"{k} {v:.3f}" for k, v in (gate.get("metrics") or {}).items())
    return (
        f"{'passed' if gate.get('passed') else 'failed'} ({metrics})"
        if metrics
        else ("passed" if gate.get("passed") else "failed")
    )


def _outcome(run: dict) -> tuple[str, int, dict]:
    """(recipe, seed, edge gate) of a checks record: the run store's (``config``/``result``) or a family's
    (``recipe``, ``seed``, ``gate``, as :class:`mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy.EdgeFamily` keeps them)."""
    if "config" in run:
        return run["config"]["recipe_name"], int(run["seed"]), run["result"].get("gate") or {}
    return run["recipe"], int(run["seed"]), run.get("gate") or {}


def _outcomes(recipe: str, runs: list[dict], order: tuple) -> dict:
    """{seed: its edge gate, or None while not checked} for every declared seed of ``recipe`` (``order``), from the
    checks records ``runs``; a record of an undeclared seed, or two of one seed, is an error."""
    outcomes: dict = {k: None for k in order}
    for run in runs:
        name, seed, gate = _outcome(run)
        if name != recipe:
            continue
        if seed not in outcomes:
            raise ValueError(
                f"a checks record of {recipe} has seed {seed}, not one of its declared seeds {list(order)}: declare it "
                "(chapters/ch4_primacy_recency/configs.py: seeds, reserve_seeds) or remove the record from the run store."
            )
        if outcomes[seed] is not None:
            raise ValueError(f"two checks records of {recipe} seed {seed}; keep one (run store ch4_edge_checks).")
        outcomes[seed] = gate
    return outcomes


def _plain_selection(recipe: str, order, reserve, outcomes: dict, failed: list, pending: list) -> SeedSelection:
    """:func:`evidence_seeds` for a recipe without reserve seeds: its checked seeds, complete when every one of at
    least :data:`EVIDENCE_SEEDS` seeds passed."""
    n = EVIDENCE_SEEDS
    evidence = tuple(k for k in order if outcomes[k] is not None)
    complete = not pending and len(order) >= n and not failed
    if complete:
        why = f"its seeds {_seed_list(order)} all passed the edge gate"
    elif len(order) < n:
        why = f"it declares {len(order)} seeds, fewer than the {n} a verdict needs"
    else:
        why = "; ".join(
            part
            for part in (
                f"seed(s) {_seed_list(failed)} failed the edge gate" if failed else "",
                f"seed(s) {_seed_list(pending)} not checked yet" if pending else "",
            )
            if part
        )
    return SeedSelection(recipe, order, reserve, outcomes, evidence, complete, why)


def _reserve_selection(recipe: str, order, reserve, outcomes: dict, failed: list) -> SeedSelection:
    """:func:`evidence_seeds` for a recipe with reserve seeds: the first :data:`EVIDENCE_SEEDS` seeds in seed order
    that passed the edge gate, the count stopping at a seed that has not finished."""
    n = EVIDENCE_SEEDS
    counted: list[int] = []
    seen: list[int] = []  # the seeds the count went through, in order
    blocked_by = None
    for k in order:
        if len(counted) == n:
            break
        if outcomes[k] is None:
            blocked_by = k
            break
        seen.append(k)
        if outcomes[k].get("passed"):
            counted.append(k)
    complete = len(counted) == n
    skipped = [k for k in seen if k in failed]
    failed_words = f" (seed(s) {_seed_list(skipped)} failed it)" if skipped else ""
    if complete:
        why = f"judged on seeds {_seed_list(counted)}, the first {n} of {_seed_list(order)} past the edge gate" + (
            failed_words
        )
    elif blocked_by is not None:
        after = [k for k in order if k > blocked_by]
        why = (
            f"not complete: {len(counted)} of the {n} seeds needed counted so far ({_seed_list(counted)})"
            f"{failed_words}; seed {blocked_by} has not finished"
            + (f", so seeds {_seed_list(after)} cannot count before it" if after else "")
        )
    else:
        why = (
            f"not complete: only {len(counted)} of its declared seeds {_seed_list(order)} passed the edge gate "
            f"({_seed_list(counted)}), {n} are needed"
        )
    return SeedSelection(recipe, order, reserve, outcomes, tuple(counted), complete, why)


def evidence_seeds(recipe: str, runs: list[dict], sizes: dict) -> SeedSelection:
    """The seeds of ``recipe`` whose checks its verdicts are judged on, from the checks records ``runs`` (one per
    finished model: its training job ran every step of the recipe, then its checks job measured its edge gate) and
    the preset's ``sizes`` (experiment ``ch4_edge``). The rule, declared before any reserve seed ran:

    * a recipe **without reserve seeds** is judged on its checked seeds (those of ``0 … seeds-1``), and is complete
      (may be the primary recipe) when all of them are checked, they are ≥ :data:`EVIDENCE_SEEDS`, and every one
      passed the edge gate;
    * a recipe **with reserve seeds** (``sizes["reserve_seeds"]``) is judged on the first :data:`EVIDENCE_SEEDS`
      seeds, in seed order (``0 … seeds-1``, then the reserves), that passed the edge gate. A seed is never skipped
      or reordered: a seed that has not finished yet stops the count there, so the seeds after it do not count
      until it has finished (which seeds count cannot depend on which run finished first). It is complete when
      :data:`EVIDENCE_SEEDS` seeds are counted.
    """
    order = declared_seeds(sizes, recipe)
    reserve = reserve_seeds(sizes).get(recipe, ())
    outcomes = _outcomes(recipe, runs, order)
    failed = [k for k in order if outcomes[k] is not None and not outcomes[k].get("passed")]
    pending = [k for k in order if outcomes[k] is None]
    if not reserve:  # the plain rule: its seeds, every one must pass
        return _plain_selection(recipe, order, reserve, outcomes, failed, pending)
    return _reserve_selection(recipe, order, reserve, outcomes, failed)


def primary_rule(sizes: dict) -> str:
    """The rule that picks the primary recipe, in words (from :data:`PRIMARY_ORDER` and the preset's reserves)."""
    reserves = reserve_seeds(sizes)
    plain = _seed_list(range(sizes["seeds"]))
    text = (
        f"primary recipe: the first of {', '.join(PRIMARY_ORDER)} with {EVIDENCE_SEEDS} checked seeds past the edge "
        f"gate; a recipe is judged on its seeds {plain}, every one of which must pass"
    )
    for recipe, extra in reserves.items():
        text += (
            f"; {recipe}, with reserve seeds {_seed_list(extra)}, on the first {EVIDENCE_SEEDS} seeds of "
            f"{_seed_list(declared_seeds(sizes, recipe))} past the gate, in seed order (none skipped; a seed not "
            "finished yet blocks those after it)"
        )
    return text


def primary_recipe(runs: list[dict], sizes: dict) -> str | None:
    """The first recipe of :data:`PRIMARY_ORDER` whose :func:`evidence_seeds` are complete (``EVIDENCE_SEEDS``
    checked seeds, every one past the edge gate, chosen by the declared rule); None when no recipe is."""
    for recipe in PRIMARY_ORDER:
        if recipe in sizes["recipes"] and evidence_seeds(recipe, runs, sizes).complete:
            return recipe
    return None
