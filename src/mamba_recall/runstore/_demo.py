"""The run store's demo grid: a fake experiment that sleeps (:func:`demo_job`), its typed config
(:class:`DemoConfig`), for the tests and for ``python -m mamba_recall.runstore demo`` (:func:`main`)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from ..longrun import long_runs_allowed
from ._cli import add_engine_args, engine_options, positive_int
from ._config import JobConfig, omitted_if_none
from ._engines import run_grid
from ._records import make_job


@dataclass(frozen=True, kw_only=True)
class DemoConfig(JobConfig):
    """One cell of the demo grid: :func:`demo_job` sleeps ``sleep`` seconds and returns ``value = 10 x + seed``.

    The optional fields, for the fault tests (absent from the record when None, so the plain grid's keys are those
    of its dicts ``{"x", "sleep"}``): ``log`` (a file: one line ``x seed pid`` is appended when the job starts, so a
    test can count how often each job ran), ``fail_seeds`` (these seeds raise after the sleep), ``nan_seeds`` (these
    seeds return ``value`` NaN), ``exit_seeds`` (these seeds call ``sys.exit(2)``) and ``die_seeds`` with ``die``
    (these seeds end their process at once: ``"kill"`` SIGKILL as from the OOM killer, ``"segv"`` SIGSEGV, ``"exit"``
    ``os._exit(3)``; None: ``"kill"``)."""

    x: int
    sleep: float
    fail_seeds: list[int] | None = omitted_if_none()
    exit_seeds: list[int] | None = omitted_if_none()
    die_seeds: list[int] | None = omitted_if_none()
    die: str | None = omitted_if_none()
    log: str | None = omitted_if_none()
    nan_seeds: list[int] | None = omitted_if_none()

    def __post_init__(self):
        super().__post_init__()
        if self.die not in (None, "kill", "segv", "exit"):
            raise ValueError(
                f"DemoConfig.die is 'kill', 'segv' or 'exit' (how a die_seeds job ends), got {self.die!r}."
            )


def demo_job(config: DemoConfig, seed: int) -> dict:
    """A tiny fake experiment (the tests' and the README's example): sleeps ``config.sleep`` seconds and returns a
    number that depends on the config and the seed (``value = 10 x + seed``), its process and whether it may run long;
    the fault fields of :class:`DemoConfig` make chosen seeds fail, return NaN, exit or die."""
    if config.log:
        with open(config.log, "a") as f:
            f.write(f"{config.x} {seed} {os.getpid()}\n")
    if seed in (config.die_seeds or ()):
        if config.die == "exit":
            os._exit(3)
        os.kill(os.getpid(), signal.SIGSEGV if config.die == "segv" else signal.SIGKILL)
        time.sleep(60)  # the signal ends the process before this
    time.sleep(float(config.sleep))
    if seed in (config.exit_seeds or ()):
        sys.exit(2)
    if seed in (config.fail_seeds or ()):
        raise RuntimeError(f"demo failure: seed {seed} is in fail_seeds")
    value = float("nan") if seed in (config.nan_seeds or ()) else config.x * 10 + seed
    return {"value": value, "pid": os.getpid(), "long_allowed": long_runs_allowed()}


def demo_members(config: DemoConfig, seeds: list[int]) -> list[dict]:
    """:func:`demo_job` for several seeds of one config in one call (the store's ``members`` units): one result per
    seed, each what :func:`demo_job` returns for it (one sleep for all, as an ensemble shares its steps)."""
    results = [demo_job(replace(config, sleep=0), s) for s in seeds]
    time.sleep(float(config.sleep))
    return results


def demo_jobs(
    seeds: int = 3, cells: int = 2, sleep: float = 0.2, fail_seeds=(), log: str | None = None, *, exit_seeds=(),
    die_seeds=(), die: str = "kill",
) -> list[dict]:  # fmt: skip
    """The demo grid: ``cells`` × ``seeds`` jobs of :func:`demo_job`, each of a :class:`DemoConfig` (its optional
    fields only when given, so the keys of the plain grid do not change)."""
    faults = dict(
        fail_seeds=sorted(fail_seeds) or None,
        exit_seeds=sorted(exit_seeds) or None,
        die_seeds=sorted(die_seeds) or None,
        die=die if die_seeds else None,
        log=str(log) if log else None,
    )
    return [
        make_job("demo.sleep", DemoConfig(x=x, sleep=sleep, **faults), s) for x in range(cells) for s in range(seeds)
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description="The run store's demo grid (a fake experiment that sleeps).")
    ap.add_argument("command", choices=["demo"])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--cells", type=int, default=2)
    ap.add_argument("--sleep", type=float, default=0.2)
    ap.add_argument("--jobs", type=positive_int, default=1)
    ap.add_argument("--store", default=None)
    ap.add_argument("--fail-seed", type=int, action="append", default=[], help="this seed's jobs raise")
    ap.add_argument("--exit-seed", type=int, action="append", default=[], help="this seed's jobs call sys.exit(2)")
    ap.add_argument("--die-seed", type=int, action="append", default=[], help="this seed's jobs kill their process")
    ap.add_argument("--die", choices=["kill", "segv", "exit"], default="kill", help="how --die-seed's jobs die")
    ap.add_argument("--log", default=None, help="append 'x seed pid' to this file as each job starts")
    add_engine_args(ap)
    args = ap.parse_args(argv)
    jobs = demo_jobs(
        args.seeds, args.cells, args.sleep, args.fail_seed, args.log, exit_seeds=args.exit_seed,
        die_seeds=args.die_seed, die=args.die,
    )  # fmt: skip
    store = Path(args.store) if args.store else None
    recs = run_grid(
        "mamba_recall.runstore:demo_job",
        jobs,
        n_jobs=args.jobs,
        store=store,
        estimate=lambda left: (args.sleep * len(left), f"{args.sleep} s per job, as configured"),
        progress=False,
        **engine_options(args),
    )
    print(f"ran {len(recs)} jobs", flush=True)
