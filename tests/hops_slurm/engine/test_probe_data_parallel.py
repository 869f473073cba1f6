"""``engine.probe_data_parallel``: a zoo model's probe takes that many GPUs of one node and runs the model
data-parallel on each count listed; an entrypoint's probe times one GPU; a record reporting counts nobody
asked for is refused; the default probes one GPU as before."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from hops_slurm.config import EngineConfig
from hops_slurm.engine.inplace import Capacity
from hops_slurm.engine.profiling import ProbeSettings, ProfilerFlow
from hops_slurm.engine.state import EngineState, JobState
from hops_slurm.engine.userfiles import Owner
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.measure import probe_result
from hops_slurm.slurm.api import ProbeJob
from profiler.records import write_record
from profiler.signature import job_signature
from standin import StandInSlurm

TYPES = ["a100"]
ZOO = "gpus=2,4 samples=100000 batch-size=8 model=resnet18"
ENTRYPOINT = "gpus=2,4 samples=100000 batch-size=8 model=mypkg.train:build"


class Capturing(StandInSlurm):
    def __init__(self, gpus_per_node: int = 4) -> None:
        super().__init__(gpus_per_node=gpus_per_node)
        self.probes: list[ProbeJob] = []

    def submit_probe(self, probe: ProbeJob) -> str:
        self.probes.append(probe)
        return super().submit_probe(probe)


def _flow(tmp_path: Path, api: StandInSlurm, **kw: object) -> ProfilerFlow:
    owner = Owner("root", os.getuid(), os.getgid())
    return ProfilerFlow(ProbeSettings(tmp_path / "probes", size="tiny", in_place=False, **kw),  # type: ignore[arg-type]
                        EngineState(tmp_path / "engine.sqlite"), store=None, api=api,  # type: ignore[arg-type]
                        owners=lambda user: owner)


def _job(job_id: str, directives: str) -> JobState:
    return JobState(job_id=job_id, name="j", user="root", directives=directives, submit_time=1.0, first_seen=1.0,
                    last_seen=1.0, last_state="PENDING")


def test_a_zoo_models_probe_takes_the_largest_count_and_runs_each(tmp_path: Path) -> None:
    api = Capturing(gpus_per_node=8)
    flow = _flow(tmp_path, api, data_parallel=(2, 8))
    assert flow.advance(_job("1", ZOO), TYPES, {}, Capacity())
    (probe,) = api.probes
    assert (probe.gpus, probe.data_parallel) == (8, (2, 8))
    assert "--gres=gpu:a100:8" in probe.sbatch_argv()
    assert "--data-parallel 2 8" in probe.script


def test_counts_above_the_types_largest_node_are_left_out(tmp_path: Path) -> None:
    api = Capturing(gpus_per_node=4)  # 4-GPU a100 nodes: an 8-GPU probe would never start
    assert _flow(tmp_path, api, data_parallel=(2, 8)).advance(_job("1", ZOO), TYPES, {}, Capacity())
    (probe,) = api.probes
    assert (probe.gpus, probe.data_parallel) == (2, (2,))
    assert "--gres=gpu:a100:2" in probe.sbatch_argv() and probe.script.endswith("--data-parallel 2\n")


def test_an_entrypoint_probe_and_the_default_time_one_gpu(tmp_path: Path) -> None:
    api = Capturing()
    assert _flow(tmp_path / "a", api, data_parallel=(2, 8)).advance(_job("1", ENTRYPOINT), TYPES, {}, Capacity())
    assert _flow(tmp_path / "b", api).advance(_job("2", ZOO), TYPES, {}, Capacity())
    for probe in api.probes:
        assert probe.gpus == 1 and probe.data_parallel == ()
        assert "--gres=gpu:a100:1" in probe.sbatch_argv() and "--data-parallel" not in probe.script


def test_a_record_with_counts_not_asked_for_is_refused(tmp_path: Path) -> None:
    api = Capturing()
    flow = _flow(tmp_path, api, data_parallel=(2,), retries=0)
    job = _job("1", ZOO)
    flow.advance(job, TYPES, {}, Capacity())
    (probe,) = api.probes
    result = probe_result(GroundTruth(), "ResNet-18 (batch size 32)", "v100", "", at=0.0, probe_seconds=1.0,
                          data_parallel=(2, 4))
    assert result is not None
    record = result.model_copy(update={"model": "resnet18", "batch_size": 8, "gpu_type": "a100",
                                       "signature": job_signature("resnet18", result.params, 8, ())})
    write_record(record, probe.out)
    flow.advance(job, TYPES, {}, Capacity())
    assert job.probes["a100"]["status"] == "failed"
    assert "asked for [2]" in str(job.probes["a100"]["error"])


@pytest.mark.parametrize("counts", [[1], [17], [2, 4, 8, 16, 3]])
def test_the_option_takes_up_to_four_counts_of_2_to_16(counts: list[int]) -> None:
    assert EngineConfig().probe_data_parallel == []
    assert EngineConfig(probe_data_parallel=[2, 8]).probe_data_parallel == [2, 8]
    with pytest.raises(ValidationError):
        EngineConfig(probe_data_parallel=counts)
