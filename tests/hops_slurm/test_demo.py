"""``make demo`` end to end, on its own cluster (the default spec moved to other ports and state)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from hops_slurm.demo import run_demo
from hops_slurm.minicluster.spec import Ports, load_spec
from slurm_helpers import leftover_processes

pytestmark = pytest.mark.slurm


def test_demo_runs_and_cleans_up() -> None:
    spec = load_spec().model_copy(
        update={"state_dir": Path("/var/tmp/hops-minicluster-demo-test"), "cluster_name": "hopsdemo",
                "ports": Ports(slurmctld=6947, slurmd_base=17401, slurmdbd=6949, mariadb=13346)}
    )
    out = io.StringIO()
    assert run_demo(out, spec) == 0
    text = out.getvalue()
    assert "broken.sh      rejected by sbatch: #HOPS gpus: duplicate count 2" in text
    assert text.count("JobHeldUser") == 3
    assert "RUNNING on v100-1, gpu:v100:4(IDX:0-3)" in text
    assert leftover_processes(spec.state_dir) == []
