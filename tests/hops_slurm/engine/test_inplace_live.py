"""Probe in place on the live minicluster (real slurmctld/slurmd, the engine in-process as in
``test_engine_calls_live.py``): a job of a model nobody has measured, submitted to the idle cluster, is
placed by the first refresh that sees it (no probe job, no round); its own runtime record (written by
the job, as the recorder does) is ingested at a later refresh and teaches the model cache, so the next
job of the model is planned with data.

Run with ``HOPS_TEST_SPEC=<a minicluster spec of your own>``; marker ``slurm``.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from hops_slurm.config import load_config
from hops_slurm.directives import HopsDirectives
from hops_slurm.engine.engine import Engine
from hops_slurm.engine.profiling import PROBE_NAME_PREFIX, model_key
from hops_slurm.engine.state import PROFILE_INPLACE
from hops_slurm.slurm.cli import CliSlurm

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[3]
#: a job that writes one runtime record of 100 steps of batch 8 per GPU in 10 s into the file the engine
#: names, under the signature it was given (what profiler.runtime.Recorder does), then runs on
JOB = """#!/bin/bash
#HOPS gpus=1,2 samples=1M batch-size=8 model={model}
set -a; . "{env_dir}/$SLURM_JOB_ID.env"; set +a
PYTHONPATH="{root}" "{python}" - <<'EOF'
import os
from profiler.records import RuntimeRecord
gpus = int(os.environ["HOPS_GPUS"])
rec = RuntimeRecord(signature=os.environ["HOPS_JOB_SIGNATURE"], gpu_type=os.environ["HOPS_GPU_TYPE"],
                    node=os.environ["SLURMD_NODENAME"], gpus=gpus, nodes=1, batch_size=8, steps=100,
                    window_seconds=10.0, throughput=100 * 8 * gpus / 10.0, data_times=[], sync_waits=[],
                    step_times=[])
with open(os.environ["HOPS_METRICS_FILE"], "a") as f:
    f.write(rec.model_dump_json() + "\\n")
EOF
sleep 600
"""


def _submit(eng, model: str) -> str:  # noqa: ANN001
    script = eng.workdir / f"inplace{len(eng.submitted)}.sh"
    script.write_text(JOB.format(model=model, env_dir=eng.state_dir / "jobs", root=ROOT, python=sys.executable))
    script.chmod(0o755)
    out = subprocess.run(["sbatch", "--parsable", "-o", str(eng.workdir / "inplace-%j.out"), "-D", str(eng.workdir),
                          str(script)], env=eng.env, capture_output=True, text=True, check=True, timeout=30)
    job = out.stdout.strip().split(";")[0]
    eng.submitted.append(job)
    return job


def _first_refresh(engine: Engine, eng, job: str) -> None:  # noqa: ANN001
    """The refresh tick of the daemon (refresh, then a fragment plan), once Slurm lists the job."""
    eng.wait(lambda: job in eng.jobs(), what=f"job {job} listed")
    engine.refresh_and_fill()


def test_an_unprofiled_job_starts_on_an_idle_cluster_within_one_refresh(eng) -> None:  # noqa: ANN001
    model = f"inplace-{uuid.uuid4().hex[:10]}"  # a model no earlier test (nor this session's store) measured
    api = CliSlurm(eng.cluster.env())
    with Engine(load_config(eng.config), api=api, env=eng.env) as engine:
        engine.refresh_and_fill()  # the engine's first step on this state: the gate, nothing to place
        job = _submit(eng, model)
        _first_refresh(engine, eng, job)
        js = engine.tracked[job]
        assert js.profile == PROFILE_INPLACE and js.signature, eng.describe()
        planning = engine.last_planning
        assert planning is not None and job in planning.plan.placed(), eng.describe()
        assert planning.enactment is not None and job in planning.enactment.started, eng.describe()
        view = next(v for v in planning.jobs if v.job_id == job)
        assert not view.measured  # planned with the fallback view
        assert not [j for j in api.jobs() if j.name.startswith(f"{PROBE_NAME_PREFIX}{job}-")]  # no probe job
        eng.wait(lambda: eng.detail(job).state == "RUNNING", timeout=60, what=f"job {job} running")
        node = next(iter(eng.detail(job).gpu_alloc))
        gpu_type = next(n.gpu_type for n in api.nodes() if n.name == node)

        # its runtime record is its probe: ingested at a later refresh, it teaches the model cache
        key = model_key(HopsDirectives.from_canonical(js.directives), engine.config.engine.probe_size, js.user)
        assert engine.state is not None
        deadline = time.monotonic() + 90
        while engine.state.known_model(key) is None:
            assert time.monotonic() < deadline, f"no runtime record ingested: {eng.describe()}"
            time.sleep(1.0)
            engine.refresh()
        assert engine.state.known_model(key) == (js.signature, [gpu_type])

        # the next job of the model is planned with that data, at the refresh that first sees it
        second = _submit(eng, model)
        _first_refresh(engine, eng, second)
        assert engine.tracked[second].signature == js.signature
        planning = engine.last_planning
        assert planning is not None and second in planning.plan.placed(), eng.describe()
        assert next(v for v in planning.jobs if v.job_id == second).measured
