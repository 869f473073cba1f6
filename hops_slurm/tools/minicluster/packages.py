"""Install Debian's Slurm (and, for accounting, MariaDB + slurmdbd) packages when missing."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess

from hops_slurm.errors import MiniclusterError

log = logging.getLogger(__name__)

#: executable -> Debian package that provides it
SLURM_PACKAGES = {
    "slurmctld": "slurmctld",
    "slurmd": "slurmd",
    "sbatch": "slurm-client",
    "munged": "munge",
    "lua5.1": "lua5.1",  # Slurm 22.05 links job_submit_lua against Lua 5.1; the hook tests run it too
}
ACCOUNTING_PACKAGES = {"slurmdbd": "slurmdbd", "mariadbd": "mariadb-server"}
# job_submit_lua.so and the select/gres plugins live here; no executable to look for.
PLUGIN_PACKAGE = "slurm-wlm-basic-plugins"
PLUGIN_PROBE = "/usr/lib/x86_64-linux-gnu/slurm-wlm/job_submit_lua.so"


def _which(cmd: str) -> str | None:
    return shutil.which(cmd) or shutil.which(cmd, path="/usr/sbin:/usr/bin:/sbin:/bin")


def missing_packages(accounting: bool) -> list[str]:
    wanted = dict(SLURM_PACKAGES)
    if accounting:
        wanted.update(ACCOUNTING_PACKAGES)
    missing = [pkg for cmd, pkg in wanted.items() if _which(cmd) is None]
    if not os.path.exists(PLUGIN_PROBE):
        missing.append(PLUGIN_PACKAGE)
    return sorted(set(missing))


def ensure_mariadb() -> list[str]:
    """MariaDB on the host for a Slurm root's slurmdbd (it connects over 127.0.0.1)."""
    if _which("mariadbd"):
        return []
    _apt_install(["mariadb-server"])
    return ["mariadb-server"]


def _apt_install(packages: list[str]) -> None:
    if os.geteuid() != 0:
        raise MiniclusterError(f"Debian packages missing ({', '.join(packages)}); run as root to install them, or apt-get install them")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    log.warning("installing Debian packages: %s", " ".join(packages))
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]):
        result = subprocess.run(argv, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise MiniclusterError(f"`{' '.join(argv)}` failed ({result.returncode}):\n{result.stderr[-2000:]}")


def ensure_packages(accounting: bool = False) -> list[str]:
    """apt-get install what is missing; returns the packages installed (empty when all present)."""
    missing = missing_packages(accounting)
    if not missing:
        return []
    _apt_install(missing)
    still = missing_packages(accounting)
    if still:
        raise MiniclusterError(f"packages still missing after apt-get install: {', '.join(still)}")
    return missing
