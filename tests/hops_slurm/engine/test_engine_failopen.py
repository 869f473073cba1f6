"""``hops-slurm failopen`` decisions on the in-memory stand-in for slurmctld (the live test is in
``test_engine_faults_live.py``): hold mode, a live engine, the grace, the first run, and the release."""

from __future__ import annotations

import os
import time
from pathlib import Path

from hops_slurm.config import parse_config
from hops_slurm.engine.aside import COMMENT_PREFIX
from hops_slurm.engine.failopen import HEARTBEAT, fail_open, touch_heartbeat
from hops_slurm.engine.lock import InstanceLock
from hops_slurm.slurm.api import SlurmCommandError
from hops_slurm.slurm.enact import GATE, read_job_env
from hops_slurm.slurm.snapshot import OFFER
from standin import StandInSlurm

GOOD = "gpus=2,4 samples=1000 batch-size=8 model=resnet18 lr=0.1@4"


def _config(tmp_path: Path, mode: str = "release", gpus: str = "min"):  # noqa: ANN202
    return parse_config({"failopen": {"mode": mode, "grace": 60, "gpus": gpus},
                         "paths": {"state_dir": str(tmp_path)}})


def _silent_for(tmp_path: Path, seconds: float) -> None:
    touch_heartbeat(tmp_path)
    then = time.time() - seconds
    os.utime(tmp_path / HEARTBEAT, (then, then))


def _api() -> StandInSlurm:
    api = StandInSlurm()
    api.submit("1", GOOD)
    api.hold("1")
    api.submit("2", "gpus=1 samples=1000 batch-size=8 model=resnet18 lr=1e-100@1")
    api.update_job("2", {"Comment": COMMENT_PREFIX + "lr: 1e-100 is not a learning rate"})
    api.create_reservation(GATE, ["n1", "n2"], ["root"], ["IGNORE_JOBS"])
    api.calls.clear()
    return api


def test_hold_mode_changes_nothing(tmp_path: Path) -> None:
    api = _api()
    _silent_for(tmp_path, 3600)
    assert fail_open(_config(tmp_path, mode="hold"), api).action == "hold" and api.calls == []


def test_nothing_while_an_engine_holds_the_lock_or_within_the_grace(tmp_path: Path) -> None:
    api = _api()
    _silent_for(tmp_path, 3600)
    with InstanceLock(tmp_path / "engine.lock"):
        assert fail_open(_config(tmp_path), api).action == "alive"
    _silent_for(tmp_path, 30)
    assert fail_open(_config(tmp_path), api).action == "waiting"
    assert api.calls == []


def test_the_first_run_without_a_heartbeat_starts_the_clock(tmp_path: Path) -> None:
    api = _api()
    assert fail_open(_config(tmp_path), api).action == "started-clock"
    assert (tmp_path / HEARTBEAT).exists() and api.calls == []


def test_after_the_grace_held_jobs_go_to_slurm_with_a_rigid_request(tmp_path: Path) -> None:
    api = _api()
    _silent_for(tmp_path, 120)
    report = fail_open(_config(tmp_path), api)
    assert report.action == "released" and report.released == {"1": 2} and "2" in report.skipped
    job = api.get("1")
    assert job.tres_per_job == "gres:gpu:2" and job.required_nodes == () and job.reason != "JobHeldAdmin"
    assert job.comment.startswith("hops: released without the Hops daemon")
    assert read_job_env(tmp_path / "jobs", "1") == {"HOPS_GPUS": "2", "HOPS_LR": "0.05"}
    assert api.get("2").reason == "JobHeldUser"  # set aside: stays held
    assert report.gate_removed and GATE not in {r.name for r in api.reservations()}
    assert any("job 1 released asking for 2 GPUs" in line for line in report.lines())


def test_max_asks_for_the_largest_count(tmp_path: Path) -> None:
    api = _api()
    _silent_for(tmp_path, 120)
    assert fail_open(_config(tmp_path, gpus="max"), api).released == {"1": 4}


def test_the_offer_reservation_goes_too_or_the_released_jobs_go_into_it(tmp_path: Path) -> None:
    """hops-offer lies over the gate's nodes: left there it would keep the released jobs off them. Slurm
    deletes it unless jobs that started on offers still run in it ("in use"); then the released jobs go in."""
    api = _api()
    api.create_reservation(OFFER, ["n1", "n2"], ["-daemon"], ["OVERLAP", "IGNORE_JOBS"])
    _silent_for(tmp_path, 120)
    assert fail_open(_config(tmp_path), api).released == {"1": 2}
    assert OFFER not in {r.name for r in api.reservations()} and api.get("1").reservation == ""

    class InUse(StandInSlurm):
        def delete_reservation(self, name: str) -> None:
            if name == OFFER:
                raise SlurmCommandError(["scontrol", "delete"], 1, "Requested reservation is in use")
            super().delete_reservation(name)

    busy = InUse()
    busy.submit("1", GOOD)
    busy.hold("1")
    busy.create_reservation(GATE, ["n1", "n2"], ["root"], ["IGNORE_JOBS"])
    busy.create_reservation(OFFER, ["n1", "n2"], ["-daemon"], ["OVERLAP", "IGNORE_JOBS"])
    report = fail_open(_config(tmp_path), busy)
    assert report.released == {"1": 2} and busy.get("1").reservation == OFFER and report.gate_removed


def test_failopen_closes_the_offer_file_with_the_offer_reservation(tmp_path: Path) -> None:
    """M3: the daemon gone past the grace, the offer file is closed too (the hook holds new jobs again
    instead of sending them into a reservation failopen deleted)."""
    from hops_slurm.engine import offer

    etc = tmp_path / "etc"
    etc.mkdir(mode=0o755)
    path = etc / offer.FILE_NAME
    open_offer = offer.Offer(as_of=time.time(), expires=time.time() + 900, tres="gres:gpu:", nodes=(("n1", 4, ("hops",)),))
    offer.publish(path, open_offer)
    assert offer.read(path) is not None
    config = parse_config({"failopen": {"mode": "release", "grace": 60}, "paths": {"state_dir": str(tmp_path)},
                           "engine": {"offer_file": str(path)}})
    api = _api()
    api.create_reservation(OFFER, ["n1", "n2"], ["-daemon"], ["OVERLAP", "IGNORE_JOBS"])
    _silent_for(tmp_path, 30)
    fail_open(config, api)
    assert offer.read(path) is not None  # within the grace: the daemon may come back
    _silent_for(tmp_path, 3600)
    assert fail_open(config, api).action == "released"
    assert path.read_text() == offer.closed() and OFFER not in {r.name for r in api.reservations()}
