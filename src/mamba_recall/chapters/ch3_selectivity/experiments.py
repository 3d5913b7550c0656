"""Chapter 3's run-store experiments, declared once (:class:`mamba_recall.experiment.Experiment`), each named as its
runner, run-store folder and bundle: keep-every-n-th, MQAR (Fig. 4 and Fig. A.3) and induction heads. Their jobs,
job functions, estimators and bundles are the runners' (:mod:`.runners`); the MQAR grids can train a config's seeds
as one ensemble (``--members``). The sweeps of the hand-set MQAR constructions (:mod:`.runners.mqar_constructions`,
one job per (κ, |V|) pair, nothing trained) are declared as they are."""

from __future__ import annotations

from mamba_recall.experiment import Experiment

from .configs import EXPERIMENTS as SIZES
from .runners import induction, keep_nth, mqar_constructions, mqar_figa3, mqar_train
from .runners.common import measured_estimate
from .training.selectivity import GPU_PRESETS, STORE_PRESETS

#: the ranges of the trained grids' metrics (accuracies are shares of positions, steps counts), to which their
#: intervals over seeds are clipped
_RANGES = {"accuracy": (0.0, 1.0), "accuracy_nonblank": (0.0, 1.0), "steps": (0.0, float("inf"))}
#: the configuration that sets a keep-every-n-th job's step time (its estimate times one job of each)
_KEEP_TIMING = ("T", "d", "N", "model")


def _declare(module, *, key=None, members: bool = False, **fields) -> Experiment:
    """A trained grid of a runner ``module`` (:meth:`Experiment.of`): its jobs at the run store's presets only
    (``PRESETS``, else :data:`STORE_PRESETS`), its estimate measured (:func:`measured_estimate`, a step of one job
    per ``key`` of the configs); ``members``: a config's seeds can train as one ensemble (``MEMBERS_RUNNER``) at the
    GPU presets; ``fields``: those given instead of the module's (``metrics``). Its ``bounds``: :data:`_RANGES` of
    its metrics."""
    presets = getattr(module, "PRESETS", STORE_PRESETS)

    def make_jobs(preset: str, smoke: bool = False) -> list[dict]:
        if preset not in presets:
            raise ValueError(f"{module.__name__} runs the run store at {', '.join(presets)} only")
        return module.jobs_for(preset, smoke)

    def estimate(left: list[dict], members: int = 1) -> tuple[float, str]:
        train_members = getattr(module, "train_members", None)
        return measured_estimate(
            left, module.train_one, key or (lambda c: c), members=members, train_members=train_members
        )

    metrics = fields.get("metrics", getattr(module, "METRICS", ()))
    fields["bounds"] = {k: v for k, v in _RANGES.items() if k in {m.rsplit(".", 1)[-1] for m in metrics}}
    return Experiment.of(
        module,
        SIZES,
        make_jobs=make_jobs,
        estimate=estimate,
        members_job=module.MEMBERS_RUNNER if members else None,
        members_presets=GPU_PRESETS if members else (),
        **fields,
    )


EXPERIMENTS = (
    _declare(keep_nth, metrics=("row.accuracy", "row.steps"), key=lambda c: {k: c[k] for k in _KEEP_TIMING}),
    _declare(mqar_train, members=True),
    _declare(mqar_figa3, members=True),
    _declare(induction, metrics=("row.accuracy", "row.accuracy_nonblank", "row.steps")),
    Experiment.of(mqar_constructions, SIZES),
)
