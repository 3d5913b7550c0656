"""The charts and live explorers of Chapter 4, primacy and recency, one module per family of figures."""
