"""Chapter 1's run-store experiments, declared once (:class:`mamba_recall.experiment.Experiment`): one per part of
its grid (:data:`.runners.grid_jobs.PARTS`), each named as its run-store folder and bundle. Their jobs, job
function, estimate and bundles are the runners' (:mod:`.runners.grid_jobs`, :mod:`.runners.grid`,
:mod:`.runners.grid_bundles`); each runs by its name, ``python -m mamba_recall grid <experiment> --preset P``."""

from __future__ import annotations

import functools

from mamba_recall.experiment import Experiment, sizes_from

from .claims import RANGES
from .configs import EXPERIMENTS as SIZES
from .runners.grid import estimate
from .runners.grid_bundles import write_bundles
from .runners.grid_jobs import CHECKPOINT_MODELS, MODELS, PARTS, PROBE_METRICS, RUNNER, jobs_for

#: the configs entries each part's jobs are made from (a part named as its entry is made from that one)
_SIZES = {
    "checkpoints": tuple(f"ch1_{m}" for m in CHECKPOINT_MODELS),
    "models": tuple(f"ch1_{m}" for m in MODELS),
}
_MODEL_METRICS = ("test_accuracy", "train_accuracy", "steps_run")
_METRICS = {
    "checkpoints": ("test_query_accuracy", "train_query_accuracy", "steps_run"),
    "models": _MODEL_METRICS + PROBE_METRICS,
    "full_mamba": _MODEL_METRICS,
    "wo": _MODEL_METRICS,
    "full_onehot": _MODEL_METRICS,
}


def _part(part: str) -> Experiment:
    return Experiment(
        name=PARTS[part],
        sizes=sizes_from(SIZES, *_SIZES.get(part, (PARTS[part],))),
        make_jobs=lambda preset, smoke=False: jobs_for(preset, smoke, parts=[part]),
        run_job=RUNNER,
        write=functools.partial(write_bundles, parts=[part]),
        estimate=estimate,
        metrics=_METRICS.get(part, ("accuracy", "steps_run")),
        # the chapter's declared ranges (claims.RANGES: its accuracies and fractions, [0, 1])
        bounds={m: RANGES[m] for m in _METRICS.get(part, ("accuracy", "steps_run")) if m in RANGES},
        optional_metrics=PROBE_METRICS if part == "models" else (),  # the probe runs on the |K| = 1 models only
    )


EXPERIMENTS = tuple(_part(part) for part in PARTS)
