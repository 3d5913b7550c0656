"""Probes and interventions on trained models: hidden states, hash tables, channel statistics, ablations."""
