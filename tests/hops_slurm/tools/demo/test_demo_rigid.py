"""The Slurm-scheduled half of ``make demo``: rigid requests (median of the requirement set), scripts the
submit hook leaves alone, and records built from what Slurm reports (a FAKE in-memory Slurm here; the
reduced demo in tests/hops_slurm/tools/demo/test_demo.py runs the real one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hops_slurm.tools.demo.submission import Progress, Submission
from hops_slurm.tools.demo.rigid import (
    BackfillError,
    Observed,
    RigidJob,
    has_time_limit,
    poll_backfill,
    remove_hops_reservations,
    rigid_gpus,
    rigid_job,
    rigid_script,
    time_limit_minutes,
    write_rigid_scripts,
)
from hops_slurm.tools.demo.run import JOBS_DIR, ROOT, WORKLOAD, load_workload
from hops_slurm.directives import parse_script
from hops_slurm.slurm.api import SlurmJob, SlurmReservation

MEDIANS = {  # lower median of each shipped job's gpus= set
    "bert-a": 4, "bert-b": 2, "gpt2-a": 4, "gpt2-b": 2, "gpt2-c": 8, "mobilenet-a": 1, "mobilenet-b": 2,
    "resnet18-a": 2, "resnet18-b": 4, "resnet18-c": 1, "resnet50-a": 2, "resnet50-b": 4, "vgg11-a": 2,
    "vgg11-b": 2, "vit-a": 4, "vit-b": 1,
}


def test_rigid_counts_are_the_lower_median_of_each_requirement_set(tmp_path: Path) -> None:
    rigid = write_rigid_scripts(load_workload(JOBS_DIR, WORKLOAD), tmp_path, max_per_node=8)
    assert {job.name: job.gpus for _sub, job in rigid} == MEDIANS  # broken.sh (rejected by the hook) left out
    assert all(job.nodes == 1 for _sub, job in rigid)
    assert {sub.at for sub, _job in rigid} == {0.0, 30.0, 60.0}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.sh" for n in MEDIANS)


def test_rigid_script_asks_one_count_and_holds_no_hops_directive(tmp_path: Path) -> None:
    original = JOBS_DIR / "resnet18-a.sh"  # gpus=1,2,4, lr=0.05@2
    job = rigid_job(original, parse_script(original.read_text()), 8)  # type: ignore[arg-type]
    text = rigid_script(job, original.read_text())
    assert parse_script(text) is None and "#HOPS" not in text  # the submit hook leaves it alone
    lines = text.splitlines()
    assert lines[:3] == ["#!/bin/bash", "#SBATCH -J resnet18-a", "#SBATCH --nodes=1 --gres=gpu:2 --time=10"]
    assert "export HOPS_GPUS=2" in lines and "export HOPS_LR=0.05" in lines
    assert lines[-1].endswith(f"etc/demo/train.py\" {original}")


def test_rigid_script_trains_on_the_node_slurm_gave(tmp_path: Path) -> None:
    original = tmp_path / "tiny.sh"
    original.write_text("#!/bin/bash\n#SBATCH -J tiny\n#HOPS gpus=1,2,4 samples=256 batch-size=32 model=resnet18\n"
                        "#HOPS lr=0.02@1 lr-scale=linear\necho never run\n")
    job = rigid_job(original, parse_script(original.read_text()), 4)  # type: ignore[arg-type]
    script = tmp_path / "rigid.sh"
    script.write_text(rigid_script(job, original.read_text()))
    env = dict(os.environ, HOPS_DEMO_PYTHON=sys.executable, HOPS_DEMO_ROOT=str(ROOT), SLURMD_NODENAME="v100-2",
               SLURM_JOB_ID="77", HOPS_DEMO_STATE=str(tmp_path / "state"), PYTHONUNBUFFERED="1")
    env.pop("HOPS_METRICS_FILE", None)
    result = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "on v100-2:2 (2 GPUs, lr 0.04)" in result.stdout  # linear rule from 0.02@1
    done = json.loads((tmp_path / "state" / "ckpt" / "77" / "done.json").read_text())
    assert [r["config"] for r in done["runs"]] == [{"v100-2": 2}] and done["samples"] == 256


def test_a_count_beyond_one_node_is_split_evenly_or_refused(tmp_path: Path) -> None:
    d = parse_script("#!/bin/bash\n#HOPS gpus=8,16,24 samples=1K batch-size=8 model=gpt2\n")
    assert d is not None
    job = rigid_job(tmp_path / "big.sh", d, 8)
    assert (job.gpus, job.nodes, job.per_node) == (16, 2, 8)
    text = rigid_script(job, "#!/bin/bash\n")
    assert "#SBATCH --nodes=2 --gres=gpu:8 --time=10" in text
    assert 'scontrol show hostnames "$SLURM_JOB_NODELIST"' in text
    odd = parse_script("#!/bin/bash\n#HOPS gpus=10 samples=1K batch-size=8 model=gpt2\n")
    assert odd is not None
    with pytest.raises(BackfillError, match="10 GPUs do not split evenly over 3 nodes of 4"):
        rigid_job(tmp_path / "odd.sh", odd, 4)


class FakeSlurm:
    """FAKE: an in-memory Slurm answering the reads the backfill run makes (the live test uses the real one)."""

    def __init__(self, jobs: list[SlurmJob], reservations: list[str] = ()) -> None:  # type: ignore[assignment]
        self._jobs, self._resv, self.deleted = jobs, [SlurmReservation(name=r, nodes=("a100-1",)) for r in reservations], []

    def jobs(self) -> list[SlurmJob]:
        return self._jobs

    def reservations(self) -> list[SlurmReservation]:
        return self._resv

    def delete_reservation(self, name: str) -> None:
        self.deleted.append(name)


def _rigid(gpus: int = 2) -> RigidJob:
    return RigidJob(Path("/x/a.sh"), "a", gpus, 1, None, (1, gpus))


def test_only_the_engines_reservations_are_deleted() -> None:
    api = FakeSlurm([], ["hops-gate", "hops-j12", "maintenance"])
    assert remove_hops_reservations(api) == ["hops-gate", "hops-j12"]  # type: ignore[arg-type]
    assert api.deleted == ["hops-gate", "hops-j12"]


def test_records_from_what_slurm_reported() -> None:
    seen = {"5": Observed(_rigid())}
    progress = Progress(names={"5": "a"})
    pending = SlurmJob(job_id="5", state="PENDING", priority=100, submit_time=1000.0)
    running = pending.model_copy(update={"state": "RUNNING", "start_time": 1030.0, "nodes": ("v100-1",),
                                         "gpu_alloc": {"v100-1": (0, 1)}})
    ended = running.model_copy(update={"state": "COMPLETED", "end_time": 1090.0, "gpu_alloc": {}})
    for sj in (pending, running, ended):
        poll_backfill(FakeSlurm([sj]), seen, progress)  # type: ignore[arg-type]
    assert progress.ended()
    rec = seen["5"].record("5", "root", "hops")
    assert (rec.submit, rec.start, rec.end, rec.state, rec.requirements) == (1000.0, 1030.0, 1090.0, "COMPLETED", [2])
    assert [(p.start, p.end, p.config) for p in rec.placements] == [(1030.0, 1090.0, {"v100-1": 2})]


def test_a_job_that_ran_between_two_polls_gets_the_nodes_slurm_lists() -> None:
    seen = {"6": Observed(_rigid(4))}
    ended = SlurmJob(job_id="6", state="COMPLETED", priority=100, submit_time=10.0, start_time=12.0, end_time=20.0,
                     nodes=("a100-2",))
    poll_backfill(FakeSlurm([ended]), seen, Progress(names={"6": "a"}))  # type: ignore[arg-type]
    assert [(p.start, p.end, p.config) for p in seen["6"].record("6").placements] == [(12.0, 20.0, {"a100-2": 4})]


def test_a_held_job_stops_the_run() -> None:
    held = SlurmJob(job_id="7", state="PENDING", priority=0, reason="JobHeldUser", submit_time=1.0)
    with pytest.raises(BackfillError, match=r"job 7 \(a\) is held \(JobHeldUser\)"):
        poll_backfill(FakeSlurm([held]), {"7": Observed(_rigid())}, Progress(names={"7": "a"}))  # type: ignore[arg-type]


def test_submissions_keep_their_arrival_times(tmp_path: Path) -> None:
    script = tmp_path / "j.sh"
    script.write_text("#!/bin/bash\n#HOPS gpus=1,2 samples=1K batch-size=8 model=gpt2\n")
    [(sub, job)] = write_rigid_scripts([Submission(script, 42.0)], tmp_path / "rigid", 8)
    assert sub.at == 42.0 and sub.script == tmp_path / "rigid" / "j.sh" and job.original == script.resolve()


def test_the_time_limit_grows_with_the_hops_run_and_a_scripts_own_limit_is_kept(tmp_path: Path) -> None:
    assert time_limit_minutes(0.0) == 10 and time_limit_minutes(200.0) == 14  # 4 x 200 s, whole minutes up
    original = "#!/bin/bash\n#SBATCH -J long\n#HOPS gpus=2,4 samples=1K batch-size=8 model=gpt2\n"
    d = parse_script(original)
    assert d is not None
    job = rigid_job(tmp_path / "long.sh", d, 8)
    assert "#SBATCH --nodes=1 --gres=gpu:2 --time=38" in rigid_script(job, original, 38)
    for own in ("#SBATCH --time=2:00:00", "#SBATCH -t 90", "#SBATCH -t90 -J x", "#SBATCH --time 45"):
        text = rigid_script(job, original.replace("#SBATCH -J long", own), 38)
        assert own in text and "--time=38" not in text and "#SBATCH --nodes=1 --gres=gpu:2\n" in text
    assert not has_time_limit(["#SBATCH --tmp=10G", "#SBATCH --threads-per-core=1"])
