"""``python -m mamba_recall.runstore demo``: the run store's demo grid (:func:`mamba_recall.runstore.main`)."""

from ._demo import main

if __name__ == "__main__":
    main()
