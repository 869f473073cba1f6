"""The engine's monitor (hops_slurm.engine.engine.Engine.monitor) on the stand-in Slurm: a newly submitted
Hops job on idle GPUs starts at the next monitor check, not at the next refresh; each arrival triggers once."""

from __future__ import annotations

from pathlib import Path

from hops_slurm.config import parse_config
from hops_slurm.engine.engine import Engine
from standin import StandInSlurm

JOB = "gpus=1,2 samples=1000 batch-size=8 model=resnet18"


def test_a_submitted_job_starts_at_the_next_monitor_check_and_triggers_once(tmp_path: Path) -> None:
    api = StandInSlurm(starts=True)
    config = parse_config({"engine": {"settle_timeout": 0.3, "probe_size": "tiny"},
                           "paths": {"state_dir": str(tmp_path / "state")}})
    engine = Engine(config, api=api).open()
    try:
        assert engine.state is not None
        engine.state.remember_model("root/resnet18|b8|tiny", "sig-resnet18", ["a100"])  # profiled: no probe job
        engine.refresh()
        assert engine.monitor() is False  # nothing ended, nothing new
        api.submit("7", JOB)
        assert engine.monitor() is True  # the arrival: refresh and fragment plan at once
        assert "7" in engine.tracked
        job = {j.job_id: j for j in api.jobs()}["7"]
        assert job.active and job.gpu_config()  # started on the idle GPUs by the fragment plan
        assert engine.monitor() is False  # tracked now: no second trigger
    finally:
        engine.close()
