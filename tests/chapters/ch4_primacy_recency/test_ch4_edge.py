"""Chapter 4's edge family: training batches with BOS and filler gaps, the run-store runner and the claim checks
across seeds (one declared rule for combining seeds)."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest
import torch

from mamba_recall.claims import Evidence, Measurement, across_seeds, check_seeds, get, judge
from mamba_recall.tasks.serial_recall import BOS, SEP, RecallVocab, multiquery_batch, recall_contexts


# ------------------------------------------------------------------------------ batches
def test_multiquery_batch_default_stream_unchanged():
    """With neither BOS nor gaps the batches are bit-for-bit those the committed S-models were trained on
    (fingerprint taken with the code before the options existed)."""
    h = hashlib.sha256()
    for seed in (0, 1, 7):
        for L in (2, 5, 16):
            x, y = multiquery_batch(L, 8, vocab=RecallVocab(), seed=seed)
            h.update(x.numpy().tobytes())
            h.update(y.numpy().tobytes())
    assert h.hexdigest()[:16] == "75b1f0d21130feca"


@pytest.mark.parametrize("bos", [False, True])
@pytest.mark.parametrize("n_gap", [0, 3])
def test_multiquery_batch_labels_with_bos_and_gaps(bos, n_gap):
    vocab = RecallVocab(n_names=64, n_filler=16)
    L, Q = 6, 4
    x, y = multiquery_batch(L, 5, vocab=vocab, seed=3, bos=bos, n_gap=n_gap)
    ctx_len = 4 * L + int(bos)
    gap = n_gap + 1 if n_gap else 0
    assert x.shape == (5, ctx_len + gap + 4 * Q)
    assert bool((x[:, 0] == BOS).all()) == bos
    if n_gap:
        fill = x[:, ctx_len : ctx_len + n_gap]
        assert bool(((fill >= vocab.fill0) & (fill < vocab.fill0 + vocab.n_filler)).all())
        assert bool((x[:, ctx_len + n_gap] == SEP).all())
    for b in range(5):
        pos = torch.nonzero(y[b] != -100).flatten().tolist()
        assert pos == [ctx_len + gap + 1 + 4 * q for q in range(Q)]
        for p in pos:  # the label is the object of the queried (subject, relation) in the context
            s, r = int(x[b, p - 1]), int(x[b, p])
            triples = x[b, int(bos) : ctx_len].reshape(L, 4)
            hit = triples[(triples[:, 0] == s) & (triples[:, 1] == r)]
            assert len(hit) == 1 and int(hit[0, 2]) == int(y[b, p])


def test_vocab_bos_is_the_default_format():
    v = RecallVocab(bos=True)
    assert recall_contexts(4, 2, vocab=v).tokens[0, 0] == BOS
    assert recall_contexts(4, 2, vocab=v, bos=False).tokens.shape[1] == 16
    with pytest.raises(ValueError, match="n_filler"):
        multiquery_batch(4, 2, vocab=RecallVocab(n_filler=0), n_gap=2)


# ------------------------------------------------------------------------------ seeds
def _m(values, seeds=1, tier="cpu-hours"):
    return Measurement(values, "x", Evidence(tier, "cpu", seeds, "100 contexts", "m.pt"))


def test_across_seeds_rule():
    ms = [_m({"a": 0.2, "ok": True}), _m({"a": 0.4, "ok": True}), _m({"a": 0.3, "ok": False})]
    m = across_seeds(ms)
    assert m.values["a"] == pytest.approx(0.3) and m.values["ok"] is False
    lo, hi = m.intervals["a"]
    assert lo < 0.3 < hi and hi - lo == pytest.approx(2 * 4.302653 * 0.1 / math.sqrt(3), rel=1e-3)
    assert m.per_seed["a"] == [0.2, 0.4, 0.3] and m.evidence.seeds == 3
    nan = across_seeds([_m({"a": 0.2, "ok": True}), _m({"a": float("nan"), "ok": True})])
    assert math.isnan(nan.values["a"]) and "a" not in nan.intervals
    assert across_seeds([_m({"a": 1.0}, tier="cpu-hours"), _m({"a": 1.0}, tier="ci")]).evidence.tier == "ci"
    with pytest.raises(ValueError, match="different metrics"):
        across_seeds([_m({"a": 1.0}), _m({"b": 1.0})])


def test_three_seeds_reach_reproduced_one_seed_is_capped():
    """A trained claim whose conditions hold: three seeds with an interval → reproduced; one seed is capped at
    inconclusive (symmetric judging: one seed decides neither way), the reason naming the seeds."""
    claim = get("004/Fig3a")
    ok = {"fraction": 0.05, "concentration_p": 1e-4}
    assert claim.rule.trained
    assert judge(claim, across_seeds([_m(ok) for _ in range(3)])).status == "reproduced"
    one = judge(claim, across_seeds([_m(ok)]))
    assert one.status == "inconclusive" and "1 seed" in one.reason and "'reproduced'" in one.reason, one


def test_check_seeds_measures_each_seed():
    class Stats:  # the shape measure_sparsity reads: per-layer matrices and the channel count
        def __init__(self, widths):
            self.M = [np.zeros((1, w)) for w in widths]
            self.n_channels = sum(widths)
            self.n_layers = len(widths)

    stats = Stats([100, 100, 100, 100])
    chans = [list(range(12)), [], [], []]
    v = check_seeds("004/Fig3a", [(stats, chans)] * 3, ctx=None, side={"source": "x"})
    assert v.evidence["seeds"] == 3 and v.intervals["fraction"] == (0.03, 0.03)  # identical seeds: zero spread
    assert v.status == "reproduced"  # 3 % of the units, all in one layer (χ² p tiny)
    spread = [(stats, [list(range(3))] * 4)] * 3  # 3 per layer: not concentrated
    assert check_seeds("004/Fig3a", spread, ctx=None, side={"source": "x"}).status != "reproduced"


# ------------------------------------------------------------------------------ the runner
def test_edge_runner_smoke_end_to_end(tmp_path):
    """One smoke job (a handful of steps): the run store writes its record, a second call skips it, the model
    table and the per-seed claim measurements are produced, and an unconverged model's claims read not run."""
    from mamba_recall.chapters.ch4_primacy_recency.runners import edge as E
    from mamba_recall.runstore import finished_runs, run_grid

    jobs = E.jobs_for("cpu-hours", smoke=True, recipes=["d2"])[:1]
    assert jobs[0]["config"]["checkpoint"].startswith("_build/")  # a smoke run never writes results/
    run_grid(E.RUNNER, jobs, store=tmp_path, progress=False, log=lambda m: None)
    assert run_grid(E.RUNNER, jobs, store=tmp_path, progress=False, log=lambda m: None) == []  # resumes: skipped
    (rec,) = finished_runs(jobs, tmp_path)
    res = rec["result"]
    assert set(res["curves"]) == {f"{L}/{v}" for L in (8, 32) for v in E.VARIANTS}
    assert len(res["curves"]["32/random"]) == 32 and res["gate"]["passed"] is False
    table = E._models_table([rec])
    assert table.loc[0, "card"].startswith("Mamba-1, 2 layers, d_model 64, d_state 8, 64 names, trained L 2–24")
    checks = [j for j in E.checks_jobs("cpu-hours", smoke=True, store=tmp_path)]
    assert len(checks) == 1 and checks[0]["config"]["at"] in (8, 32)
    run_grid(E.CHECKS_RUNNER, checks, store=tmp_path, progress=False, log=lambda m: None)
    (done,) = finished_runs(checks, tmp_path)
    assert done["result"]["probes"] == {}  # an unconverged model: no probe is run, every claim reads not run
    from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import EdgeFamily
    from mamba_recall.chapters.ch4_primacy_recency.claims import check_family

    fam = EdgeFamily.from_runs(finished_runs(checks, tmp_path))
    verdicts = [check_family(cid, fam, "d2", record=False) for cid in fam.runs[0]["measurements"]]
    assert verdicts and all(v.status == "not run" and "convergence gate" in v.reason for v in verdicts)
    assert done["result"]["gate"]["passed"] is False and set(done["result"]["gate"]["metrics"]) == set(E.EDGE_GATE)


def test_edge_checks_measure_every_claim_on_a_model_past_its_gate(tmp_path, monkeypatch):
    """The checks job on a (smoke) model let past its gate: every claim of §4.1–§4.4 is measured at the model's
    L_p (or recorded as not measurable with the reason), the slow-state probe is stored, and the registry judges the
    stored measurements."""
    from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import EdgeFamily
    from mamba_recall.claims import STATUSES
    from mamba_recall.chapters.ch4_primacy_recency.claims import check_family
    from mamba_recall.chapters.ch4_primacy_recency.runners import edge as E
    from mamba_recall.chapters.ch4_primacy_recency.runners import edge_checks as C
    from mamba_recall.chapters.ch4_primacy_recency.runners.model_checks import CLAIM_IDS
    from mamba_recall.runstore import finished_runs, run_grid

    jobs = E.jobs_for("cpu-hours", smoke=True, recipes=["d2"])[:1]
    run_grid(E.RUNNER, jobs, store=tmp_path, progress=False, log=lambda m: None)
    gate = E.edge_gate  # the real gate fails on an untrained model; the point here is the pipeline
    monkeypatch.setattr(C, "edge_gate", lambda model, vocab: {**gate(model, vocab), "passed": True})
    for module in (E, C):  # each bundle writer's module (the edge bundle's, the checks bundle's)
        monkeypatch.setattr(module, "smoke_bundle_dir", lambda: tmp_path / "smoke_results")  # not the shared _build/
    monkeypatch.setattr(C, "smoke_run_store", lambda smoke: tmp_path)  # the checks grid's smoke store: this one
    checks = E.checks_jobs("cpu-hours", smoke=True)
    run_grid(E.CHECKS_RUNNER, checks, store=tmp_path, progress=False, log=lambda m: None)
    (rec,) = finished_runs(checks, tmp_path)
    assert set(rec["result"]["measurements"]) == set(CLAIM_IDS)  # (run files store keys sorted)
    assert {"targeted", "layer_matched_mean", "channels"} <= set(rec["result"]["probes"]["slow_states"])
    fam = EdgeFamily.from_runs([rec])
    verdicts = [check_family(cid, fam, "d2", record=False) for cid in CLAIM_IDS]
    assert all(v.status in STATUSES for v in verdicts)
    assert any(v.evidence and v.evidence["seeds"] == 1 for v in verdicts)
    # the bundles the book reads: written, loaded, and the same verdicts re-judged from them

    # one of the grid's smoke jobs ran: the edge bundle only when asked, marked partial (the grid's --partial)
    assert E.write_bundle("cpu-hours", store=tmp_path, smoke=True, log=lambda m: None) is None
    E.write_bundle("cpu-hours", store=tmp_path, smoke=True, log=lambda m: None, partial=True)
    E.write_checks_bundle("cpu-hours", store=tmp_path, smoke=True, log=lambda m: None)  # its one check: complete
    loaded = EdgeFamily("cpu-hours", smoke=True, directory=E.smoke_bundle_dir())
    assert not loaded.missing and loaded.primary is None  # one seed: no recipe can be the primary one
    edge_jobs = E.jobs_for("cpu-hours", smoke=True)
    assert loaded.partial_label().startswith(f"models PARTIAL: 1 of {len(edge_jobs)} jobs (not finished: ")
    assert loaded.status().startswith(loaded.partial_label() + "; ")
    assert len(loaded.cards()) == 1 and set(loaded.curves["recipe"]) == {"d2"}
    again = [check_family(cid, loaded, "d2", record=False) for cid in CLAIM_IDS]
    assert [v.status for v in again] == [v.status for v in verdicts]
    assert len(loaded.probe_table("slow_states")) == 1


@pytest.mark.parametrize("argv", [["--aggregate-only"], ["--no-estimate"]])
def test_edge_checks_run_as_the_declared_grid(argv, tmp_path, monkeypatch, capsys):
    """``ch4_edge_checks`` is a declared experiment: ``grid ch4_edge_checks`` runs (or, ``--aggregate-only``, counts)
    its jobs, one per finished edge model of the grid's store (the committed ones), the run store's ``--only``
    selecting the models checked (``--only d4``: a recipe's), ``--store`` only where the checks' runs go (a scratch
    store holding none of them: no bundle); the edge grid is neither counted nor run. At a preset where no edge model
    has finished, the grid stops naming the command that trains them."""
    from mamba_recall.chapters.ch4_primacy_recency.runners import edge as E
    from mamba_recall.experiment import experiment_named, grid_command
    from mamba_recall.runstore import _cli

    e = experiment_named("ch4_edge_checks")
    assert (e.make_jobs, e.run_job, e.write) == (E.checks_jobs, E.CHECKS_RUNNER, E.write_checks_bundle)
    assert e.command("cpu-hours") == "python -m mamba_recall grid ch4_edge_checks --preset cpu-hours --allow-long"
    jobs = e.grid_jobs("cpu-hours")
    d4 = [j for j in jobs if j["config"]["recipe_name"] == "d4"]
    assert 0 < len(d4) < len(jobs) and {j["experiment"] for j in jobs} == {"ch4_edge_checks"}
    ran = []
    monkeypatch.setattr(_cli, "run_grid", lambda runner, jobs, **kw: ran.append((runner, jobs)))
    grid_command(["ch4_edge_checks", "--preset", "cpu-hours", "--store", str(tmp_path), "--only", "d4", *argv])
    out = capsys.readouterr().out.splitlines()
    if "--aggregate-only" in argv:  # counted, one line: d4's models only
        assert out == [f"{len(d4)} jobs: 0 finished, {len(d4)} left"] and ran == []
    else:  # d4's models only are run
        assert ran == [(E.CHECKS_RUNNER, d4)]
    assert not list(tmp_path.glob("*.json"))  # no check finished in the scratch store: nothing to aggregate
    with pytest.raises(SystemExit, match=r"--only d9: no job of ch4_edge_checks at preset cpu-hours has the value "):
        grid_command(["ch4_edge_checks", "--preset", "cpu-hours", "--only", "d9"])  # no model of that recipe
    with pytest.raises(SystemExit):
        grid_command(["ch4_edge_checks", "--preset", "ci"])
    err = capsys.readouterr().err
    assert "ch4_edge_checks has no run-store grid at preset ci: its jobs are the checks of ch4_edge's finished" in err
    assert "train them first: python -m mamba_recall grid ch4_edge --preset ci --allow-long" in err


def test_the_edge_runner_s_checks_are_the_grid_command_of_ch4_edge_checks(monkeypatch):
    """``runners.edge --checks`` (the spelling committed pages print) and ``runners.edge_checks`` are ``python -m
    mamba_recall grid ch4_edge_checks`` under their own commands, default preset ``cpu-hours``; ``--recipes R`` is
    the grid's ``--only R``."""
    from mamba_recall.chapters.ch4_primacy_recency.runners import edge as E, edge_checks as C

    seen = []
    monkeypatch.setattr(E, "grid_command", lambda argv, **kw: seen.append((argv, kw)) or 0)
    assert E.main(["--checks", "--preset", "cpu-hours", "--recipes", "d4", "--aggregate-only"]) == 0
    prog = f"{E.runner_command('ch4_edge')} --checks"
    assert seen == [
        (
            ["--preset", "cpu-hours", "--only", "d4", "--aggregate-only"],
            {"name": "ch4_edge_checks", "prog": prog, "default_preset": "cpu-hours"},
        )
    ]
    assert C.DEPENDS_ON == ("ch4_edge",)  # reproduce checks the edge models after training them
    assert "ch4_edge_checks" in C.main.__doc__ and "``cpu-hours``" in C.main.__doc__


def test_the_checks_of_another_store_s_edge_models_are_refused(tmp_path):
    """The grid's jobs are the checks of its own store's edge models: a ``--store`` holding other finished edge
    models (here one of the committed 26) stops the checks bundle, naming both and what to do, instead of
    aggregating checks of models it does not hold."""
    from mamba_recall.chapters.ch4_primacy_recency.runners import edge as E
    from mamba_recall.runstore import RUNS_DIR

    store = tmp_path / "runs"
    (store / "ch4_edge").mkdir(parents=True)
    one = sorted((RUNS_DIR / "ch4_edge").glob("*.json"))[0]
    (store / "ch4_edge" / one.name).symlink_to(one)
    with pytest.raises(ValueError, match=r"holds 1 finished ch4_edge models at preset cpu-hours, other than the 26"):
        E.write_checks_bundle("cpu-hours", store=store, log=lambda m: None)
    assert not list(tmp_path.glob("*.json"))


def test_the_grid_refuses_another_store_s_edge_models_before_any_check_runs(tmp_path, monkeypatch, capsys):
    """``grid ch4_edge_checks --store S`` with S holding other finished edge models stops with one line before any
    job runs (the experiment's ``check_store``), not after its checks have run into S."""
    from mamba_recall.experiment import experiment_named, grid_command
    from mamba_recall.runstore import RUNS_DIR, _cli

    assert experiment_named("ch4_edge_checks").check_store is not None
    store = tmp_path / "runs"
    (store / "ch4_edge").mkdir(parents=True)
    one = sorted((RUNS_DIR / "ch4_edge").glob("*.json"))[0]
    (store / "ch4_edge" / one.name).symlink_to(one)
    ran = []
    monkeypatch.setattr(_cli, "run_grid", lambda runner, jobs, **kw: ran.append(jobs))
    with pytest.raises(SystemExit):
        grid_command(["ch4_edge_checks", "--preset", "cpu-hours", "--store", str(store), "--no-estimate"])
    assert ran == [] and "other than the 26" in capsys.readouterr().err


def test_the_edge_runner_without_checks_is_the_grid_command_of_ch4_edge(monkeypatch):
    """Training the edge family is the declared experiment's grid (``python -m mamba_recall grid ch4_edge``): the
    runner without ``--checks`` is that command under its own name; its ``--recipes`` is the grid's ``--only``."""
    from mamba_recall.chapters.ch4_primacy_recency.runners import edge as E
    from mamba_recall.experiment import experiment_named

    seen = []
    monkeypatch.setattr(E, "grid_command", lambda argv, **kw: seen.append((argv, kw)) or 0)
    assert E.main(["--preset", "cpu-hours", "--aggregate-only"]) == 0
    assert seen == [
        (
            ["--preset", "cpu-hours", "--aggregate-only"],
            {"name": "ch4_edge", "prog": E.runner_command("ch4_edge"), "default_preset": "cpu-hours"},
        )
    ]
    monkeypatch.undo()
    e = experiment_named("ch4_edge")
    assert e.write is E.write_bundle and e.run_job == E.RUNNER
    assert e.command("cpu-hours") == "python -m mamba_recall grid ch4_edge --preset cpu-hours --allow-long"


def test_the_edge_runners_recipes_spelling_is_the_grids_only(monkeypatch):
    """The review's records print ``runners.edge ... --recipes d4_zinit``: it runs as the grid's ``--only d4_zinit``
    (the same jobs), not an argparse error."""
    from mamba_recall.chapters.ch4_primacy_recency.runners import edge

    seen = {}
    monkeypatch.setattr(edge, "grid_command", lambda argv, **kw: seen.setdefault("argv", argv) and 0)
    edge.main(["--preset", "cpu-hours", "--allow-long", "--recipes", "d4_zinit"])
    assert seen["argv"] == ["--preset", "cpu-hours", "--allow-long", "--only", "d4_zinit"]
