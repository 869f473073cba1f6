"""Exception types shared by every part of hops-slurm.

Each carries a message a person can act on; the CLI prints it without a traceback.
"""

from __future__ import annotations


class HopsError(Exception):
    """Base class: an error with a message meant for the user or administrator."""


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
