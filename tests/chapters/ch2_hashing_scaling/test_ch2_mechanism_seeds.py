"""Chapter 2's §3.2 mechanism claims judged over seeds (pipelines.mechanism): three tiny models, one verdict each."""

from mamba_recall.chapters.ch2_hashing_scaling.claims.mechanism import check_mechanism
from mamba_recall.chapters.ch2_hashing_scaling.pipelines import mechanism as mech
from mamba_recall.notebook import setup

TINY = dict(V=16, Nf=2, L=8, D=8, N=4, steps=3, batch=4, warmup=1, hold=1, n_eval=10, n_probe=4, recipe="code")


def test_mechanism_claims_read_three_seeds():
    ctx = setup("ci", 0, "cpu", "auto")
    runs = mech.train_seeds(TINY, 0)
    assert [r.seed for r in runs] == [0, 1, 2]
    assert runs[0].d != runs[1].d  # different seeds train different models
    assert "seed 2:" in mech.seed_lines(runs)
    for claim in ("002/Fig2", "002/Fig2-selectivity", "002/Fig3", "002/Fig4", "002/Fig5"):
        v = check_mechanism(claim, runs, ctx, TINY["n_probe"], record=False)
        assert v.evidence["seeds"] == 3
        # three steps do not make a model that recalls: untestable, never reproduced
        assert v.status != "reproduced"
