"""The site-shaped cluster (tests/data/minicluster-site.toml), up once per release for every live test of this
folder (tests/hops_slurm/site/test_admin_guide_live.py, then test_site_live.py): the site's accounts and QOS
added, the site's own job_submit.lua (tests/data/site/) calling the Hops module installed as `hops-slurm site
files` writes it out of the wheel, a wheel built from this checkout into a virtualenv outside it
(tests/wheel_venv.py). ``$HOPS_TEST_HOPS_SLURM`` names another `hops-slurm` command instead (then the
checkout's hook files are used); ``$HOPS_SITE_SPEC`` another cluster spec.

Each test module sets up what it needs on top (its configuration, a daemon) and puts the hook files back with
:func:`site_helpers.reinstall_hooks` when an earlier module may have taken them out (`site leave`)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hops_slurm.tools.minicluster.cluster import Minicluster
from site_helpers import CHECKOUT_HOOK, SPEC, Installed, sacctmgr
from slurm_helpers import load_test_spec
from tests import wheel_venv


@pytest.fixture(scope="package")
def installed() -> Iterator[Installed]:
    """The Hops hook files as the administrator gets them (its job_submit.lua, the module beside it) and the
    `hops-slurm` command: from the wheel in a virtualenv outside the checkout, or ``$HOPS_TEST_HOPS_SLURM``."""
    given = shlex.split(os.environ.get("HOPS_TEST_HOPS_SLURM", ""))
    if given:
        yield Installed(given, CHECKOUT_HOOK)
        return
    work = Path(tempfile.mkdtemp(prefix="hops-site-wheel-"))
    work.chmod(0o755)  # the daemon's probes run its python as the jobs' owners
    try:
        wheel, _ = wheel_venv.build(work / "build")
        command = [str(wheel_venv.install(wheel, work / "venv"))]
        files = subprocess.run([*command, "site", "files", str(work / "site")], capture_output=True, text=True,
                               timeout=120, check=False, cwd=work)
        assert files.returncode == 0, files.stderr
        yield Installed(command, work / "site" / "hooks" / "job_submit.lua")
    finally:
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="package")
def site_cluster(installed: Installed) -> Iterator[Minicluster]:
    """The site-shaped cluster up, with its accounts (physics, research), the QOS `low` and root's associations."""
    if os.geteuid() != 0:
        pytest.fail("the site tests run MariaDB, slurmdbd and Slurm daemons and need root (CI runs as root)")
    spec = load_test_spec(SPEC)
    assert spec.site_hook is not None and spec.accounting, f"{SPEC}: needs site_hook and accounting"
    cluster = Minicluster(spec, job_submit_lua=installed.hook)
    cluster.down()
    cluster.up()
    try:
        sacctmgr(cluster, "add", "account", "physics,research")
        sacctmgr(cluster, "add", "qos", "low")
        sacctmgr(cluster, "add", "user", "root", "Account=physics", "DefaultAccount=physics")
        sacctmgr(cluster, "add", "user", "root", "Account=research")
        sacctmgr(cluster, "modify", "user", "where", "name=root", "set", "QOS=normal,low")
        yield cluster
    finally:
        cluster.down()
