r"""The ensemble parts of Chapter 2's runners through the run store, at ``ci`` and ``paper``: one run-store job per
ensemble (what trains together as one :class:`~mamba_recall.models.linear_mamba.LinearMamba` or
:class:`~mamba_recall.models.multihead_linear_mamba.MultiHeadLinearMamba`), so an interrupted run resumes at the
ensemble it stopped in and ``--only <part>`` adds a part to the bundle without training the others again. Each is
the declared experiment of its name (:mod:`..experiments`), run by ``python -m mamba_recall grid <experiment>``; the
runner's ``main`` is that grid under the runner's name (:func:`command`).

* ``ch2_scaling`` (:mod:`.scaling`): experiment ``ch2_scaling``, one job per part (``speed``, ``grid``,
  ``multilayer``, ``repetition``, ``ablation``, ``full``), each the part's function of :mod:`.scaling`
  (:data:`.scaling.PART_FUNCTIONS`); bundle ``results/ch2_scaling_<preset>.json`` with one table per finished part
  (``data.parts``, ``data.seconds`` per part);
* ``ch2_multihead`` (:mod:`.multihead`): experiment ``ch2_multihead``, one job per (head pattern, M) ensemble
  (:func:`.multihead.run_unit`); bundle ``results/ch2_multihead_<preset>.json`` with tables ``grid``, ``noise`` and
  ``hist``, each the jobs' rows in the pattern × M order of the preset.

A job's config is the runner, its unit (part, or pattern and M), the preset and the preset's whole entry (the
sizes), seed 0 (the seeds of an ensemble are its members, in the sizes: they share one initialisation draw, one data
stream and one joint early stop, so a unit is one job, never one per (config, seed); :mod:`.scaling`); at ``paper`` it adds ``"device": "auto"``
(:func:`mamba_recall.runstore.job_device`: a GPU where the process running the job has one, with TF32 matmuls as the
ensemble einsums' cost). A job's result holds its tables in pandas' ``split`` form (columns, rows), so the bundle's
tables have the columns, the order and the numbers the one-process runners wrote.
"""

from __future__ import annotations

import importlib
import time

import pandas as pd

from mamba_recall.presets import experiment
from mamba_recall.runners import runner_command, runner_module
from mamba_recall.runstore import finished_status, make_job

from .ensemble_presets import EXPERIMENTS, PRESETS
from .job_configs import EnsembleUnit

RUNNER = "mamba_recall.chapters.ch2_hashing_scaling.runners.ensembles:run_job"
#: presets whose jobs train on a GPU where the process running them has one
GPU_PRESETS = ("paper",)


def _module(runner: str):
    return importlib.import_module(runner_module(runner))


def frame_record(frame: pd.DataFrame) -> dict:
    """A table as a job result keeps it: ``{"columns": [...], "data": [[row], ...]}`` (pandas ``split``, plain
    Python numbers), so the order of columns and rows survives the run file (whose keys are sorted)."""
    split = frame.to_dict("split")
    return {"columns": [str(c) for c in split["columns"]], "data": split["data"]}


def record_frame(record: dict) -> pd.DataFrame:
    """The table of :func:`frame_record`."""
    return pd.DataFrame(record["data"], columns=record["columns"])


def jobs_for(runner: str, preset: str, smoke: bool = False) -> list[dict]:
    """One job per ensemble of ``runner`` at ``preset`` (the grid's ``--only`` picks some, e.g. ``ch2_scaling``'s
    parts)."""
    if runner not in EXPERIMENTS:
        raise ValueError(f"{runner!r} has no ensemble parts; use one of {', '.join(EXPERIMENTS)}.")
    if preset not in PRESETS:
        raise ValueError(
            f"the ensembles of {runner} run at {', '.join(PRESETS)}, not {preset!r}; at {preset} its figures train one "
            f"model per job, declared experiments run by name: {figure_grids(runner, None)}"
        )
    sizes = experiment(runner, preset, smoke=smoke)
    device = "auto" if preset in GPU_PRESETS else None
    units = _module(runner).ensemble_units(sizes)
    return [
        make_job(
            runner,
            EnsembleUnit(runner=runner, preset=preset, smoke=smoke, sizes=sizes, device=device, **unit),
            0,
        )
        for unit in units
    ]


def run_job(config: EnsembleUnit, seed: int) -> dict:
    """One ensemble: the runner's ``run_unit(sizes, unit, device, log)`` (tables as DataFrames), its tables kept as
    :func:`frame_record`, and its seconds."""
    import sys

    import torch

    from mamba_recall.runstore import job_device

    device = torch.device(job_device(config))
    if device.type == "cuda":  # TF32 matmuls: the ensemble einsums are the whole cost
        torch.backends.cuda.matmul.allow_tf32 = True
    t0 = time.perf_counter()
    tables = _module(config.runner).run_unit(
        config.sizes, config.unit(), device, lambda msg: print(msg, file=sys.stderr, flush=True)
    )
    return {
        "tables": {name: frame_record(frame) for name, frame in tables.items()},
        "seconds": round(time.perf_counter() - t0, 1),
    }


def write_bundle(runner: str, preset: str, *, store=None, smoke: bool = False, log=print):
    """Aggregate ``runner``'s finished ensembles at ``preset`` into ``results/<runner>_<preset>.json``: each table the
    jobs' rows in the preset's order, plus the runner's ``bundle_data(finished runs)``; every finished job of the
    preset counts, whichever ones this command ran (``--only``). It starts with the one layout (``runs``, ``cells``:
    each part's ensemble and its seconds) and records the grid command (:meth:`~mamba_recall.experiment.Experiment.save_bundle`)."""
    from mamba_recall.experiment import experiment_named

    jobs = jobs_for(runner, preset, smoke)
    runs, data = finished_status(jobs, store, preset=preset, log=log)
    if not runs:
        return None
    order = {j["key"]: i for i, j in enumerate(jobs)}
    runs = sorted(runs, key=lambda r: order[r["key"]])
    names = list(dict.fromkeys(t for r in runs for t in r["result"]["tables"]))
    tables = {
        t: pd.concat(
            [record_frame(r["result"]["tables"][t]) for r in runs if t in r["result"]["tables"]], ignore_index=True
        )
        for t in names
    }
    mod = _module(runner)
    data.update(mod.bundle_data(runs))
    sizes = experiment(runner, preset, smoke=smoke)
    return experiment_named(runner).save_bundle(
        preset, data, {"preset": preset, "smoke": smoke, **sizes}, tables, smoke=smoke, log=log
    )


def recorded_estimate(runner: str, preset: str):
    """The ``estimate(left)`` of ``runner``'s ensembles: each job at the seconds the committed bundle of the preset
    records for its unit (not measured here: an ensemble is timed by running it), none where none is recorded."""

    def estimate(left: list[dict]) -> tuple[float, str]:
        from mamba_recall.results import BundleMissing, evidence

        try:  # a damaged bundle raises: it is named, not taken for an absent one; a partial one's seconds count too
            recorded = _module(runner).recorded_seconds(evidence(runner, preset=preset, complete=False))
        except BundleMissing:
            recorded = {}
        known = [recorded.get(_module(runner).unit_name(j["config"])) for j in left]
        total = sum(s for s in known if s is not None)
        missing = sum(s is None for s in known)
        basis = f"the seconds the committed {runner}_{preset} records per ensemble" + (
            f"; {missing} of {len(left)} without a recorded time, counted as 0" if missing else ""
        )
        return total, basis

    return estimate


def figures(runner: str) -> tuple[str, ...]:
    """The one-model-per-job figure grids of :mod:`.figure_grids` that ``runner``'s ensembles have at ``cpu-hours``: Fig. 8
    and Thm 5 for ``ch2_multihead``, Figs. 7, 10–11 and Tab. 10 for ``ch2_scaling``; each is the declared experiment
    ``ch2_<part>``."""
    from . import figure_grids as grids

    return tuple(p for p in grids.PARTS if (p in grids.HEAD_PARTS) == (runner == "ch2_multihead"))


def figure_grids(runner: str, parts) -> str:
    """The grid command of the one-model-per-job figures ``parts`` (None: :func:`figures`) at ``cpu-hours``, the one
    preset at which they are all one-model grids (at :data:`PRESETS` the ensembles make Figs. 7, 8, 10–11 and Tab. 10)."""
    from . import figure_grids as grids

    from mamba_recall.experiment import command_line

    return command_line([grids.experiment_name(p) for p in parts or figures(runner)], "cpu-hours")


def refusal(runner: str, preset: str | None, parts) -> str:
    """The one line of a runner given a one-model-per-job figure (``parts``, those of :data:`.figure_grids.PARTS`) or a
    preset without ensembles (``parts`` None: :func:`figures`), naming the grid command that runs them instead
    (:func:`figure_grids`)."""
    from . import figure_grids as grids

    asked = f"--only {' '.join(parts)}" if parts else f"--preset {preset}"
    parts = list(parts or figures(runner))
    names = " ".join(grids.experiment_name(p) for p in parts)
    what = (
        f"{names} is a declared experiment; run it"
        if len(parts) == 1
        else f"{names} are declared experiments; run them"
    )
    return f"{runner} {asked}: {what} by name: {figure_grids(runner, parts)}"


def command(runner: str, argv=None) -> int:
    """The command line of ``runner``'s ensembles (its ``main``): ``python -m mamba_recall grid <runner> --preset P``
    under the runner's name (:func:`mamba_recall.experiment.grid_command`, default ``--preset ci``), ``--only``
    picking ensembles (``ch2_scaling``'s parts: ``--only grid ablation``). ``--parts`` is ``--only`` written as the
    committed pages and verdicts print it (:func:`mamba_recall.runstore.as_only`). A one-model-per-job figure among
    them stops with :func:`refusal` (those are declared experiments of their own, run by name), as a preset without
    ensembles does (:func:`jobs_for`'s error)."""
    from mamba_recall.experiment import grid_command as run_grid_command
    from mamba_recall.runstore import as_only

    from . import figure_grids as grids

    words = as_only(argv, "--parts")
    picked, on = [], False
    for w in words:
        on = w == "--only" or (on and not w.startswith("-"))
        if on and w != "--only":
            picked.append(w)
    figure_parts = [p for p in picked if p in grids.PARTS]
    if figure_parts:
        raise SystemExit(f"error: {refusal(runner, None, figure_parts)}")
    return run_grid_command(words, name=runner, prog=runner_command(runner), default_preset="ci")


if __name__ == "__main__":
    raise SystemExit(
        "error: ensembles holds the run-store ensembles of Chapter 2's runners; run python -m mamba_recall grid "
        "ch2_scaling ch2_multihead --preset ci|paper."
    )
