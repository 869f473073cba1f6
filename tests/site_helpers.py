"""What the site-shaped live tests share (tests/hops_slurm/site/conftest.py's fixtures, test_site_live.py,
test_admin_guide_live.py): the cluster's spec, the installed `hops-slurm`, putting the hook files back."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from hops_slurm.hooklua import MODULE_FILES
from hops_slurm.tools.minicluster.cluster import Minicluster
from tests_paths import DATA

CHECKOUT_HOOK = Path(__file__).resolve().parents[1] / "hooks" / "job_submit.lua"  # its hops_*.lua are the module
SPEC = Path(os.environ.get("HOPS_SITE_SPEC") or DATA / "minicluster-site.toml")


@dataclass(frozen=True)
class Installed:
    """The `hops-slurm` command (argv) and the shipped job_submit.lua, whose directory holds the module files."""
    hops_slurm: list[str]
    hook: Path


def sacctmgr(cluster: Minicluster, *args: str) -> None:
    proc = cluster.run(["sacctmgr", "-i", *args], check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0 or any(s in text for s in (
        "Nothing new added", "Nothing modified", "Already existing", "didn't affect anything")), text


def reinstall_hooks(cluster: Minicluster, installed: Installed) -> None:
    """The site's own hook and the Hops module files beside slurm.conf again, and slurmctld reconfigured."""
    etc = cluster.spec.state_dir / "etc"
    assert cluster.spec.site_hook is not None
    shutil.copyfile(cluster.spec.site_hook, etc / "job_submit.lua")
    for name in MODULE_FILES:
        shutil.copyfile(installed.hook.parent / name, etc / name)
    # slurmctld reloads job_submit.lua only when its modification time (seconds) is later than its last load,
    # which may have been this very second (a job submitted by the module before): a time ahead of now is later
    later = time.time() + 2
    os.utime(etc / "job_submit.lua", (later, later))
    cluster.run(["scontrol", "reconfigure"])
