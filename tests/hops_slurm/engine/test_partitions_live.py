"""Hops partitions from the configuration on the live minicluster (real slurmctld, the engine in-process):
two Hops partitions, neither called ``hops`` (``gpu-hops`` on A100 nodes, ``gpu-old`` on older cards),
beside the site's ``gpu`` partition (the cluster's default) on a node of its own. Each Hops job runs on
its own partition's nodes; the jobs of ``gpu``, with a ``hops:`` AdminComment or without, are never held,
released, reserved or journaled by the engine; the daemon's partition file says the configured set; a
configured partition Slurm lacks is one line in the log.

The jobs are made Hops jobs as the submit hook does (held, their canonical directives in AdminComment),
by root after ``sbatch --hold``: the hook that reads the partition file comes with the hook module
(docs/admin-guide.md, "Hops partitions"); the engine's side is what is tested here.

The module runs its own cluster (tests/data/minicluster-partitions.toml, its own ports and state
directory: it overrides the session's ``minicluster`` and ``engine_state`` for the engine fixture ``eng``);
marker ``slurm``.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hops_slurm.config import load_config
from hops_slurm.directives import COMMENT_PREFIX, HopsDirectives
from hops_slurm.engine import partition_file
from hops_slurm.engine.engine import Engine
from hops_slurm.journal import Journal
from hops_slurm.slurm.snapshot import GATE
from hops_slurm.tools.minicluster.cluster import Minicluster
from slurm_helpers import leftover_processes, load_test_spec
from tests.tests_paths import DATA

pytestmark = pytest.mark.slurm

NEW, OLD, SITE = "gpu-hops", "gpu-old", "gpu"
SCRIPT = "#!/bin/bash\nsleep 600\n"


HOOK = Path(__file__).resolve().parents[3] / "hooks" / "job_submit.lua"


@pytest.fixture(scope="module")
def minicluster() -> Iterator[Minicluster]:
    """This module's own cluster: two Hops partitions and the site's `gpu` partition on a node of its own."""
    if os.geteuid() != 0:
        pytest.fail("the Slurm integration tests run real slurmctld/slurmd daemons and need root (CI runs as root)")
    cluster = Minicluster(load_test_spec(DATA / "minicluster-partitions.toml"), job_submit_lua=HOOK)
    cluster.down()  # a previous run that was killed may have left it up
    cluster.up()
    yield cluster
    cluster.down()
    assert not leftover_processes(cluster.state), "processes left behind by the partitions cluster"


@pytest.fixture(scope="module")
def engine_state() -> Iterator[Path]:
    """This cluster's own engine state (the session's belongs to the session's cluster)."""
    d = Path(tempfile.mkdtemp(prefix="hops-partitions-state-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def site(eng):  # noqa: ANN001, ANN201
    """The engine's config with the two Hops partitions (and one Slurm lacks, last) and a hook directory."""
    names = {n.name: n.partitions for n in eng.api.nodes()}
    assert any(NEW in p for p in names.values()) and any(SITE in p for p in names.values()), names
    hook_dir = Path(tempfile.mkdtemp(prefix="hops-hook-"))
    hook_dir.chmod(0o755)
    text = eng.config.read_text().replace("[engine]\n", f'[engine]\nhook_dir = "{hook_dir}"\n', 1)
    eng.config.write_text(text + f'[slurm]\npartitions = ["{NEW}", "{OLD}", "gone"]\n')
    eng.hook_dir = hook_dir
    return eng


def _submit(eng, partition: str, *, gpus: str | None, hold: bool = True, gres: str = "") -> str:  # noqa: ANN001
    """One job of ``partition``; with ``gpus``, made a Hops job as the hook makes one (held, its canonical
    directives in AdminComment); without ``hold`` it is released afterwards, as a job Slurm schedules."""
    script = eng.workdir / f"part{len(eng.submitted)}.sh"
    script.write_text(SCRIPT)
    argv = ["sbatch", "--parsable", "--hold", "-p", partition, "-o", "/dev/null", "-D", str(eng.workdir)]
    out = subprocess.run([*argv, *([f"--gres=gpu:{gres}"] if gres else []), str(script)], env=eng.env,
                         capture_output=True, text=True, check=True, timeout=30)
    job = out.stdout.strip().split(";")[0]
    eng.submitted.append(job)
    if gpus is not None:
        d = HopsDirectives(gpus=tuple(int(g) for g in gpus.split(",")), samples=1_000_000, batch_size=8, model="resnet18")
        eng.cluster.run(["scontrol", "update", f"JobId={job}", f"AdminComment={COMMENT_PREFIX}{d.canonical()}"])
    if not hold:
        eng.cluster.run(["scontrol", "release", job])
    return job


def test_hops_jobs_stay_in_their_partitions_and_the_sites_jobs_are_left_alone(site, caplog) -> None:  # noqa: ANN001
    eng = site
    eng.until_idle()
    new = _submit(eng, NEW, gpus="1,2")
    old = _submit(eng, OLD, gpus="4")  # would fit an A100 node as well: it must run on the old card
    held_outside = _submit(eng, SITE, gpus="1")  # #HOPS, held by its owner, in the site's partition
    run_outside = _submit(eng, SITE, gpus="2", hold=False)  # #HOPS, released, in the site's partition
    plain = _submit(eng, SITE, gpus=None, hold=False, gres="2")  # an ordinary GPU job of the site
    caplog.set_level(logging.INFO)
    with Engine(load_config(eng.config), env=eng.env) as engine:
        assert partition_file.parse((eng.hook_dir / partition_file.FILE).read_bytes()) == (NEW, OLD, "gone")
        for _ in range(6):
            engine.full_round()
            jobs = eng.jobs()
            if jobs[new].state == "RUNNING" and jobs[old].state == "RUNNING":
                break
        assert set(engine.tracked) >= {new, old} and not {held_outside, run_outside, plain} & set(engine.tracked)
        gate = {r.name: r for r in eng.api.reservations()}[GATE]
        assert set(gate.nodes) == {"a100-1", "a100-2", "old-1"}  # the managed nodes: the Hops partitions'
    jobs = eng.jobs()
    assert jobs[new].state == "RUNNING" and set(jobs[new].nodes) <= {"a100-1", "a100-2"}, eng.describe()
    assert jobs[old].state == "RUNNING" and set(jobs[old].nodes) == {"old-1"}, eng.describe()
    for j in (run_outside, plain):  # Slurm ran them on the site's node, as without Hops
        assert jobs[j].state == "RUNNING" and jobs[j].nodes == ("site-1",) and not jobs[j].reservation, eng.describe()
    assert jobs[held_outside].pending and jobs[held_outside].reason == "JobHeldUser"  # neither released nor admin-held
    journal = Journal(eng.state_dir / "journal.sqlite")
    for j in (held_outside, run_outside, plain):
        assert journal.actions(job_id=j) == [], j
    assert journal.actions(job_id=new) and journal.actions(job_id=old)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert [m for m in errors if "no partition gone" in m] and all("\n" not in m for m in errors)
