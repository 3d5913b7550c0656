"""The charts and live explorers of Chapter 3, input selectivity, one module per family of figures."""
