"""Chapter 4's edge family, its Mamba-2 recipe ``m2``: App. F's head claims (paper 004, App. F: the U, Eq. 9's
long-term heads, Fig. 13b's first-triple head ablation) measured by the checks runner at each model's pressure
length, judged over the recipe's seeds; the Mamba-1 checks untouched."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import MAMBA2_RECIPE, EdgeFamily
from mamba_recall.claims import STATUSES
from mamba_recall.chapters.ch4_primacy_recency.claims import MAMBA2_CLAIMS, check_family, family_table
from mamba_recall.chapters.ch4_primacy_recency.runners import edge as E
from mamba_recall.chapters.ch4_primacy_recency.runners import edge_checks as C
from mamba_recall.chapters.ch4_primacy_recency.runners.model_checks import CLAIM_IDS, CLAIM_IDS_M2
from mamba_recall.runstore import finished_runs, job_config, run_grid


def _quiet(_):
    return None


def test_every_checks_job_is_committed_with_its_config():
    """Every checks job of the committed family is finished in the store under its key, with the config the job has
    now (a Mamba-1 job without ``arch``, measured on §4.1–§4.4's claims with the paper's random distractor tokens; a
    Mamba-2 job on App. F's), each with the untrained twin as its declared null control."""
    import json

    from mamba_recall.runstore import RUNS_DIR

    jobs = E.checks_jobs("cpu-hours")
    assert jobs
    for job in jobs:
        stored = json.loads((RUNS_DIR / E.CHECKS / f"{job['key']}.json").read_text())
        c = job["config"]
        assert stored["config"] == c and c["null_control"] == "untrained_twin"
        mamba2 = c["recipe_name"] == MAMBA2_RECIPE
        assert ("arch" in c) == mamba2 and (c.get("distractor_pool") == "content") != mamba2
        assert set(stored["result"]["measurements"]) == set(CLAIM_IDS_M2 if mamba2 else CLAIM_IDS)
    assert E.is_mamba2(E.edge_sizes("cpu-hours", False)["recipes"]["m2"])
    assert not any(E.is_mamba2(r) for name, r in E.edge_sizes("cpu-hours", False)["recipes"].items() if name != "m2")


def test_m2_smoke_end_to_end(tmp_path, monkeypatch):
    """One smoke m2 model (a handful of steps), trained through the run store, then its checks job: with the real
    gate it fails and App. F's three claims read not run; let past the gate, the three claims are measured at the
    model's L_p with notebook 4.6's measurement functions, no Mamba-1 probe runs, and the registry judges the stored
    measurements over the seeds of m2 (one seed: capped below reproduced) and from the bundles the book reads."""

    jobs = E.jobs_for("cpu-hours", smoke=True, recipes=["m2"])[:1]
    run_grid(E.RUNNER, jobs, store=tmp_path, progress=False, log=_quiet)
    (trained,) = finished_runs(jobs, tmp_path)
    assert E._models_table([trained]).loc[0, "card"].startswith("Mamba-2, 2 layers, d_model 64, d_state 8")
    (job,) = E.checks_jobs("cpu-hours", smoke=True, store=tmp_path)
    assert job["config"]["arch"] == "mamba2" and job["config"]["recipe_name"] == "m2"

    # the real gate: an untrained model has not learned the binding, so every App. F claim reads not run
    config = job_config(job)  # typed, as the job function receives it
    failed = E.run_checks_job(config, job["seed"])
    assert failed["gate"]["passed"] is False and failed["probes"] == {}
    assert set(failed["measurements"]) == set(CLAIM_IDS_M2)
    assert all("convergence gate" in m["not_run"] for m in failed["measurements"].values())

    # a Mamba-2 checkpoint under a Mamba-1 checks job (no arch) is refused, naming the fix
    with pytest.raises(ValueError, match="checks_jobs"):
        E.run_checks_job(replace(config, arch=None), job["seed"])

    gate = E.edge_gate  # the point here is the pipeline past the gate
    monkeypatch.setattr(C, "edge_gate", lambda model, vocab: {**gate(model, vocab), "passed": True})
    for module in (E, C):  # each bundle writer's module (the edge bundle's, the checks bundle's)
        monkeypatch.setattr(module, "smoke_bundle_dir", lambda: tmp_path / "smoke_results")  # not the shared _build/
    monkeypatch.setattr(C, "smoke_run_store", lambda smoke: tmp_path)  # the checks grid's smoke store: this one
    run_grid(E.CHECKS_RUNNER, [job], store=tmp_path, progress=False, log=_quiet)
    (rec,) = finished_runs([job], tmp_path)
    res = rec["result"]
    assert set(res["measurements"]) == set(MAMBA2_CLAIMS) and res["probes"] == {}
    assert res["at"] == job["config"]["at"]
    measured = [cid for cid, m in res["measurements"].items() if "not_run" not in m]
    assert "004/Fig13a" in measured  # the head statistic needs no baseline: always measured
    fig13a = res["measurements"]["004/Fig13a"]["values"]
    assert 0.0 <= fig13a["fraction"] <= 1.0
    if "004/Fig13b" in measured:  # the ablation ran at L_p
        assert f"L={job['config']['at']}:" in res["measurements"]["004/Fig13b"]["shown"]

    fam = EdgeFamily.from_runs([rec])
    verdicts = [check_family(cid, fam, record=False) for cid in MAMBA2_CLAIMS]  # recipe None → m2
    assert [v.claim_id for v in verdicts] == list(MAMBA2_CLAIMS)
    assert all(v.status in STATUSES and v.status != "reproduced" for v in verdicts)  # one seed: capped
    assert any(v.evidence and v.evidence["seeds"] == 1 and "m2 seed 0" in v.ours for v in verdicts)
    with pytest.raises(ValueError, match="Mamba-2 recipe"):
        check_family("004/Fig2", fam, "m2", record=False)  # a Mamba-1 claim is not measured on m2

    # the bundles the book reads: written, loaded, re-judged to the same verdicts; m2 alone in its subset
    E.write_bundle("cpu-hours", store=tmp_path, smoke=True, log=_quiet, partial=True)  # one of the smoke grid's jobs
    E.write_checks_bundle("cpu-hours", store=tmp_path, smoke=True, log=_quiet)
    loaded = EdgeFamily("cpu-hours", smoke=True, directory=E.smoke_bundle_dir())
    assert not loaded.missing and loaded.primary is None  # m2 is never the primary (Mamba-1) recipe
    again = [check_family(cid, loaded, record=False) for cid in MAMBA2_CLAIMS]
    assert [v.status for v in again] == [v.status for v in verdicts]
    only = loaded.only("m2")
    assert not only.missing and set(only.curves["recipe"]) == {"m2"} and len(only.cards()) == 1
    table = family_table(loaded)
    assert list(table.index) == list(MAMBA2_CLAIMS) and table.notna().all().all()


def test_m2_not_committed_reads_not_run_naming_the_command():
    """Without any m2 model in the family (as before its seeds land), App. F's claims read not run and name the
    commands that train and check m2; the Mamba-1 verdicts are unaffected; the m2 subset says what is missing."""
    fam = EdgeFamily.from_runs([])
    fam.runs = [
        {"recipe": "d2", "seed": s, "L_p": 8, "at": 8, "gate": {"passed": True}, "measurements": {}} for s in range(3)
    ]
    for cid in MAMBA2_CLAIMS:
        v = check_family(cid, fam, record=False)
        assert v.status == "not run"
        assert "`python -m mamba_recall grid ch4_edge --preset cpu-hours --allow-long`" in v.reason
        assert "--checks --allow-long --only m2`" in v.reason
    fam.primary = None
    v = check_family("004/Fig2", fam, record=False)  # Mamba-1: the primary rule, as before
    assert v.status == "not run" and "3 seeds" in v.reason
    missing = EdgeFamily("cpu-hours", smoke=True, directory="/nonexistent")
    assert check_family("004/Fig13a", missing, record=False).reason.startswith("the edge family is not committed")
    assert missing.only("m2").curves is None and "--checks" in missing.only("m2").missing


def test_m2_verdict_is_capped_below_three_seeds():
    """The judge's normal rule on m2's stored measurements: Fig. 13a's conditions holding on one or two seeds are
    capped at inconclusive (symmetric judging: a trained-model verdict, in either direction, needs 3 seeds and an
    interval; the reason names the seeds and that the means point to reproduced); on three seeds, reproduced."""
    from mamba_recall.claims import Control, Evidence, Measurement, measurement_record

    def stored(frac, p):
        ev = Evidence("cpu-hours", "cpu", 1, "one identification prompt, 2 layers", "m2.pt")
        null = Measurement({"fraction": 0.5, "concentration_p": 0.9, "layer_M_p": 0.9}, "twin", ev)
        m = Measurement({"fraction": frac, "concentration_p": p, "layer_M_p": p}, "x", ev)
        return measurement_record(replace(m, control=Control("null", "the untrained twin", null)))

    def family(n):
        fam = EdgeFamily.from_runs([])
        fam.runs = [
            {"recipe": "m2", "seed": s, "L_p": 16, "at": 16, "measurements": {"004/Fig13a": stored(0.0625, 1e-4)}}
            for s in range(n)
        ]
        return fam

    for n in (1, 2):
        v = check_family("004/Fig13a", family(n), record=False)
        assert v.status == "inconclusive" and v.evidence["seeds"] == n, (n, v.status)
        assert f"on {n} seed" in v.reason and "'reproduced'" in v.reason, (n, v.reason)
    v = check_family("004/Fig13a", family(3), record=False)
    assert v.status == "reproduced" and v.evidence["seeds"] == 3 and "m2 seed 2 (L_p 16" in v.ours
