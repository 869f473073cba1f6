"""The root of every error hops-slurm raises for a person to read, and the planner's own.

Where it sits: at the bottom of the import graph. ``planner/`` and ``estimator/`` stay pure (nothing
from ``hops_slurm/``), yet their errors must reach the CLI and the daemon as the one-line messages
every other error gives; so the root type lives here and :mod:`hops_slurm.errors` re-exports it.
"""

from __future__ import annotations


class HopsError(Exception):
    """Base class: an error with a message meant for the user or administrator (the CLI prints it
    without a traceback; the daemon logs it on one line)."""


class PolicyError(HopsError):
    """A policy name, or a planner parameter, that :func:`planner.policies.make_policy` cannot use."""
