import os
import signal
import sys


def _interrupted_while_starting(*_):
    """Ctrl-C while the libraries load (seconds: torch, numpy): nothing has run and nothing was written, so the
    process ends at once with one line. Raising KeyboardInterrupt there instead can land inside a C extension's
    import (numpy then reports "cannot load module more than once per process" with a traceback)."""
    sys.stderr.write("error: interrupted while starting; nothing was run or changed.\n")
    sys.stderr.flush()
    os._exit(1)


signal.signal(signal.SIGINT, _interrupted_while_starting)
from .cli import main  # noqa: E402

signal.signal(signal.SIGINT, signal.default_int_handler)  # from here on, Ctrl-C is the commands' own to handle

sys.exit(main())
