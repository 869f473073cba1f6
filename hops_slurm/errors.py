"""Exception types shared by every part of hops-slurm.

Each carries a message a person can act on; the CLI prints it without a traceback. The root,
:class:`HopsError`, is defined in :mod:`planner.errors` (so that the pure packages can raise it) and
re-exported here.
"""

from __future__ import annotations

from planner.errors import HopsError

__all__ = ["ConfigError", "DirectiveError", "GovernanceError", "HopsError", "MiniclusterError"]


class ConfigError(HopsError):
    """The site configuration is invalid; the message names every offending key path."""


class DirectiveError(HopsError):
    """A ``#HOPS`` directive is malformed; the message names the offending key."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        self.reason = message
        super().__init__(f"#HOPS {key}: {message}")


class MiniclusterError(HopsError):
    """The local fake-GPU Slurm cluster could not be brought up, queried or torn down."""


class GovernanceError(HopsError):
    """Output of ``sacctmgr``, ``sshare`` or ``scontrol`` that is not what the site's Slurm prints, or a read
    that failed: one line naming the command, the line and the field (:mod:`hops_slurm.slurm.assoc`)."""
