"""Chapter 1 (paper 000): latest-value MQAR, the simplified Mamba, Lemma 1, probes."""

import numpy as np
import pytest
import torch

from mamba_recall.analysis.recall_probes import (
    pair_table,
    regime_summary,
    second_half_forgetting,
    wdelta_block_mass,
    wo_centred_cosine,
)
from mamba_recall.models.simplified_recall import (
    SimplifiedMamba,
    doubled_embedding_conv,
    m1,
    m2,
    pair_embedding,
    theory_model,
)
from mamba_recall.tasks.latest_value import (
    IGNORE_INDEX,
    READ,
    WRITE,
    all_theory_sequences,
    latest_value_batch,
    latest_value_labels,
    latest_value_sequence,
    pair_events,
    paper_example,
    theory_batch,
)
from mamba_recall.theory.gradient_lemma import (
    autograd_gradient,
    compare_with_eq5,
    eq5_agreement,
    exact_population_gradient,
    gd_dynamics,
    one_step_accuracy,
    paper_eq5,
    population_gradient,
    sequence_gradients,
    theory_logits,
    write_component,
)


# ----------------------------------------------------------------------------- generator
def test_paper_example():
    tokens, ids, targets = paper_example()
    assert "".join(tokens).replace(" ", "") == "XAYZXBZXXBXAB"
    assert [i for i, t in enumerate(targets) if t != "·"] == [9, 11, 12]
    assert [targets[i] for i in (9, 11, 12)] == ["Z", "Y", "X"]


@pytest.mark.parametrize("V,K,T", [(8, 1, 64), (8, 4, 37), (16, 4, 128), (5, 2, 13)])
def test_generator_invariants(V, K, T):
    b = latest_value_batch(64, V, K, T, 3, seed=3, target="masked")
    x = b.inputs.numpy()
    assert x.shape == (64, T) and x.min() >= 0 and x.max() < V
    for row, q in zip(x, b.query_labels.numpy()):
        assert sorted(row[-K:].tolist()) == list(range(K))  # final permutation of the keys
        after_key = row[1:-K][row[: -K - 1] < K]
        assert (after_key >= K).all()  # a value follows every key (but the last K)
        ref, _ = latest_value_labels(row, K)
        assert (q == ref).all()
        last = {}
        for t, tok in enumerate(row):  # latest-value labels, re-derived
            if tok < K:
                assert q[t] == last.get(tok, IGNORE_INDEX)
            else:
                assert q[t] == IGNORE_INDEX
            if t and row[t - 1] < K and tok >= K:
                last[row[t - 1]] = tok
    assert set(np.unique(b.labels.numpy())) <= set(range(V)) | {IGNORE_INDEX}


def test_identity_targets_and_seeding():
    a = latest_value_batch(8, 8, 1, 64, 3, seed=5, target="identity")
    b = latest_value_batch(8, 8, 1, 64, 3, seed=5, target="identity")
    c = latest_value_batch(8, 8, 1, 64, 3, seed=6, target="identity")
    assert torch.equal(a.inputs, b.inputs) and not torch.equal(a.inputs, c.inputs)
    q = a.query_labels != IGNORE_INDEX
    assert torch.equal(a.labels[~q], a.inputs[~q]) and torch.equal(a.labels[q], a.query_labels[q])


def test_noise_runs_and_block_mean():
    rng = np.random.default_rng(0)
    runs = []
    for _ in range(150):
        _, r = latest_value_sequence(rng, 8, 1, 256, 3, return_noise_runs=True)
        runs += r
    runs = np.asarray(runs)
    assert runs.min() >= 0 and runs.max() <= 3
    assert abs((runs + 2).mean() - 3.5) < 0.05  # n_ε / 2 + 2 over ≥ 10⁴ blocks
    assert runs.size >= 10_000


def test_generator_errors():
    with pytest.raises(ValueError, match="num_keys"):
        latest_value_batch(4, 4, 4, 32, 3)
    with pytest.raises(ValueError, match="target"):
        latest_value_batch(4, 8, 1, 32, 3, target="copy")
    with pytest.raises(ValueError, match="seq_len"):
        latest_value_batch(4, 8, 4, 5, 3)


def test_pair_events():
    _, ids, _ = paper_example()
    ev = pair_events(ids, 2)
    assert list(np.where(ev == READ)[0]) == [9, 11, 12]
    assert list(np.where(ev == WRITE)[0]) == [2, 6, 10]


def test_theory_distribution():
    x, y = theory_batch(100, 8, 16, seed=0)
    assert x.shape == (100, 17) and (x[:, 0] == 0).all() and (x[:, -1] == 0).all()
    assert (x[:, 1:-1] >= 1).all() and torch.equal(y, x[:, 1])
    assert all_theory_sequences(4, 4).shape == (27, 5)


# ----------------------------------------------------------------------------- model
def test_fixed_conv_is_pairwise_concatenation():
    ids = latest_value_batch(3, 8, 2, 40, 3, seed=0).inputs
    xhat = pair_embedding(ids, 8)
    assert torch.equal(xhat, doubled_embedding_conv(ids, 8))
    assert torch.equal(xhat[:, 0, :8], torch.zeros(3, 8))
    assert (xhat.sum(-1)[:, 1:] == 2).all()
    with pytest.raises(ValueError, match="token ids"):
        pair_embedding(ids + 8, 8)


@pytest.mark.parametrize("N", [1, 2])
def test_model_matches_reference_loop(N):
    torch.manual_seed(0)
    model = SimplifiedMamba(6, N, seed=1, init_std=0.5).double()
    ids = latest_value_batch(2, 6, max(N, 1), 20, 3, seed=0).inputs
    xhat = pair_embedding(ids, 6).double()
    dt = torch.nn.functional.softplus(xhat @ model.W_delta.T)
    lam = -torch.exp(model.A_log)
    Bt = xhat @ model.W_B.T if N > 1 else torch.ones(2, 20, 1, dtype=torch.float64)
    Ct = xhat @ model.W_C.T if N > 1 else torch.ones(2, 20, 1, dtype=torch.float64)
    h = torch.zeros(2, 12, N, dtype=torch.float64)
    ys = []
    for t in range(20):  # Eq. (2) written out
        h = torch.exp(lam * dt[:, t, :, None]) * h + (dt[:, t] * xhat[:, t])[..., None] * Bt[:, t, None, :]
        ys.append((h * Ct[:, t, None, :]).sum(-1))
    logits = torch.stack(ys, 1) @ model.W_o.double().T
    assert torch.allclose(model(ids), logits, atol=1e-10)
    out, it = model(ids, return_internals=True)
    assert torch.allclose(out, logits, atol=1e-10)


def test_pair_locality():
    model = m1(8, seed=0, init_std=0.5)
    tab = pair_table(model)
    ids = latest_value_batch(1, 8, 1, 64, 3, seed=2).inputs
    _, it = model(ids, return_internals=True)
    x = ids[0]
    for t in range(1, 64):
        assert torch.allclose(it["forget"][0, t, :, 0], tab["forget"][x[t - 1], x[t]], atol=1e-7)
        assert torch.allclose(it["input_term"][0, t, :, 0], tab["input_term"][x[t - 1], x[t]], atol=1e-7)


def test_model_errors():
    with pytest.raises(ValueError, match="selective_bc"):
        SimplifiedMamba(8, 2, selective_bc=False)
    with pytest.raises(ValueError, match="vocab_size"):
        SimplifiedMamba(1)


# ----------------------------------------------------------------------------- Lemma 1
@pytest.mark.parametrize("V,T", [(3, 3), (4, 5), (5, 6), (6, 4), (8, 5)])
def test_closed_form_equals_enumeration(V, T):
    G, se, method = population_gradient(V, T)
    assert method == "enumeration"
    assert torch.allclose(G, exact_population_gradient(V, T), atol=1e-12)


def test_analytic_gradient_equals_autograd():
    x, _ = theory_batch(32, 6, 9, seed=0)
    assert torch.allclose(sequence_gradients(x, 6).mean(0), autograd_gradient(x, 6), atol=1e-12)
    W = torch.zeros(12, 12, dtype=torch.float64, requires_grad=True)
    torch.nn.functional.cross_entropy(theory_logits(W, x), x[:, 1]).backward()
    assert torch.allclose(W.grad, autograd_gradient(x, 6), atol=1e-12)


def test_fast_theory_logits_match_model():
    x, _ = theory_batch(16, 5, 7, seed=1)
    W = torch.randn(10, 10, dtype=torch.float64)
    model = theory_model(5).double()
    with torch.no_grad():
        model.W_delta.copy_(W)
    assert torch.allclose(theory_logits(W, x), model(x)[:, -1], atol=1e-10)


def test_monte_carlo_matches_closed_form():
    G, se, method = population_gradient(8, 16, n=40_000, chunks=10)
    E = exact_population_gradient(8, 16)
    assert method.startswith("Monte Carlo")
    assert float(((G - E).abs() / (se + 1e-9)).max()) < 6
    assert float((G * E).sum() / (G.norm() * E.norm())) > 0.995


def test_golden_values_and_eq5():
    G = exact_population_gradient(8, 16)
    assert G[0, 0] == -1 / 8 and G[8, 8] == 2 / 8 and G[9, 0] == -1 / 8
    assert abs(float(G[1, 1]) - 9 / 56) < 1e-12
    assert abs(float(exact_population_gradient(8, 256)[1, 1]) - 303 / 392) < 1e-12
    tab = compare_with_eq5(8, 16).set_index("entry")
    assert tab.loc["G[V+a,0] (write: prev key → value chan)", "ratio_ours_over_eq5"] == pytest.approx(16 / 8)
    assert tab.loc["G[V,V] (cur key → chan V)", "sign_agrees_transposed"]
    P = paper_eq5(8, 16, "transposed")
    assert P[5, 0] == -1 / 16 and P[5, 8] == 2 / 16
    with pytest.raises(ValueError, match="reading"):
        paper_eq5(8, 16, "rows")
    agree = eq5_agreement(8, 16)
    assert 0 < agree["key_column_share"] < 1


def test_one_step():
    assert one_step_accuracy(write_component(8), 8, 16, n=2000) == 1.0
    assert one_step_accuracy(write_component(64), 64, 64, n=2000) == 1.0
    G = exact_population_gradient(256, 8)
    assert one_step_accuracy(-G, 256, 8, n=4000) >= 0.9
    assert one_step_accuracy(-exact_population_gradient(8, 64), 8, 64, n=4000) < 0.4
    # η-invariance: z is linear in W
    assert one_step_accuracy(-3.0 * G, 256, 8, n=2000) == one_step_accuracy(-G, 256, 8, n=2000)


def test_birthday_approximation_of_one_step():
    from mamba_recall.theory.gradient_lemma import one_step_table
    from mamba_recall.chapters.ch1_gradient_dynamics.views import no_repeat_probability, one_step_chart

    # the approximation against the exact product ∏_{i<T−1}(1 − i/(|V|−1)) and against theory_batch's sequences
    for V, T in ((64, 8), (256, 16), (1024, 8)):
        exact = np.prod(1 - np.arange(T - 1) / (V - 1))
        approx = no_repeat_probability(V, T)
        assert exact <= approx <= exact * 1.05, (V, T)  # 1 − u ≤ e^(−u): an upper bound, tight here
        x, _ = theory_batch(20_000, V, T, seed=0)
        distinct = np.mean([len(set(r)) == T - 1 for r in x[:, 1:T].tolist()])
        assert abs(distinct - exact) < 0.02, (V, T)
    assert np.allclose(
        no_repeat_probability(np.array([64, 256]), 8), [no_repeat_probability(64, 8), no_repeat_probability(256, 8)]
    )
    # a lower bound of the measured one-step accuracy (up to sampling), close to it while repeats are rare
    steps = one_step_table([64, 256], [4, 8, 16], n=4000)
    birthday = no_repeat_probability(steps.V.to_numpy(), steps["T"].to_numpy())
    gap = steps.full_step - birthday
    assert (gap > -0.03).all() and (gap[birthday >= 0.5] < 0.1).all(), gap.tolist()
    spec = one_step_chart(steps).to_dict()
    assert len(spec["layer"]) == 2 and spec["layer"][1]["mark"]["strokeDash"] == [4, 3]
    with pytest.raises(ValueError, match="T >= 2"):
        no_repeat_probability(64, 1)
    with pytest.raises(ValueError, match="one_step_table"):
        one_step_chart(steps.drop(columns="full_step"))


def test_gd_dynamics_small():
    frame = gd_dynamics(8, 8, lr=1.0, steps=30, batch=512, eval_n=512)
    assert frame.accuracy.iloc[-1] > frame.accuracy.iloc[1]
    assert frame.key_column.is_monotonic_increasing


def test_lemma_errors():
    with pytest.raises(ValueError, match="T must"):
        exact_population_gradient(8, 2)


# ----------------------------------------------------------------------------- probes
def test_probes_on_hand_built_solution():
    V = 8
    model = m1(V, init_std=0.0)
    with torch.no_grad():  # a hand-made write: prev = key → big Δ on the value channels
        model.W_delta[V + 1 :, 0] = 4.0
        model.W_delta[:, V] = -4.0
    mass = wdelta_block_mass(model.W_delta, V)
    assert mass["argmax_column_of_second_half_means"] == 0 and mass["columnV_mean"] < 0
    assert mass["paper_rows_share"] == pytest.approx(1.0)
    s = second_half_forgetting(model)
    assert s["F_write"] < s["F_read"]
    summary = regime_summary(model)
    assert set(summary.regime) == {"write", "read", "forget"}
    with pytest.raises(ValueError, match="W_Δ"):
        wdelta_block_mass(torch.zeros(3, 3), V)


def test_wo_cosine():
    V = 5
    ref = torch.cat([-torch.eye(V), torch.eye(V)], 1)
    r = wo_centred_cosine(ref)
    assert r["centred_cosine"] == pytest.approx(1.0) and r["first_half_diag"] < 0 < r["second_half_diag"]
    assert wo_centred_cosine(ref + 3.0)["centred_cosine"] == pytest.approx(1.0)  # column shifts don't matter


def test_m2_shapes():
    model = m2(8, 4, seed=0)
    ids = latest_value_batch(2, 8, 4, 30, 3, seed=0).inputs
    out, it = model(ids, return_internals=True)
    assert out.shape == (2, 30, 8) and it["B"].shape == (2, 30, 4) and it["state"].shape == (2, 30, 16, 4)


# ----------------------------------------------------------------------------- runners, views, checkpoints
def test_committed_checkpoints_load_and_solve():
    from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import load_checkpoint, make_data
    from mamba_recall.train import evaluate

    model, meta = load_checkpoint("k1", "paper")
    assert meta["config"]["seq_len"] == 256 and meta["config"]["target"] == "identity"
    _, test = make_data({**meta["config"], "test_size": 16}, meta["seed"])
    assert evaluate(model, test.inputs, test.query_labels) == 1.0
    mass = wdelta_block_mass(model.W_delta, 8)
    assert mass["argmax_column_of_second_half_means"] == 0 and mass["columnV_mean"] < 0


def test_checkpoint_errors(tmp_path, monkeypatch):
    from mamba_recall.chapters.ch1_gradient_dynamics.runners.grid_jobs import run_checkpoint_job
    from mamba_recall.chapters.ch1_gradient_dynamics.runners.job_configs import ModelJob
    import mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value as tr

    monkeypatch.setattr(tr, "CHECKPOINT_DIR", tmp_path)
    with pytest.raises(FileNotFoundError, match="regenerate"):
        tr.load_checkpoint("k1", "paper")
    sizes = {
        "vocab_size": 5,
        "num_keys": 1,
        "d_state": 1,
        "seq_len": 16,
        "max_noise": 2,
        "target": "masked",
        "train_size": 32,
        "test_size": 16,
        "batch_size": 16,
        "lr": 1e-2,
        "steps": 5,
        "eval_every": 5,
    }
    trained = tr.train_recall(sizes, seed=0)
    result = run_checkpoint_job(ModelJob(kind="checkpoint", model="k1", preset="ci", smoke=False, sizes=sizes), 0)
    path = tr.checkpoint_path("k1", "ci")
    assert path.parent == tmp_path and result["checkpoint"].endswith("ch1_k1_ci.pt")
    model, meta = tr.load_checkpoint("k1", "ci")
    assert torch.equal(model.W_delta, trained.model.W_delta)  # the job trains what train_recall trains
    path.write_bytes(path.read_bytes() + b"x")
    with pytest.raises(ValueError, match="hash"):
        tr.load_checkpoint("k1", "ci")


def test_training_is_deterministic():
    from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import train_recall

    sizes = {
        "vocab_size": 6,
        "num_keys": 1,
        "d_state": 1,
        "seq_len": 24,
        "max_noise": 2,
        "target": "identity",
        "train_size": 32,
        "test_size": 16,
        "batch_size": 16,
        "lr": 3e-2,
        "steps": 20,
        "eval_every": 10,
    }
    a, b = train_recall(sizes, seed=1), train_recall(sizes, seed=1)
    assert torch.equal(a.model.W_delta, b.model.W_delta)


def test_views_build():
    from mamba_recall.analysis.recall_probes import probe_frame
    from mamba_recall.chapters.ch1_gradient_dynamics.views import bc_chart, fig4_chart, matrix_chart, wdelta_heatmap

    model = m1(8, seed=0)
    ids = latest_value_batch(1, 8, 1, 32, 3, seed=0).inputs[0]
    frame = probe_frame(model, ids, 0, 16)
    assert set(frame.panel) == {"output", "state", "input term", "forgetting factor"}
    assert len(frame) == 16 * (8 + 3 * 16)
    for chart in (
        fig4_chart(frame),
        wdelta_heatmap(model.W_delta, "W", transposed=True),
        matrix_chart(torch.eye(3), "I"),
        bc_chart(m2(8, 2, seed=0), latest_value_batch(1, 8, 2, 32, 3, seed=0).inputs[0], 2, "B/C"),
    ):
        assert chart.to_dict()


def test_table1_cell_tiny():
    from mamba_recall.chapters.ch1_gradient_dynamics.training.table1 import build, run_cell

    sizes = {
        "vocab_size": 8,
        "max_noise": 3,
        "train_size": 32,
        "test_size": 16,
        "batch_size": 16,
        "target": "masked",
        "steps": 3,
        "eval_every": 3,
        "mamba_lr": 1e-2,
        "tf_lr": 1e-3,
        "tf_d_model": 16,
        "tf_heads": 2,
        "conv_width": 4,
    }
    row = run_cell("tf2_conv_rope", 32, 1, sizes)
    assert 0 <= row["accuracy"] <= 1 and row["paper"] is None
    assert build("tf1_conv", 8, 1, 32, sizes, 0).layers[0].conv.kernel_size == (4,)
    with pytest.raises(ValueError, match="unknown model"):
        build("lstm", 8, 1, 32, sizes, 0)


def test_full_readout_charts_one_heat_map_per_seed_and_clear_errors():
    import pandas as pd
    import pytest

    from mamba_recall.chapters.ch1_gradient_dynamics.views import full_readout_charts

    V = 3
    rows = [
        {"seed": s, "stage": st, "row": r, "col": c, "value": float(r == c % V) * (1 if c >= V else -1)}
        for s in (0, 1)
        for st in ("trained", "init")
        for r in range(V)
        for c in range(2 * V)
    ]
    chart = full_readout_charts(pd.DataFrame(rows)).to_dict()
    assert len(chart["hconcat"]) == 2
    assert [p["title"] for p in chart["hconcat"]] == [
        "full Mamba LM, seed 0 (trained)",
        "full Mamba LM, seed 1 (trained)",
    ]
    with pytest.raises(ValueError, match="stages present"):
        full_readout_charts(pd.DataFrame(rows), stage="final")
    with pytest.raises(ValueError, match="lacks columns"):
        full_readout_charts(pd.DataFrame(rows).drop(columns="value"))
