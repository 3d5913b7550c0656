"""Every data stream's seed, in one table.

A run's ``seed`` sets its initialisation and its training stream; the held-out and probe streams below are fixed
seeds (or fixed offsets) chosen far from every training stream, so that no evaluation sequence is also a training
sequence. The values are the ones the committed results were made with: changing one changes every number made
from its stream (and the run store's job keys, where a config records it).

| name | stream | used by |
|---|---|---|
| :data:`TRAIN_STRIDE` | training batch of step ``s`` drawn with seed ``seed · 100003 + s`` | Chapter 2's runners, Chapter 5 |
| :data:`MQAR_EVAL` | held-out MQAR set (Chapter 5 adds κ: seed ``10⁶ + κ``) | Chapter 2's runners and views, Chapter 5 |
| :data:`MQAR_NOISE` | the output-noise draws of Chapter 2's multi-head grid | ``ch2_multihead`` |
| :data:`CH3_TRAIN_BASE` | Chapter 3's training batch of step ``s``: ``10⁷ · (seed + 1) + s`` | Chapter 3's ``training.selectivity``, the benchmark |
| :data:`PRIMACY_EVAL` | paper 004's probe contexts (serial recall, distractors, periodicity) | ``analysis.primacy`` |
| :data:`TRANSFER_PROBE` | the transfer tasks' evaluation sets of Chapter 4's probes | ``analysis.primacy`` |
| :data:`TRANSFER_TRAIN_EVAL` | the transfer tasks' held-out set during fine-tuning | ``ch4_train`` |
| :data:`EDGE_MIX_OFFSET` | the edge family's transfer fine-tune of seed k: ``1000 + k`` | ``ch4_edge_mix`` |
"""

from __future__ import annotations

TRAIN_STRIDE = 100003
MQAR_EVAL = 10**6
MQAR_NOISE = 2 * 10**6
CH3_TRAIN_BASE = 10_000_000
PRIMACY_EVAL = 20250
TRANSFER_PROBE = 31337
TRANSFER_TRAIN_EVAL = 777
#: The transfer fine-tune of edge model seed k (``ch4_edge_mix``) draws its training stream with seed
#: ``EDGE_MIX_OFFSET + k`` (far from the edge family's seeds 0–5, so no batch of the base model's training recurs).
EDGE_MIX_OFFSET = 1000
