"""Formulas and constructions from the papers, as code."""
