"""Chapter 1's run-store grid (chapters/ch1_gradient_dynamics/runners/grid.py, its parts the declared experiments
run by ``python -m mamba_recall grid <experiment>``): a smoke grid that resumes, its bundles' intervals,
the per-seed claim records, the causal probe, the pair-convolution Transformer and the plateau stop."""

from __future__ import annotations

import json

import pytest
import torch

from mamba_recall.chapters.ch1_gradient_dynamics.pipelines.forgetting_probe import noise_forgetting_probe
from mamba_recall.chapters.ch1_gradient_dynamics.claims import K1_CLAIMS
from mamba_recall.chapters.ch1_gradient_dynamics.runners import grid as c1
from mamba_recall.chapters.ch1_gradient_dynamics.runners import (
    grid_jobs as c1_jobs,
)  # where checkpoint_path reads its folder
from mamba_recall.chapters.ch1_gradient_dynamics.runners import grid_bundles as c1_bundles
from mamba_recall.experiment import grid_command
from mamba_recall.theory.latest_value_thm2 import thm2_construction_probe
from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import FULL_NAME
from mamba_recall.runstore import job_config


#: Chapter 1's experiments at cpu-hours (its grid's parts there), run by their names
CPU_HOURS = [c1_jobs.PARTS[p] for p in c1_jobs.DEFAULT_PARTS["cpu-hours"]]


def _smoke(root, *experiments, part_logs=None):
    """``python -m mamba_recall grid <experiments> --preset cpu-hours --smoke`` into ``root`` (store ``runs``,
    checkpoints ``checkpoints``, bundles ``smoke/results``); the printed lines appended to ``part_logs``."""
    mp = pytest.MonkeyPatch()
    mp.setattr(c1_jobs, "SMOKE_CHECKPOINT_DIR", root / "checkpoints")
    mp.setattr(c1_bundles, "BUILD_DIR", root)  # a smoke bundle goes to BUILD_DIR / smoke / results
    logs = [] if part_logs is None else part_logs
    mp.setattr("builtins.print", lambda *a, **k: logs.append(" ".join(str(x) for x in a)))
    try:
        args = [*experiments, "--preset", "cpu-hours", "--smoke", "--store", str(root / "runs"), "--no-estimate"]
        assert grid_command(args) == 0
    finally:
        mp.undo()
    return logs


@pytest.fixture(scope="module")
def smoke_grid(tmp_path_factory):
    """The whole cpu-hours structure at smoke size (4 steps, 16 sequences, 2 seeds), run by the grid command of its
    experiments: run, then delete one job's file and run the same command again."""
    root = tmp_path_factory.mktemp("c1")
    store, out = root / "runs", root / "smoke" / "results"
    logs = _smoke(root, *CPU_HOURS)
    n_first = len(logs)
    files = sorted(store.rglob("*.json"))
    first = {p: p.stat().st_mtime_ns for p in files}
    victim = files[0]
    victim.unlink()
    _smoke(root, *CPU_HOURS, part_logs=logs)
    return dict(root=root, store=store, out=out, logs=logs, n_first=n_first, first=first, victim=victim)


def test_smoke_grid_resumes_only_the_missing_job(smoke_grid):
    jobs = c1.jobs_for("cpu-hours", smoke=True)
    # k1, k2, k4 × 2 smoke seeds + T=128 × κ ∈ {1, 4} × 5 models × 2 seeds + the full Mamba LM × 2 seeds
    # + the learned W_o × 2 targets × 2 seeds + row 3 size-matched × 2 conv widths × κ ∈ {1, 4} × 2 seeds
    # + the full Mamba over the doubled one-hot embedding × 2 seeds
    assert len(jobs) == 3 * 2 + 2 * 5 * 2 + 2 + 2 * 2 + 2 * 2 * 2 + 2
    logs = smoke_grid["logs"]
    assert CPU_HOURS == [
        "ch1_mechanism",
        "ch1_table1",
        "ch1_full_mamba",
        "ch1_wo",
        "ch1_table1_matched",
        "ch1_full_onehot",
    ]  # the open review's added Table 1 rows (ch1_table1_rope, ch1_table1_seeds) run when named
    counts = {e: sum(j["experiment"] == e for j in jobs) for e in CPU_HOURS}
    assert sum(counts.values()) == len(jobs) and counts["ch1_table1"] == 2 * 5 * 2
    first_run = "\n".join(logs[: smoke_grid["n_first"]])  # each experiment: a stage of the one command, counted alone
    for n in counts.values():
        assert f"{n} jobs: 0 finished (skipped), {n} left" in first_run
    n_victim = counts[smoke_grid["victim"].parent.name]
    assert f"{n_victim} jobs: {n_victim - 1} finished (skipped), 1 left" in "\n".join(logs)
    for path, mtime in smoke_grid["first"].items():
        if path != smoke_grid["victim"]:
            assert path.stat().st_mtime_ns == mtime, f"{path.name} was run again"
    assert smoke_grid["victim"].exists()
    ckpts = sorted(p.name for p in (smoke_grid["root"] / "checkpoints").glob("*.pt"))
    assert "ch1_k1_cpu-hours_smoke_seed1.pt" in ckpts and "ch1_full_mamba_cpu-hours_smoke_seed1.pt" in ckpts
    assert "ch1_full_onehot_cpu-hours_smoke_seed1.pt" in ckpts
    assert len(ckpts) == 8 + 4 + 2  # + the learned-W_o models + the doubled one-hot full models


def test_bundles_have_interval_columns(smoke_grid):
    from mamba_recall import results

    table = results.load_bundle("ch1_table1_cpu-hours_smoke", directory=smoke_grid["out"])
    acc = table.tables["accuracy"]
    assert table.data["complete"] and table.config["preset"] == "cpu-hours"
    assert {"accuracy_mean", "accuracy_ci_low", "accuracy_ci_high", "accuracy_per_seed", "n_seeds"} <= set(acc)
    assert set(acc.model) == {"mamba", "tf2_nope", "tf1_conv", "tf2_conv_rope", "tf1_pair"}
    assert (acc.n_seeds == 2).all() and (acc.accuracy_ci_low <= acc.accuracy_ci_high).all()
    assert len(table.tables["runs"]) == 20
    mech = results.load_bundle("ch1_mechanism_cpu-hours_smoke", directory=smoke_grid["out"])
    assert {"test_accuracy_ci_low", "test_accuracy_ci_high"} <= set(mech.tables["models"])
    # the bundle holds the seeds' measurements only; the page combines them at check time (seeds_claims_view)
    from mamba_recall.chapters.ch1_gradient_dynamics.claims import seeds_claims_view

    assert "claims" not in mech.tables and set(mech.data["measurements"]) == set(K1_CLAIMS) | {"000/Fig5", "000/Fig6"}
    claims = seeds_claims_view(mech, [*K1_CLAIMS, "000/Fig5", "000/Fig6"]).reset_index()
    assert {"mean", "ci_low", "ci_high", "per_seed"} <= set(claims)
    assert set(claims.claim) == set(K1_CLAIMS) | {"000/Fig5", "000/Fig6"}
    assert {"probe_accuracy_after_ci_low", "probe_accuracy_after_ci_high"} <= set(mech.tables["probe"])


def test_stored_measurements_are_judged_over_seeds_and_a_smoke_run_is_no_evidence(smoke_grid):
    from mamba_recall import results
    from mamba_recall.claims import check_stored

    mech = results.load_bundle("ch1_mechanism_cpu-hours_smoke", directory=smoke_grid["out"])
    stored = mech.data["measurements"]["000/Fig4c"]
    assert stored["names"] == ["k1 seed 0", "k1 seed 1"]
    v = check_stored("000/Fig4c", stored["records"], stored["names"], record=False)
    assert v.status == "not run" and "smoke" in v.reason
    assert v.evidence["seeds"] == 2 and v.evidence["tier"] == "cpu-hours"
    assert "write_over_noise" in v.intervals


def test_noise_forgetting_probe_recomputes_the_model_and_breaks_the_erase():
    """On the committed ci |K| = 1 model: the step-by-step recomputation equals the model's scan, 'before' is the
    model's own query accuracy, and removing the erase at writes costs accuracy."""
    from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import load_checkpoint
    from mamba_recall.tasks.latest_value import latest_value_batch
    from mamba_recall.train import evaluate

    model, meta = load_checkpoint("k1", "ci")
    c = meta["config"]
    batch = latest_value_batch(16, c["vocab_size"], 1, c["seq_len"], c["max_noise"], seed=1000)
    p = noise_forgetting_probe(model, batch)
    assert p["probe_recompute_error"] <= 1e-5
    assert p["probe_accuracy_before"] == pytest.approx(evaluate(model, batch.inputs, batch.query_labels), abs=1e-9)
    assert p["probe_noise_pairs"] > 0 and p["probe_rebound_queries"] > 0
    assert p["probe_accuracy_no_write_erase"] < p["probe_accuracy_before"] - 0.1
    from mamba_recall.models.simplified_recall import m2

    with pytest.raises(ValueError, match="ch1_k1"):
        noise_forgetting_probe(m2(8, 2), batch)


def test_thm2_construction_returns_the_plurality_value_not_the_latest():
    """Paper 003's Theorem 2 construction on paper 000's task: a hand sequence where the key's latest value (6) is
    not its most frequent one (5) gets 5; on |K| = 1 batches every answer is the plurality value, and the trained ci
    model's accuracy on the same queries is reported beside it."""
    from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import load_checkpoint
    from mamba_recall.tasks.latest_value import LatestValueBatch, latest_value_batch, latest_value_labels

    x = torch.tensor([[0, 5, 3, 0, 5, 2, 0, 6, 4, 0]])  # key 0 bound to 5, 5, 6, then queried
    q = torch.as_tensor(latest_value_labels(x[0].numpy(), 1)[0])[None]
    batch = LatestValueBatch(x, q, q, "masked", 8, 1)
    p = thm2_construction_probe(batch)
    assert q[0, -1] == 6 and p["thm2_accuracy"] < 1 and p["thm2_equals_plurality"] == 1.0
    assert p["bindings_per_sequence"] == 3
    model, meta = load_checkpoint("k1", "ci")
    c = meta["config"]
    batch = latest_value_batch(16, c["vocab_size"], 1, c["seq_len"], c["max_noise"], seed=1000)
    p = thm2_construction_probe(batch, model)
    assert p["thm2_equals_plurality"] == 1.0 and p["thm2_accuracy"] == p["plurality_accuracy"]
    assert p["queries"] == int((batch.query_labels >= 0).sum()) and p["model_accuracy"] > p["thm2_accuracy"]


def test_pair_transformer_sees_the_mambas_pair():
    """tf1_pair's input at t is W_in [e_{x_{t−1}}; e_{x_t}] (zero before the first token), as App. B's fixed
    convolution."""
    from mamba_recall.chapters.ch1_gradient_dynamics.training.table1 import build
    from mamba_recall.presets import experiment

    sizes = experiment("ch1_table1", "cpu-hours")
    model = build("tf1_pair", 16, 1, 32, sizes, 0)
    ids = torch.tensor([[3, 5, 5, 0, 9]])
    W = model.embedding.proj.weight  # (d_model, 2|V|)
    x = model.embedding(ids)
    assert torch.allclose(x[0, 0], W[:, 16 + 3])
    assert torch.allclose(x[0, 2], W[:, 5] + W[:, 16 + 5])
    assert torch.allclose(x[0, 4], W[:, 0] + W[:, 16 + 9])
    assert model(ids).shape == (1, 5, 16) and len(model.layers) == 1 and model.positional == "none"


def test_plateau_stop_and_its_bad_input():
    from mamba_recall.train import Recipe, Stopping, train

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(4, 4))
    x = torch.randint(0, 4, (8, 6))
    y = torch.randint(0, 4, (8, 6))  # random labels: the accuracy cannot keep growing at lr 1e-6
    res = train(
        model,
        lambda s: (x, y),
        steps=200,
        recipe=Recipe(lr=1e-6, weight_decay=0.0, schedule="constant"),
        stop=Stopping(eval_every=5, patience=3, min_delta=0.01),
        eval_batch=(x, y),
        progress=False,
    )
    assert res.stopped_early and res.steps_run == 20  # the first evaluation sets the best; 3 more without growth
    with pytest.raises(ValueError, match="patience"):
        Stopping(patience=0)
    with pytest.raises(ValueError, match="patience needs eval_batch"):
        train(model, lambda s: (x, y), steps=2, stop=Stopping(patience=2), progress=False)


def test_cpu_hours_sizes_are_the_papers():
    from mamba_recall.presets import experiment

    for name, keys in (("k1", 1), ("k2", 2), ("k4", 4)):
        s = experiment(f"ch1_{name}", "cpu-hours")
        assert (s["seq_len"], s["target"], s["num_keys"], s["max_noise"], s["seeds"]) == (256, "identity", keys, 3, 3)
    assert experiment("ch1_k4", "cpu-hours")["vocab_size"] == 16
    t = experiment("ch1_table1", "cpu-hours")
    assert t["seq_lens"] == [128] and t["early_stop"] == "train_plateau" and t["seeds"] == 3
    json.dumps(c1.jobs_for())  # every job is plain JSON (the run store's key)


def test_notebook_helpers_fall_back_to_the_one_seed_evidence(smoke_grid, tmp_path):
    """Without a committed cpu-hours bundle (or with a smoke one) the pages judge as before; with a bundle, over
    its seeds."""
    import pandas as pd

    from mamba_recall import results
    from mamba_recall.claims import check
    from mamba_recall.chapters.ch1_gradient_dynamics.claims import check_table1, load_seeds
    from mamba_recall.chapters.ch1_gradient_dynamics.claims import check_over_seeds
    from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import load_checkpoint

    said = []
    assert load_seeds("ch1_mechanism", said.append, directory=tmp_path) is None
    assert said[-1].startswith("no result bundle ch1_mechanism_cpu-hours") and "one-seed evidence" in said[-1]
    # a grid still running (results.evidence's BundleIncomplete): the one-seed evidence, with the command finishing it
    running = "python -m mamba_recall grid ch1_mechanism --preset cpu-hours --allow-long"
    data = {"complete": False, "jobs_finished": 3, "jobs_total": 9}
    results.save_bundle("ch1_mechanism_cpu-hours", data, {"preset": "cpu-hours"}, command=running, directory=tmp_path)
    assert load_seeds("ch1_mechanism", said.append, directory=tmp_path) is None
    assert "incomplete: 3 of 9 jobs" in said[-1] and running in said[-1] and "one-seed evidence" in said[-1]
    (tmp_path / "ch1_mechanism_cpu-hours.json").write_text("{")  # corrupt: stops, never the weaker evidence
    with pytest.raises(results.BundleError) as err:
        load_seeds("ch1_mechanism", said.append, directory=tmp_path)
    assert not isinstance(err.value, results.BundleMissing)
    smoke = load_seeds("ch1_mechanism", said.append, directory=smoke_grid["out"], preset="cpu-hours_smoke")
    assert smoke is None and "smoke run" in said[-1]
    _, meta = load_checkpoint("k1", "paper")
    assert check_over_seeds("000/Sec3-accuracy", None, meta, record=False) == check(
        "000/Sec3-accuracy", meta, record=False
    )
    bundle = results.load_bundle("ch1_table1_cpu-hours_smoke", directory=smoke_grid["out"])
    v = check_table1("000/Table1-mamba", bundle, pd.DataFrame(), None, record=False)
    assert v.evidence["seeds"] == 2 and v.evidence["tier"] == "cpu-hours" and "min_accuracy_kappa1" in v.intervals


# ------------------------------------------------------------------ App. B, Fig. 7 on the full Mamba LM (part full_mamba)
def test_existing_parts_keep_their_jobs():
    """Adding the full_mamba part leaves the other parts' jobs (hence their run-store keys) as they were: the same
    keys in the same order whether or not full_mamba is picked, and each part selectable on its own."""
    from mamba_recall.runstore import job_key

    both = [job_key(j) for j in c1.jobs_for(parts=["models", "table1"])]
    everything = [job_key(j) for j in c1.jobs_for()]
    assert everything[: len(both)] == both and len(both) == 9 + 30 and len(everything) == len(both) + 3 + 10 + 12 + 3
    full = c1.jobs_for(parts=["full_mamba"])
    assert [j["experiment"] for j in full] == [c1.FULL_EXPERIMENT] * 3 and [j["seed"] for j in full] == [0, 1, 2]
    assert [job_key(j) for j in full] == everything[len(both) : len(both) + 3]
    # issue 31's parts: 5 seeds × 2 targets of the learned W_o; 2 conv widths × 2 κ × 3 seeds of row 3, size-matched
    wo = c1.jobs_for(parts=["wo"])
    assert sorted({j["config"]["sizes"]["target"] for j in wo}) == ["identity", "masked"] and len(wo) == 10
    assert all(j["config"]["sizes"]["seq_len"] == 256 and j["config"]["sizes"]["vocab_size"] == 8 for j in wo)
    matched = c1.jobs_for(parts=["table1_matched"])
    assert sorted({j["config"]["sizes"]["conv_width"] for j in matched}) == [2, 4] and len(matched) == 12
    assert {j["config"]["sizes"]["tf_d_model"] for j in matched} == {8}
    onehot = c1.jobs_for(parts=["full_onehot"])  # the full Mamba over the doubled one-hot embedding, 3 seeds
    assert [j["experiment"] for j in onehot] == [c1.ONEHOT_EXPERIMENT] * 3
    assert {job_key(j) for j in onehot} <= set(everything)
    assert {j["config"]["sizes"]["embedding"] for j in onehot} == {"doubled_one_hot"}
    with pytest.raises(ValueError, match="full_mamba"):
        c1.jobs_for(parts=["fig7"])


def test_full_mamba_smoke_bundle(smoke_grid):
    """The smoke grid's full-Mamba bundle: 2 seeds, the readout matrices (|V| × 2|V| per seed, trained and at
    initialisation) finite, accuracies in [0, 1], cosines in [−1, 1], the 000/Fig7-full records judged over the seeds
    (not run: a smoke run is no evidence)."""
    import numpy as np

    from mamba_recall import results
    from mamba_recall.claims import check_stored

    b = results.load_bundle("ch1_full_mamba_cpu-hours_smoke", directory=smoke_grid["out"])
    assert b.data["complete"] and b.data["jobs_total"] == 2 and b.config["sizes"]["d_state"] == 16
    ro = b.tables["readout"]
    assert len(ro) == 2 * 2 * 8 * 16 and set(ro.stage) == {"trained", "init"}
    assert ro.row.max() == 7 and ro.col.max() == 15 and np.isfinite(ro.value).all()
    models = b.tables["models"]
    assert models.test_accuracy_mean.between(0, 1).all() and (models.n_seeds == 2).all()
    stored = b.data["measurements"]["000/Fig7-full"]
    assert stored["names"] == ["full_mamba seed 0", "full_mamba seed 1"]
    for rec in stored["records"]:
        v = rec["values"]
        assert -1 <= v["centred_cosine"] <= 1 and -1 <= v["init_centred_cosine"] <= 1 and 0 <= v["accuracy"] <= 1
    verdict = check_stored("000/Fig7-full", stored["records"], stored["names"], record=False)
    assert verdict.status == "not run" and "smoke" in verdict.reason and "centred_cosine" in verdict.intervals
    from mamba_recall.chapters.ch1_gradient_dynamics.claims import seeds_claims_view

    claims = seeds_claims_view(b, ["000/Fig7-full"]).reset_index()
    assert "claims" not in b.tables  # combined at check time, never while the bundle is written
    assert set(claims.metric) >= {"centred_cosine", "first_half_diag", "second_half_diag", "accuracy"}
    acc = claims.set_index("metric").loc["accuracy"]
    assert 0 <= acc.ci_low <= acc.ci_high <= 1  # an accuracy's interval is clipped to its range


def test_full_mamba_job_is_deterministic_and_its_numbers_are_its_models(tmp_path, monkeypatch):
    """Two runs of the same smoke job give the same numbers bit for bit; another seed gives other ones; the stored
    readout is the saved checkpoint's pair_readout, and the cosine the claim records is that matrix's."""
    from mamba_recall.chapters.ch1_gradient_dynamics.pipelines.full_mamba_readout import pair_readout
    from mamba_recall.analysis.recall_probes import wo_centred_cosine

    monkeypatch.setattr(c1_jobs, "SMOKE_CHECKPOINT_DIR", tmp_path)
    job = c1.jobs_for(smoke=True, parts=["full_mamba"])[0]
    config = job_config(job)  # typed, as the job function receives it
    a = c1.run_full_job(config, 0)
    b = c1.run_full_job(config, 0)
    other = c1.run_full_job(config, 1)
    assert a["readout"] == b["readout"] and a["test_accuracy"] == b["test_accuracy"] and a["sha256"] == b["sha256"]
    assert a["readout"] != other["readout"] and a["readout_init"] != other["readout_init"]
    M = torch.tensor(a["readout"], dtype=torch.float64)
    assert M.shape == (8, 16) and torch.isfinite(M).all() and 0 <= a["test_accuracy"] <= 1 and a["steps_run"] == 4
    model, meta = c1.load_seed_checkpoint(FULL_NAME, "cpu-hours", 0, smoke=True)
    assert torch.equal(pair_readout(model), M) and meta["config"]["d_model"] == 16
    rec = a["measurements"]["000/Fig7-full"]
    assert rec["values"]["centred_cosine"] == wo_centred_cosine(M)["centred_cosine"] and rec["evidence"]["smoke"]
    step, ev = c1.measure_job(job["config"])
    assert step > 0 and ev > 0


def test_full_mamba_runs_alone_by_its_name(tmp_path):
    """``grid ch1_full_mamba`` runs its 2 smoke jobs and writes its bundle only, recording that grid command."""
    import json as json_

    logs = _smoke(tmp_path, "ch1_full_mamba")
    assert "2 jobs: 0 finished (skipped), 2 left" in "\n".join(logs)
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [c1.FULL_EXPERIMENT]
    bundles = sorted((tmp_path / "smoke" / "results").glob("*.json"))
    assert [p.name for p in bundles] == ["ch1_full_mamba_cpu-hours_smoke.json"]
    command = json_.loads(bundles[0].read_text())["command"]
    assert command == "python -m mamba_recall grid ch1_full_mamba --preset cpu-hours --allow-long"


def test_the_checkpoints_runner_retrains_only_its_models_and_names_the_grid_for_the_rest(tmp_path, monkeypatch, capsys):
    """The runner ``ch1_checkpoints`` given ``--only k1`` (the command each checkpoint's sidecar records) is the grid
    of the experiment ``ch1_checkpoints`` with the run store's ``--only``: one of its jobs runs, the others are left as they are; ``--preset cpu-hours``
    stops with argparse's one line naming the grid command of Chapter 1's cpu-hours experiments, running nothing; the
    runner has no ``--parts``."""
    from mamba_recall.chapters.ch1_gradient_dynamics.runners import checkpoints

    logs = []
    monkeypatch.setattr(c1_jobs, "SMOKE_CHECKPOINT_DIR", tmp_path / "checkpoints")
    monkeypatch.setattr(c1_bundles, "BUILD_DIR", tmp_path)
    monkeypatch.setattr("builtins.print", lambda *a, **k: logs.append(" ".join(str(x) for x in a)))
    store = ["--smoke", "--store", str(tmp_path / "runs"), "--no-estimate"]
    checkpoints.main(["--preset", "ci", "--only", "k1", *store])
    assert "1 jobs: 0 finished (skipped), 1 left" in "\n".join(logs)
    runs = list((tmp_path / "runs").rglob("*.json"))
    assert [p.parent.name for p in runs] == [c1.CHECKPOINTS_EXPERIMENT]
    assert json.loads(runs[0].read_text())["config"]["model"] == "k1"
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        checkpoints.main(["--preset", "cpu-hours", *store])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "ch1_checkpoints has no run-store grid at preset cpu-hours" in err
    assert "python -m mamba_recall grid ch1_mechanism ch1_table1 ch1_full_mamba ch1_wo" in err
    with pytest.raises(SystemExit) as exc:
        checkpoints.main(["--preset", "ci", "--parts", "wo", *store])
    assert exc.value.code == 2 and "unrecognized arguments: --parts wo" in capsys.readouterr().err
    assert len(list((tmp_path / "runs").rglob("*.json"))) == 1  # nothing more ran


def test_wo_and_matched_smoke_bundles(smoke_grid):
    """Issue 31's two parts at smoke size: the learned-W_o bundle holds every model of both targets under 000/Fig7
    (each with its W_o at initialisation as the null); the size-matched Table 1 bundle has a conv_width per cell and
    its models have about the Mamba's size."""
    from mamba_recall import results
    from mamba_recall.claims import check_stored

    wo = results.load_bundle("ch1_wo_cpu-hours_smoke", directory=smoke_grid["out"])
    stored = wo.data["measurements"]["000/Fig7"]
    assert stored["names"] == [f"{t} targets seed {s}" for t in ("identity", "masked") for s in (0, 1)]
    assert all(r["control"]["kind"] == "null" and r["values"]["close_share"] in (0.0, 1.0) for r in stored["records"])
    assert len(wo.tables["W_o"]) == 4 * 8 * 16
    v = check_stored("000/Fig7", stored["records"], stored["names"], record=False)
    assert v.status == "not run" and "smoke" in v.reason
    tm = results.load_bundle("ch1_table1_matched_cpu-hours_smoke", directory=smoke_grid["out"])
    assert sorted(set(tm.tables["accuracy"].conv_width)) == [2, 4]
    assert tm.tables["rows"].params.between(1000, 1300).all()
