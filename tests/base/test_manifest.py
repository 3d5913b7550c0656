"""The results manifest (``results/manifest.json``, :mod:`mamba_recall.manifest`): it lists every committed result
with the command that makes it, every entry is complete and loads, and the run-store bundles were made from the
jobs their runners make today. Its reproduce list runs each command once."""

from __future__ import annotations

import dataclasses

import json
import shutil
from pathlib import Path

import pytest

from mamba_recall import manifest
from mamba_recall.results._files import _hashed_json
from mamba_recall.paths import REPO_ROOT

# Results made from a tree with uncommitted changes, waiting to be remade by their command from a clean checkout: none
# since 2026-11-27 (the last five, Chapter 4's S-models and two edge models, were remade then). The test below fails
# when another result is dirty and when one of these is remade clean (so this set only shrinks).
REMAKE_PENDING: set[str] = set()


def test_every_committed_result_is_in_the_manifest_complete_and_clean():
    problems = manifest.problems()
    dirty = {p.split(":")[0] for p in problems if "uncommitted changes" in p}
    others = [p for p in problems if "uncommitted changes" not in p]
    assert others == []
    assert dirty <= REMAKE_PENDING, f"made from a dirty tree: {sorted(dirty - REMAKE_PENDING)}"
    assert REMAKE_PENDING <= dirty, f"remade clean: drop {sorted(REMAKE_PENDING - dirty)} from REMAKE_PENDING"


def _run_store_bundles():
    """``(entry, bundle record)`` of every committed bundle of a run-store grid (its data lists ``run_keys``)."""
    for entry in manifest.load():
        if entry.kind != "bundle":
            continue
        record = json.loads((REPO_ROOT / f"results/{entry.name}.json").read_text())
        if isinstance(record.get("data"), dict) and "run_keys" in record["data"]:
            yield entry, record


def test_run_store_bundles_hold_only_jobs_their_runners_make_today():
    """A bundle of a run-store grid records the keys of its jobs; each key hashes (experiment, resolved config,
    seed), so a key that no runner makes today means the bundle's config is not what its runner would make."""
    from mamba_recall import plan

    today: dict[str, set[str]] = {}
    for make in (grid.jobs for grid in plan.grids()):  # every run-store grid is a declared experiment
        for preset in ("ci", "cpu-hours", "paper"):
            try:
                jobs = make(preset)
            except (SystemExit, KeyError, ValueError):
                continue  # no grid at that preset
            today.setdefault(preset, set()).update(j["key"] for j in jobs)
    checked = 0
    for entry, record in _run_store_bundles():
        stale = set(record["data"]["run_keys"]) - today.get(entry.preset, set())
        assert not stale, f"{entry.name}: {len(stale)} job(s) its runner no longer makes; remake it: {entry.command}"
        checked += 1
    # 18, Chapter 3's three ci bundles since they come from the run store, and Chapter 1's four ci and paper ones
    assert checked >= 25


def test_a_run_store_experiment_has_one_name_for_its_folder_and_its_bundles():
    """Issue 30, one name per experiment: the runs of a committed run-store bundle ``chN_<name>_<preset>`` sit in
    ``results/runs/chN_<name>/`` (``ch3_keep_nth_cpu-hours`` reads ``ch3_keep_nth``, once ``ch3.keep_train``), and
    the bundle records that name. A grid that writes runs under another name than its bundle fails here."""
    folders = {p.stem: p.parent.name for p in (REPO_ROOT / "results/runs").glob("*/*.json")}
    checked = 0
    for entry, record in _run_store_bundles():
        names = {folders.get(k, "(not in the store)") for k in record["data"]["run_keys"]}
        want = entry.name.removesuffix(f"_{entry.preset}")
        assert names == {want}, (entry.name, sorted(names))
        recorded = (record.get("config") or {}).get("experiment")
        if recorded is not None:
            assert recorded in names, f"{entry.name} records experiment {recorded!r}; remake it: {entry.command}"
        checked += 1
    assert checked >= 18, checked


def _size_checks(entries=None, root: Path = REPO_ROOT) -> tuple[list[tuple[str, str]], list[str]]:
    """``((bundle, experiment) pairs checked, problems)``: a bundle of a runner without a run store records its
    experiment's preset sizes in its config (flat, or per model under ``sizes``); they must equal what
    ``presets.experiment`` gives today, or the bundle is stale. The experiment is the one whose sizes (at least three
    keys) it holds most of. ``entries``: the manifest's (default) or others, each bundle read from
    ``root/results/<name>.json``."""
    from mamba_recall.presets import EXPERIMENTS, experiment

    def plain(x):
        return json.loads(json.dumps(x))

    checked, problems = [], []
    for entry in manifest.load() if entries is None else entries:
        record = json.loads((root / f"results/{entry.name}.json").read_text()) if entry.kind == "bundle" else {}
        config, data = record.get("config") or {}, record.get("data") or {}
        if not config or (isinstance(data, dict) and "run_keys" in data):
            continue
        per_model = config.get("sizes") if isinstance(config.get("sizes"), dict) else {}
        targets = [(f"ch1_{m}", sizes) for m, sizes in per_model.items() if f"ch1_{m}" in EXPERIMENTS]
        if not targets:
            fits = [
                (len(sizes), name, held)
                for held in [config, per_model]
                for name, presets in EXPERIMENTS.items()
                if entry.preset in presets
                for sizes in [plain(experiment(name, entry.preset))]
                if len(sizes) >= 3 and set(sizes) <= set(held)
            ]
            targets = [max(fits, key=lambda f: f[:2])[1:]] if fits else []
        for name, recorded in targets:
            today = plain(experiment(name, entry.preset))
            stale = {k: (recorded[k], v) for k, v in today.items() if recorded.get(k) != v}
            if stale:
                problems.append(f"{entry.name}: {name} sizes changed since it was made (recorded, today): {stale}")
            checked.append((entry.name, name))
    return sorted(set(checked)), problems


def test_other_bundles_record_the_sizes_their_presets_give_today():
    checked, problems = _size_checks()
    assert problems == []
    # none since Chapter 4's edge bundles (ch4_edge, ch4_edge_mix, the last two) are written by the run store's bundle
    # writer and record their run keys, checked above (10 once, 7 since Chapter 3's ci bundles came from the run
    # store, 2 since Chapters 1, 2 and 3 all did); the check itself is tested on a bundle made below
    assert checked == [], checked


def test_a_preset_changed_after_its_bundle_was_made_is_found(monkeypatch, tmp_path):
    """The size check, on a bundle of a runner without a run store made here (none is committed now): it holds
    ch4_edge's sizes at cpu-hours, as such a bundle's config did; a preset changed after it was made is found."""
    from types import SimpleNamespace

    from mamba_recall.presets import EXPERIMENTS, experiment

    name, preset = "ch4_edge", "cpu-hours"
    sizes = json.loads(json.dumps(experiment(name, preset)))
    (tmp_path / "results").mkdir()
    record = {"config": {"preset": preset, "sizes": sizes}, "data": {}}
    (tmp_path / "results/old_bundle_cpu-hours.json").write_text(json.dumps(record))
    entries = [SimpleNamespace(kind="bundle", name="old_bundle_cpu-hours", preset=preset)]
    assert _size_checks(entries, tmp_path) == ([("old_bundle_cpu-hours", name)], [])
    entry = EXPERIMENTS[name][preset]
    field = next(f.name for f in dataclasses.fields(entry) if type(getattr(entry, f.name)) is int)
    monkeypatch.setitem(EXPERIMENTS[name], preset, dataclasses.replace(entry, **{field: getattr(entry, field) + 1}))
    _, problems = _size_checks(entries, tmp_path)
    assert len(problems) == 1 and problems[0].startswith(f"old_bundle_cpu-hours: {name} sizes changed"), problems


def test_a_run_store_bundle_made_before_its_preset_changed_is_found(monkeypatch):
    """A run-store bundle records its run keys, which hash each job's config: a preset changed after the bundle was
    made gives other keys (:func:`test_run_store_bundles_hold_only_jobs_their_runners_make_today` then fails)."""
    from mamba_recall.experiment import experiment_named
    from mamba_recall.presets import EXPERIMENTS

    grid = experiment_named("ch2_designed_capacity")
    recorded = set(json.loads((REPO_ROOT / "results/ch2_designed_capacity_ci.json").read_text())["data"]["run_keys"])
    assert recorded == {j["key"] for j in grid.grid_jobs("ci")}
    entry = EXPERIMENTS["ch2_designed_capacity"]["ci"]
    monkeypatch.setitem(
        EXPERIMENTS["ch2_designed_capacity"], "ci", dataclasses.replace(entry, n_queries=entry.n_queries + 1)
    )
    assert not recorded & {j["key"] for j in grid.grid_jobs("ci")}


def _copy(names: list[str], root: Path) -> None:
    (root / "results" / "checkpoints").mkdir(parents=True)
    (root / "results" / "external").mkdir()
    for name in names:
        for path in (REPO_ROOT / "results").glob(f"{name}.*"):
            shutil.copy2(path, root / "results" / path.name)
        for path in (REPO_ROOT / "results" / "checkpoints").glob(f"{name}.*"):
            shutil.copy2(path, root / "results" / "checkpoints" / path.name)


def test_the_check_finds_a_missing_entry_a_lost_table_a_stray_file_a_corrupt_bundle_and_a_dirty_result(tmp_path):
    _copy(["ch2_thm5_cpu-hours", "ch1_k1_ci"], tmp_path)
    manifest.write({"ch2_thm5_cpu-hours": ("002/Thm5-MHA-MN",)}, root=tmp_path)
    assert manifest.problems(tmp_path) == []
    entries = {e.name: e for e in manifest.load(tmp_path / "results" / "manifest.json")}
    assert entries["ch2_thm5_cpu-hours"].runner == "ch2_thm5"  # a declared experiment: its own name
    assert entries["ch2_thm5_cpu-hours"].cpu_seconds == pytest.approx(5127.1)
    assert entries["ch2_thm5_cpu-hours"].claims == ("002/Thm5-MHA-MN",)
    assert entries["ch1_k1_ci"].files == ("results/checkpoints/ch1_k1_ci.json", "results/checkpoints/ch1_k1_ci.pt")

    (tmp_path / "results" / "stray.csv").write_text("a\n1\n")
    (tmp_path / "results" / "ch2_thm5_cpu-hours.runs.csv").unlink()
    _copy(["ch4_train_s_small_ci"], tmp_path / "more")
    shutil.copy2(tmp_path / "more/results/checkpoints/ch4_train_s_small_ci.json", tmp_path / "results/checkpoints")
    shutil.copy2(tmp_path / "more/results/checkpoints/ch4_train_s_small_ci.pt", tmp_path / "results/checkpoints")
    sidecar = tmp_path / "results/checkpoints/ch4_train_s_small_ci.json"  # made clean; say it was not (hash kept valid)
    record = json.loads(sidecar.read_text())
    record["provenance"]["git_dirty"] = True
    sidecar.write_bytes(_hashed_json({k: v for k, v in record.items() if k != "content_sha256"}, sort_keys=True))
    found = "\n".join(manifest.problems(tmp_path))
    assert "ch4_train_s_small_ci: committed under results/ but not in the manifest" in found
    assert "results/stray.csv: a file under results/ that no bundle" in found
    assert "ch2_thm5_cpu-hours: its files results/ch2_thm5_cpu-hours.runs.csv are missing" in found
    assert "ch4_train_s_small_ci: made from a tree with uncommitted changes" in found

    shutil.copy2(REPO_ROOT / "results/ch2_thm5_cpu-hours.runs.csv", tmp_path / "results")
    path = tmp_path / "results" / "ch2_thm5_cpu-hours.json"
    path.write_text(path.read_text().replace('"seeds": 3', '"seeds": 4', 1))
    assert any(p.startswith("ch2_thm5_cpu-hours: does not load") for p in manifest.problems(tmp_path))


def test_claims_come_from_a_scorecard_and_a_disagreement_is_named(tmp_path):
    _copy(["ch2_thm5_cpu-hours"], tmp_path)
    manifest.write({}, root=tmp_path)
    card = tmp_path / "card"
    card.mkdir()
    record = {"claim_id": "002/Thm5-MHA-MN", "evidence": {"source": "results/ch2_thm5_cpu-hours.json"}}
    (card / "a.json").write_text(json.dumps(record))
    (card / "b.json").write_text(json.dumps({"claim_id": "000/X", "evidence": {"source": "results/gone.json"}}))
    found = manifest.claim_problems(card, root=tmp_path)
    assert "000/X reads results/gone.json, which no manifest entry holds" in found
    assert any("ch2_thm5_cpu-hours: the manifest says claims [], the scorecard ['002/Thm5-MHA-MN']" in p for p in found)


def test_a_missing_or_empty_scorecard_is_refused_not_read_as_no_claims(tmp_path):
    """`manifest --write --scorecard DIR` with a DIR a book pass never wrote once stripped every entry of its claims."""
    entries = manifest.scan()
    with pytest.raises(manifest.ManifestError, match=r"does not exist.*make book.*leave out --scorecard"):
        manifest.claims_from_scorecard(tmp_path / "nowhere", entries)
    (tmp_path / "empty").mkdir()
    with pytest.raises(manifest.ManifestError, match=r"holds no claim record"):
        manifest.claims_from_scorecard(tmp_path / "empty", entries)


def test_reproduce_runs_each_command_once_the_broadest_one_in_runner_order():
    from mamba_recall.runners import runner_command

    def entry(command, created=None):
        return manifest.Entry("x", "bundle", (), command, None, None, None, None, None, True, created=created)

    def ex(runner, args):
        return f"{runner_command(runner)} {args}"

    commands = [
        ex("ch1_checkpoints", "--preset ci --device cpu"),
        ex("ch1_checkpoints", "--preset ci --only k2"),  # covered by the first
        ex("ch1_checkpoints", "--preset paper --only k1 k1_masked wo"),
        ex("ch1_checkpoints", "--preset paper --only k1"),  # covered by the one above
        ex("ch4_edge", "--preset cpu-hours --allow-long"),
        ex("ch4_edge", "--preset cpu-hours --recipes d2 --allow-long"),  # covered: the whole grid
        ex("ch4_edge", "--preset cpu-hours --checks --allow-long"),  # not covered: another output
        ex("ch4_train", "--model s_small --preset ci"),
        ex("ch4_train", "--model s_mix --preset ci --device cpu"),  # another model, made after s_small (its start)
        ex("ch2_scaling", "--preset ci"),
        ex("ch2_scaling", "--preset ci --device cpu"),  # the same run: one of the two is kept
        "python benchmarks/scan.py --device cpu --out results/scan_bench_cpu.json",
        # a declared experiment's grid command, no runner's: just before its chapter's first runner
        "python -m mamba_recall grid ch2_thm5 --preset ci --allow-long",
        # another declared experiment's: just before its chapter's first runner (the last chapter here)
        "python -m mamba_recall grid ch5_capacity_long --preset ci --allow-long",
    ]
    order = ["bench", "ch1_checkpoints", "ch2_scaling", "ch2_multihead", "ch4_train", "ch4_edge", "ch5_capacity"]
    made = {
        ex("ch4_train", "--model s_small --preset ci"): "2026-11-22T04",
        ex("ch4_train", "--model s_mix --preset ci --device cpu"): "2026-11-22T06",
    }
    got = manifest.reproduce_commands([entry(c, made.get(c)) for c in commands], order)
    assert got == [
        "python benchmarks/scan.py --device cpu --out results/scan_bench_cpu.json",
        ex("ch1_checkpoints", "--preset ci --device cpu"),
        ex("ch1_checkpoints", "--preset paper --only k1 k1_masked wo"),
        "python -m mamba_recall grid ch2_thm5 --preset ci --allow-long",
        ex("ch2_scaling", "--preset ci"),
        ex("ch4_train", "--model s_small --preset ci"),
        ex("ch4_train", "--model s_mix --preset ci --device cpu"),
        ex("ch4_edge", "--preset cpu-hours --allow-long"),
        ex("ch4_edge", "--preset cpu-hours --checks --allow-long"),
        "python -m mamba_recall grid ch5_capacity_long --preset ci --allow-long",
    ]


def test_the_scan_benchmark_is_a_script_and_a_grid_command_names_its_experiment():
    new = "python benchmarks/scan.py --device cpu --repeats 5 --out results/scan_bench_cpu.json"
    flags = {"--device": ("cpu",), "--repeats": ("5",), "--out": ("results/scan_bench_cpu.json",)}
    assert manifest.parse_command(new) == ("bench", flags)
    grid = "python -m mamba_recall grid ch2_thm5 --preset ci --allow-long"
    # its own name, the entry's runner family (reproduce --only, its order)
    assert manifest.parse_command(grid) == ("ch2_thm5", {"--preset": ("ci",), "--allow-long": ()})
    budget = "python -m mamba_recall grid ch5_capacity_long --preset cpu-hours --aggregate-only --partial"
    want = ("ch5_capacity_long", {"--preset": ("cpu-hours",), "--aggregate-only": (), "--partial": ()})
    assert manifest.parse_command(budget) == want  # Chapter 5's grids too: no runner of theirs runs them
    ch2 = "python -m mamba_recall.chapters.ch2_hashing_scaling.runners.scaling --preset ci"
    assert manifest.parse_command(ch2)[0] == "ch2_scaling" and manifest.parse_command(None) == (None, {})


def test_the_committed_manifest_gives_make_reproduce_its_commands():
    from mamba_recall.runners import experiment_runners

    commands = manifest.reproduce_commands(manifest.load(), ["bench", *experiment_runners()])
    gpu = [c for c in commands if manifest.needs_gpu(c)]  # listed by `make reproduce`, not run (a GPU machine's)
    assert gpu and all("tools/gpu_check.py" in c for c in gpu)  # the GPU check's bundles
    commands = [c for c in commands if c not in gpu]
    assert manifest.needs_gpu("python benchmarks/scan.py --device cuda") and not manifest.needs_gpu(commands[0])
    runners = [manifest.parse_command(c)[0] for c in commands]
    assert runners[0] == "bench" and runners.index("ch4_train") < runners.index("ch4_model_checks")
    assert commands[0].startswith("python benchmarks/scan.py ")  # whichever form the committed bundle records
    assert not any("mamba_recall bench" in c for c in commands)
    assert len(commands) == len(set(commands)) and len(commands) < len({e.command for e in manifest.load()})
