"""One way to declare a runner module's experiment, :meth:`mamba_recall.experiment.Experiment.of`: its fields read
from the module's declared names (``EXPERIMENT``, ``jobs_for``, ``RUNNER``, ``write_bundle``, ``estimate``,
``METRICS``) and its sizes from the chapter's configs table; a missing name is said, naming the module and the
attribute."""

from __future__ import annotations

import types

import pytest

from mamba_recall.experiment import Experiment


def _module(**names) -> types.ModuleType:
    """A runner module declaring ``names`` (the demo grid's, unless one is given as None: then it is not declared)."""
    module = types.ModuleType("demo_runner")
    declared = dict(
        EXPERIMENT="demo_grid",
        jobs_for=lambda preset, smoke=False: [],
        RUNNER="demo_runner:run_job",
        write_bundle=lambda preset, *, store=None, smoke=False, log=print: None,
        estimate=lambda left: (0.0, "none"),
        METRICS=["value", "steps"],
    )
    declared.update(names)
    for k, v in declared.items():
        if v is not None:
            setattr(module, k, v)
    return module


_TABLE = {"demo_grid": {"ci": "ci sizes", "paper": "paper sizes"}, "demo_other": {"ci": "other ci"}}


def test_of_reads_the_module_s_declared_names_and_its_entry_s_sizes():
    module = _module()
    e = Experiment.of(module, _TABLE)
    assert (e.name, e.run_job, e.metrics) == ("demo_grid", "demo_runner:run_job", ("value", "steps"))
    assert e.make_jobs is module.jobs_for and e.write is module.write_bundle and e.estimate is module.estimate
    assert e.sizes == {"ci": "ci sizes", "paper": "paper sizes"}
    assert (e.members_job, e.stages, e.members_presets) == (None, None, ())


def test_fields_given_replace_the_module_s_and_are_not_read_from_it():
    module = _module(RUNNER=None, METRICS=None)  # declares neither: given, they are not looked for
    e = Experiment.of(module, _TABLE, "demo_grid", "demo_other", run_job="other:run_job", metrics=("x",))
    assert (e.run_job, e.metrics, e.write) == ("other:run_job", ("x",), module.write_bundle)
    assert e.sizes == {"ci": {"demo_grid": "ci sizes", "demo_other": "other ci"}}  # the presets both define


def test_a_missing_name_or_sizes_given_is_said():
    with pytest.raises(AttributeError, match="demo_runner declares no write_bundle .the experiment's write.; declare"):
        Experiment.of(_module(write_bundle=None), _TABLE)
    with pytest.raises(TypeError, match="sizes come from the configs table; name its entries instead"):
        Experiment.of(_module(), _TABLE, sizes={"ci": {}})
    with pytest.raises(ValueError, match="sizes_from: name entries of the chapter's configs"):
        Experiment.of(_module(EXPERIMENT="demo_absent"), _TABLE)
