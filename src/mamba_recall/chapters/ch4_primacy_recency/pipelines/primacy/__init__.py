r"""Chapter 4 analysis pipelines (paper 004): what the notebooks call, one function per experiment.

Every function takes a model (an S-model from :func:`load_model`, or any mamba_ssm-named
:class:`~mamba_recall.models.mamba.MambaLMHeadModel`) and returns plain numbers / arrays. The ``check_*`` functions compute the summary numbers of each
experiment (drops, margins, intervals); the verdicts are decided only by the rules declared in
:mod:`mamba_recall.chapters.ch4_primacy_recency.claims`, which read those numbers (a ``pass`` key, where present, is the
chapter's earlier per-check flag, kept for the interactive explorers).

Which model: :func:`load_model` loads ``results/checkpoints/ch4_<name>.pt`` unless the environment
variable ``MAMBA_RECALL_CH4_CHECKPOINT`` points to another checkpoint — a ``.pt`` written by
:mod:`mamba_recall.chapters.ch4_primacy_recency.runners.train` or :mod:`mamba_recall.chapters.ch4_primacy_recency.runners.edge` (e.g. the larger GPU S-model), or a mamba_ssm
``save_pretrained`` directory (``config.json`` + ``pytorch_model.bin``) whose vocabulary follows
:class:`~mamba_recall.tasks.serial_recall.RecallVocab` (``MAMBA_RECALL_CH4_VOCAB="names,relations,filler"``,
default ``32,8,16``).

The code is split by responsibility; import every name from here (``from mamba_recall.analysis import primacy as A``,
then ``A.<name>``):

* ``_models``: the S-models: :func:`checkpoint_path`, :func:`build_model`, :func:`read_smodel`,
  :func:`load_checkpoint`, :func:`load_model` (and the ``MAMBA_RECALL_CH4_CHECKPOINT`` override), the training
  sidecar's :func:`learning_curve`, :func:`converged` and :func:`model_card`, :func:`untrained_twin` and the
  evaluation :func:`contexts`;
* ``_recall``: recall by position under the probes of §4.1 and §4.4: :func:`ucurves`, :func:`pressure_length`,
  :func:`distractor_sweep`, :func:`state_init_effects`, :func:`state_scale_sweep` and their ``check_*`` numbers;
* ``_channels``: the long-term channels of §4.2 (:func:`identification_prompt`, :func:`write_strength`,
  :func:`check_sparsity`, :func:`ablation_effects`), :func:`periodic_deltas` (§4.3), Table 1's transfer
  (:func:`transfer_sets`, :func:`transfer_effects`, :func:`transfer_table`, :func:`transfer_ablation`) and :func:`slow_state_probe`;
* ``_edge``: the committed edge family (:class:`EdgeFamily`) and
  :func:`committed_model_curves`.

``A.iv`` and ``A.ch`` are :mod:`mamba_recall.analysis.interventions` and :mod:`mamba_recall.analysis.channels`. A test
that patches a function patches it in the part that looks it up (``load_checkpoint`` is called by
``_models.load_model`` and ``_edge.committed_model_curves``, ``contexts`` by every part): the names here are the same
objects, bound once at import.
"""

from __future__ import annotations

from mamba_recall.analysis import channels as ch
from mamba_recall.analysis import interventions as iv
from ._channels import (
    TRANSFER_SEED,
    ablation_effects,
    check_all_steps,
    check_first_triplet,
    check_sparsity,
    check_transfer,
    identification_prompt,
    periodic_deltas,
    slow_state_probe,
    transfer_ablation,
    transfer_effects,
    transfer_sets,
    transfer_table,
    write_strength,
)
from ._edge import EDGE_CHECKS_COMMAND, EDGE_COMMAND, MAMBA2_RECIPE, EdgeFamily, committed_model_curves
from ._models import (
    ENV_CHECKPOINT,
    ENV_VOCAB,
    EVAL_SEED,
    VALID_CHECKPOINT,
    CheckpointEnvError,
    build_model,
    checkpoint_path,
    edge_model_name,
    contexts,
    converged,
    learning_curve,
    load_checkpoint,
    load_model,
    model_card,
    read_smodel,
    regenerate_command,
    untrained_twin,
)
from ._recall import (
    DistractorSweep,
    check_distractors,
    check_random_vs_repeated,
    check_state_init,
    check_ushape,
    distractor_sweep,
    pressure_length,
    state_init_effects,
    state_scale_sweep,
    typical_state_scale,
    ucurves,
)
