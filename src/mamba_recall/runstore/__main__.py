"""``python -m mamba_recall.runstore demo``: the run store's demo grid (:func:`mamba_recall.runstore.main`);
``python -m mamba_recall.runstore migrate``: a store's run files to the current schema (:mod:`._migrate`)."""

import sys

from ._demo import main
from ._migrate import main as migrate_main

if __name__ == "__main__":
    if sys.argv[1:2] == ["migrate"]:
        migrate_main(sys.argv[2:])
    else:
        main()
