"""Offers (hops_slurm.engine.offer): what the engine offers after a planning (open only while no Hops job waits
and GPUs are idle, nodes best first), the file the submit hook reads, and the adoption of a job Slurm
started on an offer (its environment file, its accounting). Against the stand-in slurmctld; the hook's half
is tests/hooks/test_job_submit_offer.py, both halves on a real slurmctld test_offer_live.py."""

from __future__ import annotations

from pathlib import Path

from hops_slurm.config import parse_config
from hops_slurm.directives import COMMENT_PREFIX
from hops_slurm.engine import offer
from hops_slurm.engine.engine import Engine
from hops_slurm.slurm.api import SlurmJob, SlurmNode
from hops_slurm.slurm.enact import read_job_env
from hops_slurm.slurm.snapshot import Snapshot
from planner.views import JobView, freeze_config
from standin import StandInSlurm

DIRECTIVES = "gpus=1,2,4 samples=100000 batch-size=8 model=resnet18 lr=0.1@4"


def _engine(tmp_path: Path, api: StandInSlurm, offer_file: Path | None) -> Engine:
    engine = {"settle_timeout": 0.5, "probe_size": "tiny"}
    if offer_file is not None:
        engine["offer_file"] = str(offer_file)
    config = parse_config({"engine": engine, "paths": {"state_dir": str(tmp_path / "state")}})
    return Engine(config, api=api).open()


def _node(name: str, total: int, used: tuple[int, ...] = (), gpu_type: str = "a100") -> SlurmNode:
    return SlurmNode(name=name, state="idle", gpu_type=gpu_type, gpus_total=total, gpus_used=used,
                     partitions=("hops",), cpus=16)


def free(made: offer.Offer) -> dict[str, int]:
    return {name: gpus for name, gpus, _ in made.nodes}


def _view(job_id: str, speed: dict[str, float], measured: bool = True) -> JobView:
    return JobView(job_id=job_id, requirements=(1,), submit_time=0.0, wait=0.0, age=100.0, sensitivity=1.0,
                   measured=measured, throughput=lambda c: sum(speed[n] * k for n, k in c.items()))


def _on_offer(job_id: str, state: str = "PENDING", **more: object) -> SlurmJob:
    """A job the hook put on an offer of 4 GPUs (on n1 unless ``more`` says otherwise)."""
    fields: dict[str, object] = {"required_nodes": ("n1",), "tres_per_node": "gres:gpu:4", **more}
    return SlurmJob(job_id=job_id, user="root", state=state, priority=100, partition="hops",
                    admin_comment=COMMENT_PREFIX + DIRECTIVES, submit_time=1000.0, reservation=offer.RESERVATION,
                    **fields)


def test_nodes_are_offered_best_first_by_the_running_jobs_own_estimates() -> None:
    views = [_view("1", {"v1": 1.0, "a1": 3.0, "a2": 2.9}), _view("2", {"v1": 2.0, "a1": 5.0, "a2": 5.0})]
    assert offer.rank_nodes(["v1", "a2", "a1"], views) == ["a1", "a2", "v1"]
    assert offer.rank_nodes(["v1", "a2"], []) == ["v1", "a2"]  # nothing known: the given order
    unmeasured = [_view("3", {"v1": 9.0, "a1": 1.0}, measured=False)]  # the fallback ranks nothing
    assert offer.rank_nodes(["v1", "a1"], unmeasured) == ["v1", "a1"]


def test_an_offer_is_open_only_while_nothing_waits_and_gpus_are_idle() -> None:
    snap = Snapshot(jobs=(), nodes=(_node("n1", 4, (0, 1)), _node("n2", 4), _node("n3;x", 4)), taken=500.0)
    made = offer.make_offer(snap, partitions=("hops",), waiting=[], promised={"7": {"n2": 3}}, views=[], now=501.0,
                            ttl=60.0, tres="gres/gpu:")
    assert made is not None and made.as_of == 500.0 and made.expires == 561.0
    assert made.nodes == (("n1", 2, ("hops",)), ("n2", 1, ("hops",)))  # promised GPUs are not offered; an odd node name never is
    assert offer.make_offer(snap, partitions=("hops",), waiting=["9"], promised={}, views=[], now=501.0, ttl=60.0,
                            tres="gres/gpu:") is None
    full = Snapshot(jobs=(), nodes=(_node("n1", 2, (0, 1)),), taken=500.0)
    assert offer.make_offer(full, partitions=("hops",), waiting=[], promised={}, views=[], now=501.0, ttl=60.0,
                            tres="gres/gpu:") is None


def test_waiting_means_a_pending_hops_job_of_the_partition_not_set_aside_nor_starting() -> None:
    def job(i: str, state: str, partition: str = "hops", hops: bool = True, **more: object) -> SlurmJob:
        return SlurmJob(job_id=i, state=state, partition=partition, submit_time=1000.0,
                        admin_comment=COMMENT_PREFIX + DIRECTIVES if hops else "", **more)
    jobs = [job("1", "RUNNING"), job("2", "PENDING"), job("3", "PENDING", partition="other"), job("4", "PENDING", hops=False),
            job("5", "PENDING"), job("6", "PENDING", priority=1, reservation=offer.RESERVATION)]
    assert offer.waiting_jobs(jobs, "hops", aside={"5"}, now=1002.0) == ["2"]  # 6 is about to start on its offer
    assert offer.waiting_jobs(jobs, "hops", aside={"5"}, now=1000.0 + offer.START_GRACE + 1) == ["2", "6"]


def test_the_engine_offers_after_a_planning_and_closes_while_a_job_waits(tmp_path: Path) -> None:
    api = StandInSlurm(gpus_per_node=4, nodes=2)
    path = tmp_path / "etc" / "hops-offer"
    path.parent.mkdir()
    engine = _engine(tmp_path, api, path)
    try:
        engine.refresh_and_fill()
        assert offer.RESERVATION in {r.name for r in api.reservations()}  # made with the gate
        made = offer.read(path)
        assert made is not None and free(made) == {"n1": 4, "n2": 4} and made.tres == "gres:gpu:"
        api.submit("10", "gpus=64 samples=1000 batch-size=8 model=resnet18")  # fits nowhere: it waits
        engine.refresh_and_fill()
        assert offer.read(path) is None and path.read_text() == offer.closed()
    finally:
        engine.close()
    assert path.read_text() == offer.closed()  # no engine, no offers


def test_without_an_offer_file_nothing_is_offered(tmp_path: Path) -> None:
    api = StandInSlurm()
    engine = _engine(tmp_path, api, None)
    try:
        engine.refresh_and_fill()
        assert offer.RESERVATION not in {r.name for r in api.reservations()}
    finally:
        engine.close()


def test_a_job_started_on_an_offer_gets_its_env_file_and_is_accounted(tmp_path: Path) -> None:
    api = StandInSlurm(gpus_per_node=4, nodes=2)
    engine = _engine(tmp_path, api, tmp_path / "hops-offer")
    try:
        engine.refresh_and_fill()
        # what slurmctld does with a job the hook put on an offer: it runs at once, unheld, in hops-offer
        api._jobs["11"] = _on_offer("11", "RUNNING", start_time=1000.0, nodes=("n2",), required_nodes=("n2",),
                                    gpu_alloc={"n2": (0, 1, 2, 3)})
        assert engine.monitor()  # a new Hops job, running: refresh (which adopts it) and a fragment plan
        env = read_job_env(engine.enactor.env_dir, "11")
        assert env["HOPS_GPUS"] == "4" and env["HOPS_CONFIG"] == "n2:4" and env["HOPS_GPU_TYPE"] == "a100"
        assert env["HOPS_LR"] == "0.1" and env["HOPS_PREEMPT_SIGNAL"] and "HOPS_METRICS_FILE" in env
        assert engine.tracked["11"].placements[-1]["config"] == {"n2": 4}
        assert not any(c[0] in ("hold", "update") and c[1:2] == ("11",) for c in api.calls), api.calls
        made = offer.read(tmp_path / "hops-offer")
        assert made is not None and free(made) == {"n1": 4}  # its node is no longer offered
    finally:
        engine.close()


def test_an_offered_job_that_did_not_start_is_detached_and_held(tmp_path: Path) -> None:
    api = StandInSlurm(gpus_per_node=4, nodes=2)
    engine = _engine(tmp_path, api, tmp_path / "hops-offer")
    try:
        engine.refresh_and_fill()
        api._jobs["12"] = _on_offer("12")
        engine.refresh()
        assert api.get("12").reservation == "" and api.get("12").held  # planned as any new job from here
    finally:
        engine.close()


def test_a_job_about_to_start_on_its_offer_is_left_to_slurm_and_its_gpus_are_not_offered_again(tmp_path: Path) -> None:
    api = StandInSlurm(gpus_per_node=4, nodes=2)
    api.clock = 1000.0
    path = tmp_path / "hops-offer"
    engine = _engine(tmp_path, api, path)
    try:
        engine.refresh_and_fill()
        # the hook put it on n1 with 4 GPUs; Slurm's next pass has not come yet
        api._jobs["13"] = _on_offer("13")
        assert not engine.monitor()  # not an arrival: Slurm starts it
        engine.refresh_and_fill()
        assert api.get("13").reservation == offer.RESERVATION and not api.get("13").held and "13" not in engine.tracked
        made = offer.read(path)
        assert made is not None and free(made) == {"n2": 4}  # its GPUs are promised to it
        api.clock = 1000.0 + offer.START_GRACE + 1  # it did not start within the grace: planned as any new job
        assert engine.monitor()  # detached, held, then placed by the fragment plan, as a new job is
        assert "13" in engine.tracked and api.get("13").reservation == "hops-j13"
        assert ("update", "13", "Reservation=") in [c[:3] for c in api.calls] and ("hold", "13") in [c[:2] for c in api.calls]
    finally:
        engine.close()


def test_offered_config_falls_back_on_the_request_while_slurm_lists_no_gpu_indices() -> None:
    job = SlurmJob(job_id="1", state="RUNNING", nodes=("n1",), tres_per_node="gres/gpu:2")
    assert offer.offered_config(job) == {"n1": 2}
    assert offer.offered_config(job.model_copy(update={"gpu_alloc": {"n1": (3,)}})) == {"n1": 1}
    assert offer.offered_config(job.model_copy(update={"nodes": ("n1", "n2")})) == {}
    assert freeze_config({"n1": 0}) == {}
