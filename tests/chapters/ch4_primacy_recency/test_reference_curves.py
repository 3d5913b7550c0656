"""The authors' own per-position recall of paper 004 (external reference data, Fig. 2): the committed file is
intact, malformed copies are refused with a clear error, and the normalisation matches the book's own curves."""

import csv
import hashlib
import json
import shutil

import numpy as np
import pandas as pd
import pytest

from mamba_recall.analysis import interventions as iv
from mamba_recall.chapters.ch4_primacy_recency.pipelines.reference_curves import (
    AUTHORS_CSV,
    AUTHORS_DIR,
    AUTHORS_LABEL,
    ReferenceDataError,
    load_authors_curves,
    middle_third,
    on_relative_axis,
    relative_position,
    summarise,
)
from mamba_recall.results import BundleError, load_bundle
from mamba_recall.chapters.ch4_primacy_recency.views.reference_curves import (
    authors_chart,
    authors_vs_ours_chart,
    comparison_frame,
)

SIDECAR = AUTHORS_DIR / "recall_by_position.json"
# The six result files of README.md's table: (L, relation) -> rows (prompts) in the file.
README_ROWS = {
    (6, "same_relation"): 120,
    (8, "varied"): 160,
    (8, "same_relation"): 160,
    (12, "same_relation"): 240,
    (16, "same_relation"): 320,
    (20, "same_relation"): 400,
}


def _raw_rows():
    with AUTHORS_CSV.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_committed_files_match_their_sidecar():
    side = json.loads(SIDECAR.read_text())
    digest = hashlib.sha256(AUTHORS_CSV.read_bytes()).hexdigest()
    assert side["tables"]["recall_by_position"] == {"file": "recall_by_position.csv", "sha256": digest}
    assert side["provenance"]["files"]["recall_by_position.csv"] == digest
    readme = AUTHORS_DIR / "README.md"
    assert side["provenance"]["files"]["README.md"] == hashlib.sha256(readme.read_bytes()).hexdigest()
    assert side["data"]["external"] is True and side["provenance"]["license"].startswith("Apache-2.0")
    assert side["provenance"]["source_commit"] in readme.read_text()
    bundle = load_bundle(SIDECAR)  # the sidecar is a valid result bundle: the loader re-checks the hash
    assert len(bundle.tables["recall_by_position"]) == 70


def test_counts_are_what_the_readme_says():
    curves = load_authors_curves()
    assert (curves["n"] == 20).all()  # "Every file has 20 prompts per target position"
    per_cell = curves.groupby(["L", "relation"])["n"].agg(["sum", "size"])
    assert {key: int(v) for key, v in per_cell["sum"].items()} == README_ROWS
    assert all(size == L for (L, _), size in per_cell["size"].items())  # positions 1..L, each once
    assert set(curves["source_commit"]) == {"d55c712033d9b5ab114b63e4f4fa53b29f2eb06a"}
    assert set(zip(curves["relation"], curves["variant"])) == {("same_relation", "repeated"), ("varied", "random")}


def test_summary_for_L16_equals_a_hand_computation():
    rows = [r for r in _raw_rows() if r["L"] == "16" and r["relation"] == "same_relation"]
    correct = {int(r["position"]): int(r["correct"]) for r in rows}
    # K_mid = {k : 16/3 < k <= 32/3} = {6, ..., 10}; correct there 6, 7, 6, 6, 9 of 20 each
    assert [correct[k] for k in range(6, 11)] == [6, 7, 6, 6, 9]
    assert list(middle_third(16)) == [6, 7, 8, 9, 10]
    s = summarise(load_authors_curves()).set_index(["L", "relation"]).loc[(16, "same_relation")]
    assert s["acc(1)"] == 18 / 20 and s["acc(L)"] == 20 / 20
    assert s["mid"] == pytest.approx((6 + 7 + 6 + 6 + 9) / 5 / 20, abs=1e-15)  # 0.34
    assert s["primacy"] == pytest.approx(0.9 - 0.34) and s["recency"] == pytest.approx(1.0 - 0.34)
    assert s["U-depth"] == pytest.approx(0.5 * (0.9 + 1.0) - 0.34) and s["middle third"] == "6–10"
    # the same numbers as the book's own summary on a (20, 16) matrix with those per-position counts
    matrix = np.array([[m < correct[k] for k in range(1, 17)] for m in range(20)])
    ref = iv.summary(matrix)
    for ours, theirs in (
        ("acc(1)", ref["acc"][0]),
        ("mid", ref["mid"]),
        ("mid lo", ref["mid_lo"]),
        ("mid hi", ref["mid_hi"]),
        ("acc(L)", ref["acc"][-1]),
        ("U-depth", ref["u_depth"]),
    ):
        assert s[ours] == pytest.approx(theirs, abs=1e-12), ours


def test_bands_are_wilson_intervals():
    curves = load_authors_curves()
    row = curves[(curves.L == 8) & (curves.relation == "varied") & (curves.k == 5)].iloc[0]
    assert (row["correct"], row["n"]) == (16, 20)
    p, z, n = 0.8, 1.959963984540054, 20  # closed form of the 95 % Wilson score interval
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert (row["lo"], row["hi"]) == pytest.approx((centre - half, centre + half), abs=1e-12)
    stats = pytest.importorskip("scipy.stats")
    for r in curves.itertuples():
        ci = stats.binomtest(int(r.correct), int(r.n)).proportion_ci(confidence_level=0.95, method="wilson")
        assert (r.lo, r.hi) == pytest.approx((ci.low, ci.high), abs=1e-9)


def test_relative_axis():
    curves = load_authors_curves()
    ends = curves.groupby(["L", "relation"])["x"].agg(["min", "max"])
    assert (ends["min"] == 0).all() and (ends["max"] == 1).all()
    assert relative_position(5, 9) == 0.5
    with pytest.raises(ValueError, match="1 <= k <= L"):
        relative_position(0, 8)
    with pytest.raises(ValueError, match="frame.assign\\(model=...\\)"):
        on_relative_axis(pd.DataFrame({"L": [8], "k": [1], "acc": [0.5]}))
    with pytest.raises(ValueError, match="not a percentage"):
        on_relative_axis(pd.DataFrame({"model": ["s"], "L": [8], "k": [1], "acc": [50.0]}))


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda df: df.drop(columns="correct"), r"missing \['correct'\]"),
        (lambda df: df.assign(extra=1), r"unexpected \['extra'\]"),
        (lambda df: df.assign(accuracy=df["accuracy"].where(df.index != 3, 0.9)), r"rows \[3\] have accuracy"),
        (lambda df: df.drop(index=2), "are not 1..6, each once"),
        (lambda df: df.assign(correct=df["correct"].where(df.index != 0, 21)), "0 <= correct <= n"),
        (lambda df: df.assign(relation=df["relation"].replace("varied", "mixed")), r"unknown relation.*'mixed'"),
        (lambda df: df.assign(n=df["n"].astype(float).where(df.index != 0, np.nan)), "whole numbers"),
    ],
)
def test_malformed_files_are_refused(tmp_path, edit, message):
    bad = tmp_path / "recall_by_position.csv"
    edit(pd.read_csv(AUTHORS_CSV)).to_csv(bad, index=False)
    with pytest.raises(ReferenceDataError, match=message):
        load_authors_curves(bad, check_hash=False)


def test_altered_or_missing_files_name_the_fix(tmp_path):
    for name in ("recall_by_position.csv", "recall_by_position.json"):
        shutil.copy(AUTHORS_DIR / name, tmp_path / name)
    copy = tmp_path / "recall_by_position.csv"
    assert len(load_authors_curves(copy)) == 70  # an intact copy with its sidecar loads
    copy.write_text(copy.read_text().replace(",13,0.6500", ",14,0.7000", 1))  # one count edited, still consistent
    with pytest.raises(ReferenceDataError, match="does not match the sha256.*git checkout"):
        load_authors_curves(copy)
    (tmp_path / "recall_by_position.json").unlink()
    with pytest.raises(ReferenceDataError, match="no sidecar.*check_hash=False"):
        load_authors_curves(copy)
    with pytest.raises(ReferenceDataError, match="no reference file"):
        load_authors_curves(tmp_path / "absent.csv")


def test_a_sidecar_edited_to_match_an_edited_file_is_refused(tmp_path):
    """The sidecar is read by the results layer's record reader (``results.read_bundle_record``): its content hash
    catches a sidecar whose recorded sha256 was changed to fit an edited table."""
    for name in ("recall_by_position.csv", "recall_by_position.json"):
        shutil.copy(AUTHORS_DIR / name, tmp_path / name)
    copy, side = tmp_path / "recall_by_position.csv", tmp_path / "recall_by_position.json"
    copy.write_text(copy.read_text().replace(",13,0.6500", ",14,0.7000", 1))
    record = json.loads(side.read_text())
    record["tables"]["recall_by_position"]["sha256"] = hashlib.sha256(copy.read_bytes()).hexdigest()
    side.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    with pytest.raises(BundleError, match="content_sha256.*git checkout -- results/external/paper-004-authors"):
        load_authors_curves(copy)


def test_charts_label_both_sources():
    authors = load_authors_curves()
    ours = pd.DataFrame(
        {"model": "s_small", "L": 8, "k": np.arange(1, 9), "acc": np.linspace(1, 0.5, 8), "variant": "repeated"}
    )
    frame = comparison_frame(authors, ours)
    assert set(frame["source"]) == {AUTHORS_LABEL, "ours: s_small"}
    assert frame.loc[frame.source == "ours: s_small", "x"].tolist() == pytest.approx(np.arange(8) / 7)
    assert frame.loc[frame.source == "ours: s_small", "lo"].isna().all()  # no bands given, none invented
    for layout in ("beside", "over"):
        spec = json.dumps(authors_vs_ours_chart(authors, ours, layout=layout).to_dict())
        assert "(k \\u2212 1)/(L \\u2212 1)" in spec or "(k − 1)/(L − 1)" in spec
    assert AUTHORS_LABEL in json.dumps(authors_chart(authors).to_dict())
    with pytest.raises(ValueError, match="'beside' or 'over'"):
        authors_vs_ours_chart(authors, ours, layout="stacked")
