"""Several Hops partitions, any names, beside a partition that is not Hops's: the engine (refresh, rounds,
gate, failopen) plans each Hops job on its own partition's nodes and never touches a job of another
partition, #HOPS or not. In-process on the stand-in slurmctld (the live test: test_partitions_live.py)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from hops_slurm.config import parse_config
from hops_slurm.engine import offer
from hops_slurm.directives import COMMENT_PREFIX
from hops_slurm.engine.engine import Engine
from hops_slurm.engine.failopen import HEARTBEAT, fail_open, touch_heartbeat
from hops_slurm.slurm.api import SlurmJob, SlurmNode
from hops_slurm.slurm.snapshot import GATE, Snapshot
from standin import StandInSlurm

NEW, OLD = "a100-hops", "older"  # the Hops partitions, neither called "hops"
NEW_NODES, OLD_NODES, SITE_NODES = {"n1", "n2"}, {"n3"}, {"n4"}
SPEC = "samples=1000 batch-size=8 model=resnet18"


def _api() -> StandInSlurm:
    api = StandInSlurm(starts=True)
    api._nodes = [SlurmNode(name="n1", state="idle", gpu_type="a100", gpus_total=4, partitions=(NEW,), cpus=16),
                  SlurmNode(name="n2", state="idle", gpu_type="a100", gpus_total=4, partitions=(NEW,), cpus=16),
                  SlurmNode(name="n3", state="idle", gpu_type="a100", gpus_total=8, partitions=(OLD,), cpus=16),
                  SlurmNode(name="n4", state="idle", gpu_type="a100", gpus_total=4, partitions=("gpu",), cpus=16)]
    return api


def _submit(api: StandInSlurm, job_id: str, partition: str, directives: str | None) -> None:
    hops = directives is not None  # a #HOPS job the hook held (user hold); else an ordinary pending job
    api._jobs[job_id] = SlurmJob(job_id=job_id, name=f"job{job_id}", user="root", state="PENDING",
                                 reason="JobHeldUser" if hops else "Resources", priority=0 if hops else 1000,
                                 partition=partition, admin_comment=COMMENT_PREFIX + directives if hops else "",
                                 submit_time=1000.0)


def _config(tmp_path: Path, **failopen: object):  # noqa: ANN202
    return parse_config({"slurm": {"partitions": [NEW, OLD]}, "failopen": failopen or {"mode": "hold"},
                         "engine": {"settle_timeout": 0.5, "probe_size": "tiny"},
                         "paths": {"state_dir": str(tmp_path / "state")}})


def _touched(api: StandInSlurm, job_id: str) -> list[tuple[str, ...]]:
    return [c for c in api.calls if len(c) > 1 and job_id in c[1].split(",")]


def test_each_job_runs_on_its_own_partitions_nodes_and_other_partitions_are_left_alone(tmp_path: Path) -> None:
    api = _api()
    _submit(api, "1", NEW, "gpus=1 " + SPEC)
    _submit(api, "2", OLD, "gpus=4 " + SPEC)  # would fit n1 or n2 as well: it must take n3
    _submit(api, "3", "gpu", "gpus=1 " + SPEC)  # #HOPS, but in a partition that is not Hops's
    _submit(api, "4", "gpu", None)  # an ordinary job of the site
    _submit(api, "5", f"{OLD},gpu", "gpus=1,2 " + SPEC)  # lists a Hops partition and another one
    engine = Engine(_config(tmp_path), api=api).open()
    try:
        assert engine.state is not None
        engine.state.remember_model("root/resnet18|b8|tiny", "sig-resnet18", ["a100"])  # profiled: no probe job
        for _ in range(3):
            engine.full_round()
        assert set(engine.tracked) == {"1", "2", "5"}
    finally:
        engine.close()
    gate = {r.name: r for r in api.reservations()}[GATE]
    assert set(gate.nodes) == NEW_NODES | OLD_NODES  # the managed nodes: the union of the Hops partitions'
    jobs = {j.job_id: j for j in api.jobs()}
    assert jobs["1"].state == "RUNNING" and set(jobs["1"].gpu_alloc) <= NEW_NODES
    assert jobs["2"].state == "RUNNING" and set(jobs["2"].gpu_alloc) == OLD_NODES
    assert jobs["5"].state == "RUNNING" and set(jobs["5"].gpu_alloc) == OLD_NODES  # the only Hops partition it lists
    for outside in ("3", "4"):
        assert _touched(api, outside) == [], outside  # never held, released, reserved or updated
        assert jobs[outside].state == "PENDING" and jobs[outside].reason == ("JobHeldUser" if outside == "3" else "Resources")


def test_failopen_releases_the_hops_partitions_jobs_only(tmp_path: Path) -> None:
    api = _api()
    _submit(api, "1", OLD, "gpus=2,4 " + SPEC)
    _submit(api, "3", "gpu", "gpus=2 " + SPEC)
    for j in ("1", "3"):
        api.hold(j)  # as the engine left them (3 as if held before it was moved out of Hops)
    api.calls.clear()
    (tmp_path / "state").mkdir()
    touch_heartbeat(tmp_path / "state")
    then = time.time() - 3600
    os.utime(tmp_path / "state" / HEARTBEAT, (then, then))
    report = fail_open(_config(tmp_path, mode="release", grace=60), api)
    assert report.action == "released" and list(report.released) == ["1"]
    assert _touched(api, "3") == [] and api.get("3").held


def test_a_job_moved_out_of_the_hops_partitions_is_handed_back_once_and_then_left_alone(tmp_path: Path) -> None:
    api = _api()
    _submit(api, "1", OLD, "gpus=16 " + SPEC)  # more than its partition has: it stays pending, held by the engine
    engine = Engine(_config(tmp_path), api=api).open()
    try:
        assert engine.state is not None
        engine.state.remember_model("root/resnet18|b8|tiny", "sig-resnet18", ["a100"])
        engine.full_round()
        assert "1" in engine.tracked and api.get("1").reason == "JobHeldAdmin"
        api._change("1", partition="gpu")  # its owner: scontrol update JobId=1 Partition=gpu
        api.calls.clear()
        engine.full_round()
        assert "1" not in engine.tracked and _touched(api, "1") == [("release", "1")]
        api.calls.clear()
        for _ in range(2):
            engine.full_round()
        assert _touched(api, "1") == []
    finally:
        engine.close()


def test_offers_cover_the_hops_partitions_nodes_and_wait_for_their_jobs_only() -> None:
    api = _api()
    _submit(api, "3", "gpu", "gpus=1 " + SPEC)  # waits, but not in Hops: it keeps no offer closed
    _submit(api, "4", f"gpu,{OLD}", "gpus=1 " + SPEC)  # lists a Hops partition: it does
    snap = Snapshot(jobs=tuple(api.jobs()), nodes=tuple(api.nodes()), taken=500.0)
    assert offer.waiting_jobs(snap.jobs[:1], (NEW, OLD), aside=(), now=501.0) == []
    assert offer.waiting_jobs(snap.jobs, (NEW, OLD), aside=(), now=501.0) == ["4"]
    made = offer.make_offer(snap, partitions=(NEW, OLD), waiting=[], promised={}, views=[], now=501.0, ttl=60.0,
                            tres="gres:gpu:")
    assert made is not None and {n for n, _, _ in made.nodes} == NEW_NODES | OLD_NODES  # never the site's n4
    assert all(set(parts) <= {NEW, OLD} for _, _, parts in made.nodes)  # each node with its Hops partitions only
