"""Offers held to the hook's standard (issue 34), against the stand-in slurmctld: one offered job whose
environment cannot be written is set aside alone (H2); an offered job holding anything but its grant is
requeue-held and planned, never adopted (H3); an offer never gives GPUs already handed out and reflects a
time before its reads (M1); a parked job does not close offers; env files go when their job ends and are
never written through a link (L1, L2)."""

from __future__ import annotations

from pathlib import Path

from hops_slurm.config import parse_config
from hops_slurm.directives import COMMENT_PREFIX
from hops_slurm.engine import offer, offer_grant
from hops_slurm.engine.engine import Engine
from hops_slurm.engine.offer_file import Published
from hops_slurm.slurm.api import SlurmJob, SlurmNode
from hops_slurm.slurm.enact import read_job_env, write_job_env
from hops_slurm.slurm.snapshot import Snapshot
from standin import StandInSlurm

LR = "gpus=1,2 samples=100000 batch-size=8 model=resnet18 lr=0.1@1,0.2@2"


def _engine(tmp_path: Path, api: StandInSlurm) -> Engine:
    (tmp_path / "etc").mkdir(exist_ok=True, mode=0o755)
    config = parse_config({"engine": {"settle_timeout": 0.5, "probe_size": "tiny",
                                      "offer_file": str(tmp_path / "etc" / "hops-offer")},
                           "paths": {"state_dir": str(tmp_path / "state")}})
    return Engine(config, api=api).open()


def _running(job_id: str, node: str, gpus: tuple[int, ...], *, asked: int | None = None, directives: str = LR,
             submit: float = 1000.0, **more: object) -> SlurmJob:
    fields: dict[str, object] = {"partition": "hops", **more}
    return SlurmJob(job_id=job_id, user="root", state="RUNNING", priority=100,
                    admin_comment=COMMENT_PREFIX + directives, submit_time=submit, start_time=submit,
                    reservation=offer.RESERVATION, nodes=(node,), required_nodes=(node,),
                    tres_per_node=f"gres:gpu:{asked if asked is not None else len(gpus)}",
                    gpu_alloc={node: gpus}, **fields)


def test_one_offered_job_whose_env_cannot_be_written_is_set_aside_and_the_refresh_goes_on(tmp_path: Path) -> None:
    """H2: adoption is per job: a job whose file cannot be made (its lr= table has no rate for the GPUs
    it runs on) goes to ``failed`` and the others are written; in the engine, the job Slurm ran on a
    whole node (--exclusive on gpus=1,2 lr=0.1@1,0.2@2, which raised in lr_for and stopped every
    refresh) is put right, the other offered job adopted, and the refresh reaches its last step."""
    bad = _running("21", "n1", (0, 1, 2, 3), asked=4)
    good = _running("22", "n2", (0,), submit=999.0)
    env = tmp_path / "env"
    snap = Snapshot(jobs=(bad, good))
    failed: dict[str, str] = {}
    done = offer.adopt([bad, good], snap, env, {"21": {}, "22": {}}, lambda j, exc: failed.update({j: str(exc)}))
    assert done == ["22"] and "learning rate for 4 GPUs" in failed["21"] and not (env / "21.env").exists()

    api = StandInSlurm(gpus_per_node=4, nodes=2)
    api.clock = 1000.0
    engine = _engine(tmp_path, api)
    try:
        engine.refresh_and_fill()
        api._jobs["21"] = _running("21", "n1", (0, 1, 2, 3), asked=1, submit=998.0)
        api._jobs["22"] = _running("22", "n2", (0,), submit=999.0)
        api.clock = 1010.0
        (engine.state_dir / "heartbeat").unlink()
        out = engine.refresh()
        assert out["adopted"] == ["22"] and read_job_env(engine.enactor.env_dir, "22")["HOPS_LR"] == "0.1"
        assert out["put_right"] == ["21"] and not (engine.enactor.env_dir / "21.env").exists()
        assert (engine.state_dir / "heartbeat").exists()  # the last step ran
    finally:
        engine.close()


def test_an_offered_job_holding_more_than_its_grant_is_put_right_never_adopted(tmp_path: Path) -> None:
    """H3: --exclusive (4 GPUs for a request of 1), a count its gpus= does not allow, a second job of the same
    second (an array's tasks), more than the engine offered on that node: requeue-held, admin-held,
    detached, then planned; the job that matches its grant is adopted."""
    hist = [Published(900.0, offer.Offer(as_of=899.0, expires=1100.0, tres="gres:gpu:",
                                         nodes=(("n1", 4, ("hops",)), ("n2", 1, ("hops",)))))]
    jobs = [_running("31", "n1", (0, 1, 2, 3), asked=1, submit=1000.0),  # whole node
            _running("32", "n1", (0, 1, 2), submit=1001.0),  # 3: not in gpus=1,2
            _running("33", "n1", (0,), submit=1002.0), _running("34", "n1", (1,), submit=1002.0),  # same second
            _running("35", "n2", (0, 1), submit=1003.0),  # 2 > the 1 offered on n2
            _running("36", "n1", (0,), submit=1004.0, partition="other")]
    wrong = offer_grant.misfits(jobs, ("hops",), hist)
    assert sorted(wrong) == ["31", "32", "34", "35", "36"], wrong
    assert offer_grant.misfits(jobs[2:3], ("hops",), hist) == {}
    assert offer_grant.misfits([jobs[4]], ("hops",), ()) == {}  # no history (a restart): the offer check is left out

    api = StandInSlurm(gpus_per_node=4, nodes=2)
    api.clock = 1000.0
    engine = _engine(tmp_path, api)
    try:
        engine.refresh_and_fill()
        api._jobs["41"] = _running("41", "n1", (0, 1, 2, 3), asked=1, submit=1000.0)
        api.clock = 1010.0
        out = engine.refresh()
        assert out["put_right"] == ["41"] and "41" not in out.get("adopted", [])
        assert not (engine.enactor.env_dir / "41.env").exists()
        seen = api.get("41")
        assert seen.pending and seen.reason == "JobHeldAdmin" and seen.reservation == ""
        assert "41" in engine.tracked and not engine.tracked["41"].aside  # planned from here as any pending job
    finally:
        engine.close()


def test_an_offer_never_gives_gpus_already_handed_out_and_is_as_of_before_its_reads() -> None:
    """M1: every pending, unheld job in hops-offer (whatever its age) keeps its GPUs out of the next offer;
    the snapshot's time is taken before the listing (a job given an offer after it is in the next one)."""
    node = SlurmNode(name="n1", state="idle", gpu_type="a100", gpus_total=4, partitions=("hops",), cpus=8)
    late = SlurmJob(job_id="5", state="PENDING", priority=1, partition="hops", submit_time=100.0,
                    reservation=offer.RESERVATION, required_nodes=("n1",), tres_per_node="gres:gpu:3",
                    admin_comment=COMMENT_PREFIX + LR)
    snap = Snapshot(jobs=(late,), nodes=(node,), taken=500.0)  # 400 s after its submission: not "starting"
    made = offer.make_offer(snap, partitions=("hops",), waiting=[], promised={}, views=[], now=501.0, ttl=60.0,
                            tres="gres:gpu:")
    assert made is not None and made.nodes == (("n1", 1, ("hops",)),)
    assert offer.make_offer(Snapshot(nodes=(node,)), partitions=("hops",), waiting=[], promised={}, views=[],
                            now=501.0, ttl=60.0, tres="gres:gpu:") is None  # a read of unknown time: closed

    class Clocked(StandInSlurm):
        def jobs(self) -> list[SlurmJob]:
            listing = super().jobs()
            self.clock += 3.0  # the listing takes time; what it shows is as of its start
            return listing

    api = Clocked()
    api.clock = 1000.0
    assert Snapshot.read(api).taken == 1000.0
    part = Snapshot(taken=1000.0).with_jobs([], whole=False, listed_at=1005.0)
    assert part.taken == 1000.0  # a partial re-read keeps the older time


def test_the_offer_is_closed_while_a_planning_enacts(tmp_path: Path) -> None:
    api = StandInSlurm(gpus_per_node=4, nodes=2)
    engine = _engine(tmp_path, api)
    path = tmp_path / "etc" / "hops-offer"
    seen: list[str] = []
    try:
        engine.refresh_and_fill()
        assert offer.read(path) is not None
        apply = engine.backend.apply

        def watching(plan, *, fragment, **given):  # noqa: ANN001, ANN003, ANN202
            seen.append(path.read_text())
            return apply(plan, fragment=fragment, **given)
        engine.backend.apply = watching  # type: ignore[method-assign]
        api.submit("50", "gpus=1 samples=1000 batch-size=8 model=resnet18")
        engine.monitor()
        assert seen and all(text == offer.closed() for text in seen)
    finally:
        engine.close()


def test_a_parked_job_does_not_close_offers() -> None:
    def job(i: str, **more: object) -> SlurmJob:
        return SlurmJob(job_id=i, state="PENDING", partition="hops", submit_time=900.0, priority=0,
                        reason="JobHeldAdmin", admin_comment=COMMENT_PREFIX + LR, **more)
    jobs = [job("1", eligible_time=5000.0), job("2", dependency="afterok:7(unfulfilled)"), job("3"),
            job("4", dependency="afterok:7(fulfilled)"), job("5", eligible_time=1100.0, restart_count=1)]
    assert offer.waiting_jobs(jobs, ("hops",), aside=(), now=1000.0, limited={"3"}) == ["4", "5"]
    assert offer.waiting_jobs(jobs[:3], ("hops",), aside=(), now=1000.0, limited={"3"}) == []


def test_env_files_are_never_written_through_a_link_and_go_when_the_job_ends(tmp_path: Path) -> None:
    env = tmp_path / "jobs"
    env.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    victim.chmod(0o600)
    (env / ".7.env.tmp").symlink_to(victim)
    (env / "7.env").symlink_to(victim)
    write_job_env(env, "7", {"HOPS_GPUS": "2"})
    assert victim.read_text() == "precious\n" and oct(victim.stat().st_mode & 0o777) == "0o600"
    assert read_job_env(env, "7") == {"HOPS_GPUS": "2"} and not (env / "7.env").is_symlink()
    assert oct(env.stat().st_mode & 0o777) == "0o711"

    api = StandInSlurm(gpus_per_node=4, nodes=2)
    engine = _engine(tmp_path, api)
    try:
        api.submit("60", "gpus=1 samples=1000 batch-size=8 model=resnet18")
        engine.refresh_and_fill()
        assert (engine.enactor.env_dir / "60.env").exists()
        api.cancel("60")
        engine.refresh()
        assert "60" not in engine.tracked and not (engine.enactor.env_dir / "60.env").exists()
    finally:
        engine.close()


def test_a_jobs_places_go_when_it_ends_and_never_through_a_link(tmp_path: Path) -> None:
    """What root creates per job is removed when the job ends (issue 34): its runtime-records place
    ``metrics/<job>/`` and its probe place ``<probe_dir>/<job>/``, after the last records were read; a link
    its owner planted inside is removed, never followed."""
    api = StandInSlurm(gpus_per_node=4, nodes=2)
    engine = _engine(tmp_path, api)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("precious\n")
    try:
        api.submit("61", "gpus=1 samples=1000 batch-size=8 model=resnet18")
        api.submit("62", "gpus=1 samples=1000 batch-size=8 model=resnet18")
        engine.refresh_and_fill()
        place = engine.places.metrics_dir / "61"
        assert place.is_dir() and (engine.places.metrics_dir / "62").is_dir()
        (place / "planted").symlink_to(victim)  # the owner's own place: anything may be in it
        (engine.places.probe_dir / "61").mkdir(parents=True)
        api.cancel("61")
        engine.refresh()
        assert "61" not in engine.tracked
        assert not place.exists() and not (engine.places.probe_dir / "61").exists()
        assert (victim / "keep").read_text() == "precious\n"
        assert (engine.places.metrics_dir / "62").is_dir()  # a job that still runs keeps its place
    finally:
        engine.close()
