"""Which site configuration a command uses: the one the daemon uses.

Where it sits: before :func:`hops_slurm.config.load_config`. The daemon, ``plan``, ``failopen``, ``queue``,
``report``, ``calibrate`` and ``config check`` all find their configuration with :func:`find_config`: the file
given on the command line, else ``$HOPS_CONFIG``, else the system path :data:`SYSTEM_CONFIG`. The sample
shipped with the package (:func:`hops_slurm.bundled.sample_config`) is never taken silently: only when named
(``config check --sample``, or its path).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hops_slurm.config import SiteConfig, load_config
from hops_slurm.errors import ConfigError

SYSTEM_CONFIG = Path("/etc/hops-slurm/hops.toml")
CONFIG_ENV = "HOPS_CONFIG"
WHERE = f"--config FILE, else ${CONFIG_ENV}, else {SYSTEM_CONFIG}"


@dataclass(frozen=True)
class FoundConfig:
    """A configuration file and how it was chosen (``source``: "command line", "$HOPS_CONFIG", "system path",
    "sample")."""

    path: Path
    source: str

    def describe(self) -> str:
        return f"{self.path} ({self.source})"


def find_config(given: Path | None = None, *, sample: bool = False) -> FoundConfig:
    """The configuration file a command uses (the daemon's): ``given``, else ``$HOPS_CONFIG``, else
    :data:`SYSTEM_CONFIG`; ``sample``: the bundled sample. Whether it exists is the loader's question."""
    if sample:
        from hops_slurm.bundled import sample_config

        return FoundConfig(sample_config(), "sample")
    if given is not None:
        return FoundConfig(given, "command line")
    env = os.environ.get(CONFIG_ENV, "")
    if env:
        return FoundConfig(Path(env), f"${CONFIG_ENV}")
    return FoundConfig(SYSTEM_CONFIG, "system path")


def load_found(found: FoundConfig) -> SiteConfig:
    """The configuration at ``found``; a missing file is one error naming it and how it was chosen."""
    if not found.path.exists() and not found.path.is_symlink():
        raise ConfigError(f"{found.describe()}: no such file (the configuration is {WHERE}; "
                          "`hops-slurm site files DIR` writes a template)")
    return load_config(found.path)


def site_config(given: Path | None = None) -> SiteConfig:
    """The configuration a command runs with (:func:`find_config`, then loaded and validated)."""
    return load_found(find_config(given))
