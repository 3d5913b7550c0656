"""Synthetic recall tasks. ``mqar``: zoology-compatible multi-query associative recall."""

from .mqar import IGNORE_INDEX, MQARBatch, MQARConfig, mqar_batch, multiquery_ar

__all__ = ["IGNORE_INDEX", "MQARBatch", "MQARConfig", "mqar_batch", "multiquery_ar"]
