"""The run store's exceptions: a run file that cannot be trusted (:class:`RunFileError`), and the
:class:`GridExit` family that ends a grid command with a message and an exit status, without a traceback."""

from __future__ import annotations


class RunFileError(ValueError):
    """A run file that cannot be trusted (not JSON, edited by hand, a newer schema, a missing field): the message
    names the file and the fix."""


class UnhashedRunFile(RunFileError):
    """A run file of schema version 1 (no ``sha256``): refused, with the fix (delete it, or migrate its store once).
    A grid does not run its job again over it (a store of genuine old runs is migrated, not recomputed)."""


class GridExit(SystemExit):
    """Ends a grid command with a message and an exit status, without a Python traceback (a ``SystemExit``: a
    command's ``main`` need not catch it). ``message`` is what was wrong and what to do."""

    exit_status = 1

    def __init__(self, message: str):
        super().__init__(message if self.exit_status == 1 else self.exit_status)
        self.message = message

    def __str__(self) -> str:
        return self.message


class StoreNotWritable(GridExit):
    """The run store cannot be written: found before any job starts."""


class JobsFailed(GridExit):
    """Some jobs raised (or their result could not be saved in the store); the others ran. ``failures``: one dict
    per job (``key``, ``config``, ``seed``, ``error``, and ``file`` or ``saved_at``)."""

    def __init__(self, message: str, failures: list[dict]):
        super().__init__(message)
        self.failures = failures


class StoreFull(GridExit):
    """The run store's disk filled (ENOSPC, or the quota: EDQUOT) while the grid ran: no further job is started,
    nothing half-written is left (files are written atomically) and a finished result that could not be written is
    kept elsewhere and named. The message names the folder and the fix (free space, or ``--store`` on another disk)."""


class GridInterrupted(GridExit):
    """Ctrl-C (SIGINT) or SIGTERM: the one-line message is printed, exit status 130 (:class:`GridTerminated`, its
    SIGTERM form, 143)."""

    exit_status = 130


class GridTerminated(GridInterrupted):
    """SIGTERM (``kill <pid>``, a scheduler ending the job): the workers are stopped, the one-line message (what
    finished, the command that resumes) is printed, exit status 143 (128 + SIGTERM, as the shell reports it)."""

    exit_status = 143


class BundleNotReplaced(GridExit):
    """A complete bundle would have been replaced by one aggregating fewer jobs."""
