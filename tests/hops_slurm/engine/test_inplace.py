"""Probe in place (hops_slurm.engine.inplace): the rule that decides which new jobs start at once, measured
by their own runtime records, and which wait for probe jobs; the profiler flow that follows it; and the
engine against the stand-in slurmctld: an unprofiled job on an idle cluster is placed at the refresh that
first sees it, and its runtime records teach the store what a probe would have.

The live counterpart (real slurmctld, the daemon's refresh timer) is ``test_inplace_live.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.config import parse_config
from hops_slurm.directives import HopsDirectives
from hops_slurm.engine.engine import Engine
from hops_slurm.engine.inplace import Capacity, decide, idle_enough, probe_capacity
from hops_slurm.engine.known_jobs import known_job, refresh_ages, schedulable
from hops_slurm.engine.profiling import ProbeSettings, ProfilerFlow, model_key, model_signature
from hops_slurm.engine.state import (PROFILE_DONE, PROFILE_FAILED, PROFILE_INPLACE, PROFILE_NEW, PROFILE_PROBING,
                                     EngineState, JobState)
from hops_slurm.engine.userfiles import Owner
from hops_slurm.slurm.api import SlurmJob, SlurmNode
from hops_slurm.slurm.enact import read_job_env
from hops_slurm.slurm.snapshot import GATE, Snapshot
from profiler.records import RuntimeRecord
from standin import StandInSlurm

TYPES = ["a100", "v100"]
DIRECTIVES = "gpus=2,4 samples=100000 batch-size=8 model=resnet18"


# ----- the rule -----------------------------------------------------------------------------------------
def test_a_model_without_data_goes_in_place_when_its_smallest_count_is_idle() -> None:
    got = decide(gpu_types=TYPES, known_types=(), failed_types=(), smallest=2, capacity=Capacity(idle_gpus=2))
    assert got.in_place and got.probe == ()  # no probe may take the idle GPUs the plan is about to use
    got = decide(gpu_types=TYPES, known_types=(), failed_types=(), smallest=4, capacity=Capacity(idle_gpus=3))
    assert not got.in_place and got.probe == ("a100", "v100")  # it would wait anyway: probed, planned with data


def test_dedicated_profiler_nodes_probe_beside_an_in_place_job() -> None:
    cap = Capacity(idle_gpus=8, dedicated=frozenset({"v100"}))
    got = decide(gpu_types=TYPES, known_types=(), failed_types=(), smallest=1, capacity=cap)
    assert got.in_place and got.probe == ("v100",) and got.dedicated(cap) == {"v100"}
    busy = Capacity(idle_gpus=0, dedicated=frozenset({"v100"}))
    got = decide(gpu_types=TYPES, known_types=(), failed_types=(), smallest=1, capacity=busy)
    assert not got.in_place and got.probe == ("a100", "v100") and got.dedicated(busy) == {"v100"}


def test_a_model_with_data_or_nothing_left_to_probe_never_waits() -> None:
    busy = Capacity(idle_gpus=0)
    got = decide(gpu_types=TYPES, known_types=("a100",), failed_types=(), smallest=8, capacity=busy)
    assert got.in_place and got.probe == ()  # planned with its a100 data (carried to v100 by the estimator)
    got = decide(gpu_types=TYPES, known_types=(), failed_types=TYPES, smallest=8, capacity=busy)
    assert got.in_place and got.probe == ()  # every probe of its model failed: measured in place
    got = decide(gpu_types=TYPES, known_types=(), failed_types=("a100",), smallest=8, capacity=busy)
    assert not got.in_place and got.probe == ("v100",)  # a failed type is not probed again
    assert idle_enough(Capacity(idle_gpus=1), 0) and not idle_enough(Capacity(), 1)


def test_the_capacity_of_a_snapshot_counts_idle_hops_gpus_and_dedicated_types() -> None:
    nodes = (SlurmNode(name="a1", state="mixed", gpu_type="a100", gpus_total=8, gpus_used=(0, 1, 2), partitions=("hops", "profiler")),
             SlurmNode(name="v1", state="idle", gpu_type="v100", gpus_total=4, partitions=("hops", "profiler")),
             SlurmNode(name="p1", state="idle", gpu_type="v100", gpus_total=2, partitions=("profiler",)),
             SlurmNode(name="p2", state="down", gpu_type="k80", gpus_total=2, partitions=("profiler",)))
    snap = Snapshot((), nodes)
    assert probe_capacity(snap, "hops", "profiler") == Capacity(5 + 4, frozenset({"v100"}))  # p2 is down
    assert probe_capacity(snap, "hops", "profiler", {"9": {"v1": 4}}).idle_gpus == 5  # promised to a placed job


def test_schedulable_takes_jobs_measured_in_place_and_leaves_out_those_waiting_for_probes() -> None:
    listing = {str(i): SlurmJob(job_id=str(i), state="PENDING", partition="hops") for i in range(5)}
    jobs = [JobState(job_id=str(i), name="j", user="alice", directives=DIRECTIVES, submit_time=1.0, first_seen=1.0,
                     last_seen=1.0, last_state="PENDING", profile=p)
            for i, p in enumerate((PROFILE_NEW, PROFILE_PROBING, PROFILE_INPLACE, PROFILE_DONE, PROFILE_FAILED))]
    assert [js.job_id for js in schedulable(jobs, listing)] == ["2", "3", "4"]
    jobs[2].signature = "alice/k123"
    assert known_job(jobs[2], None).signature == "alice/k123"  # estimated with its own records once it has some


def test_a_job_that_ended_without_data_keeps_the_age_it_was_planned_with() -> None:
    """Its latency ratio (wait / age in its JobRecord) must not be undefined: a job measured in place that
    ended before its first runtime record gets the fallback's age, the mean of the others'."""
    jobs = [JobState(job_id=str(i), name="j", user="alice", directives=DIRECTIVES, submit_time=1.0, first_seen=1.0,
                     last_seen=1.0, last_state="PENDING", profile=PROFILE_INPLACE, signature="alice/k1") for i in range(4)]
    jobs[0].age, jobs[1].age = 100.0, 300.0  # estimated once their data came
    jobs[3].ended = 50.0
    asked: list[int] = []
    refresh_ages(jobs, lambda: asked.append(1) or None, True, lambda js, why: None)  # no data: no estimate
    assert asked == [1] and jobs[2].age is None  # still running: its age comes with its data
    assert jobs[3].age == pytest.approx(200.0)
    refresh_ages(jobs[:2], lambda: asked.append(1) or None, True, lambda js, why: None)
    assert asked == [1]  # nobody needed an estimate: the estimator is not even made


# ----- the profiler flow ------------------------------------------------------------------------------
def _flow(tmp_path: Path, api: StandInSlurm, **kw: object) -> ProfilerFlow:
    state = EngineState(tmp_path / "engine.sqlite")
    owners = lambda user: Owner(user, 0, 0)  # noqa: E731 - the test process's own ids
    return ProfilerFlow(ProbeSettings(tmp_path / "probes", size="tiny", **kw), state, store=None,  # type: ignore[arg-type]
                        api=api, owners=owners)


def _job(job_id: str, user: str = "root", directives: str = DIRECTIVES) -> JobState:
    return JobState(job_id=job_id, name="j", user=user, directives=directives, submit_time=1.0, first_seen=1.0,
                    last_seen=1.0, last_state="PENDING")


def _listing(api: StandInSlurm) -> dict[str, SlurmJob]:
    return {j.job_id: j for j in api.jobs()}


def test_an_idle_cluster_runs_a_new_model_in_place_without_any_probe(tmp_path: Path) -> None:
    api = StandInSlurm()
    flow = _flow(tmp_path, api)
    a, b = _job("1"), _job("2")
    assert flow.advance(a, TYPES, {}, Capacity(idle_gpus=8))
    key = model_key(HopsDirectives.from_canonical(DIRECTIVES), "tiny", "root")
    assert a.profile == PROFILE_INPLACE and a.signature == model_signature(key, "root") and a.signature.startswith("root/")
    assert not [c for c in api.calls if c[0] == "submit_probe"]
    assert flow.advance(b, TYPES, {}, Capacity(idle_gpus=8))  # a second job of the model: the same signature
    assert b.profile == PROFILE_INPLACE and b.signature == a.signature
    assert not flow.advance(a, TYPES, {}, Capacity(idle_gpus=8))  # nothing more to do for it


def test_a_busy_cluster_probes_and_idle_gpus_end_the_wait(tmp_path: Path) -> None:
    api = StandInSlurm()
    flow = _flow(tmp_path, api)
    job = _job("1")
    assert flow.advance(job, TYPES, _listing(api), Capacity(idle_gpus=0))
    assert job.profile == PROFILE_PROBING and sorted(job.probes) == TYPES
    probes = [str(p["slurm_id"]) for p in job.probes.values()]
    assert all(api.get(p).reservation == GATE for p in probes)  # root's probes: through the gate
    assert not flow.advance(job, TYPES, _listing(api), Capacity(idle_gpus=1))  # 1 idle GPU < its 2: waits on
    assert job.profile == PROFILE_PROBING
    assert flow.advance(job, TYPES, _listing(api), Capacity(idle_gpus=2))
    assert job.profile == PROFILE_INPLACE and job.signature
    assert all(api.get(p).state == "CANCELLED" for p in probes)  # still pending: they would take planned GPUs
    assert {p["status"] for p in job.probes.values()} == {"cancelled"}
    assert flow.probing == {}  # the next job of its model does not wait for them
    again = _job("2")
    assert flow.advance(again, TYPES, _listing(api), Capacity(idle_gpus=0))  # busy, no data yet: probed
    assert again.profile == PROFILE_PROBING


def test_a_second_job_waits_for_the_models_probes_only_while_nothing_is_idle(tmp_path: Path) -> None:
    api = StandInSlurm()
    flow = _flow(tmp_path, api)
    first, second = _job("1"), _job("2")
    assert flow.advance(first, TYPES, _listing(api), Capacity())
    assert not flow.advance(second, TYPES, _listing(api), Capacity())  # the model's probes run: it waits
    assert second.profile == PROFILE_NEW and len([c for c in api.calls if c[0] == "submit_probe"]) == 2
    assert flow.advance(second, TYPES, _listing(api), Capacity(idle_gpus=4))
    assert second.profile == PROFILE_INPLACE


def test_dedicated_profiler_nodes_get_probes_without_a_reservation_and_results_land_on_the_models_signature(
        tmp_path: Path) -> None:
    api = StandInSlurm()
    flow = _flow(tmp_path, api)
    job = _job("1", user="alice")
    cap = Capacity(idle_gpus=8, dedicated=frozenset({"v100"}))
    assert flow.advance(job, TYPES, _listing(api), cap)
    assert job.profile == PROFILE_INPLACE and list(job.probes) == ["v100"] and job.probes["v100"]["dedicated"]
    probe = api.get(str(job.probes["v100"]["slurm_id"]))
    assert probe.reservation == "" and probe.partition == "profiler"
    assert not api.reservations()  # no hops-p<id> for alice: nothing goes to the gated nodes
    # the probe ends without a record: a dedicated retry, then the type is failed; the job stays in place
    api._change(probe.job_id, state="COMPLETED")
    assert flow.advance(job, TYPES, _listing(api), cap)
    retry = api.get(str(job.probes["v100"]["slurm_id"]))
    assert retry.job_id != probe.job_id and retry.reservation == "" and job.probes["v100"]["attempts"] == 2
    api._change(retry.job_id, state="COMPLETED")
    assert flow.advance(job, TYPES, _listing(api), cap)
    assert job.profile == PROFILE_INPLACE and job.probes["v100"]["status"] == "failed"
    key = model_key(HopsDirectives.from_canonical(DIRECTIVES), "tiny", "alice")
    assert flow.failed_types[key] == {"v100"} and flow.probing == {}


def test_every_probe_failing_leaves_a_waiting_job_in_place_not_failed(tmp_path: Path) -> None:
    api = StandInSlurm()
    flow = _flow(tmp_path, api, retries=0)
    job = _job("1")
    flow.advance(job, TYPES, _listing(api), Capacity())
    for p in job.probes.values():
        api._change(str(p["slurm_id"]), state="FAILED")
    assert flow.advance(job, TYPES, _listing(api), Capacity())
    assert job.profile == PROFILE_INPLACE and job.signature and "a100" in job.profile_error
    later = _job("2")
    assert flow.advance(later, TYPES, _listing(api), Capacity())  # busy, but nothing left to probe
    assert later.profile == PROFILE_INPLACE and len([c for c in api.calls if c[0] == "submit_probe"]) == 2


def test_probe_in_place_off_is_the_papers_order(tmp_path: Path) -> None:
    api = StandInSlurm()
    flow = _flow(tmp_path, api, in_place=False, retries=0)
    job = _job("1")
    assert flow.advance(job, TYPES, _listing(api), Capacity(idle_gpus=16))
    assert job.profile == PROFILE_PROBING and job.signature == ""  # the probe's own hash will name it
    assert not flow.advance(job, TYPES, _listing(api), Capacity(idle_gpus=16))  # idle GPUs do not end the wait
    for p in job.probes.values():
        api._change(str(p["slurm_id"]), state="FAILED")
    assert flow.advance(job, TYPES, _listing(api), Capacity(idle_gpus=16))
    assert job.profile == PROFILE_FAILED


def test_runtime_records_teach_the_model_cache_so_the_next_job_has_data(tmp_path: Path) -> None:
    api = StandInSlurm()
    flow = _flow(tmp_path, api)
    job = _job("1")
    flow.advance(job, TYPES, {}, Capacity(idle_gpus=8))
    flow.measured(job, {"a100", "mixed"})
    key = model_key(HopsDirectives.from_canonical(DIRECTIVES), "tiny", "root")
    assert flow.state.known_model(key) == (job.signature, ["a100"])  # a record across types names no type
    busy = _job("2")
    assert flow.advance(busy, TYPES, {}, Capacity())  # busy, but its model has data: planned with it at once
    assert busy.profile == PROFILE_INPLACE and busy.signature == job.signature and not busy.probes
    flow.measured(busy, {"v100"})
    assert flow.state.known_model(key) == (job.signature, ["a100", "v100"])
    third = _job("3")
    assert flow.advance(third, TYPES, {}, Capacity())
    assert third.profile == PROFILE_DONE and third.signature == job.signature  # data on every type


# ----- the engine against the stand-in ------------------------------------------------------------------
def _engine(tmp_path: Path, api: StandInSlurm, **engine: object) -> Engine:
    config = parse_config({"engine": {"settle_timeout": 0.5, "probe_size": "tiny", **engine},
                           "paths": {"state_dir": str(tmp_path / "state")}})
    return Engine(config, api=api).open()


def _record(job: JobState, node: str, gpus: int, throughput: float) -> str:
    return RuntimeRecord(signature=job.signature, gpu_type="a100", node=node, gpus=gpus, nodes=1, batch_size=8,
                         steps=100, window_seconds=100 * 8 * gpus / throughput, throughput=throughput,
                         data_times=[], sync_waits=[], step_times=[]).model_dump_json() + "\n"


def test_an_unprofiled_job_on_an_idle_cluster_starts_at_the_first_refresh_and_teaches_the_store(tmp_path: Path) -> None:
    api = StandInSlurm(starts=True)
    api.submit("1", DIRECTIVES)
    engine = _engine(tmp_path, api)
    try:
        engine.refresh_and_fill()  # the daemon's refresh tick: the first that sees the job
        assert api.get("1").state == "RUNNING", engine.tracked["1"]
        js = engine.tracked["1"]
        assert js.profile == PROFILE_INPLACE and not [c for c in api.calls if c[0] == "submit_probe"]
        view = next(v for v in engine.last_planning.jobs if v.job_id == "1")  # type: ignore[union-attr]
        assert not view.measured and view.throughput({"n1": 2}) == pytest.approx(2.0 ** 0.5)  # planned on the fallback view
        env = read_job_env(engine.env_dir, "1")
        assert env["HOPS_JOB_SIGNATURE"] == js.signature and env["HOPS_METRICS_FILE"]
        # its recorder writes a window: the engine ingests it at the next refresh
        engine.refresh()
        node = next(iter(api.get("1").gpu_config()))
        gpus = api.get("1").gpu_config()[node]
        Path(env["HOPS_METRICS_FILE"]).write_text(_record(js, node, gpus, 300.0 * gpus))
        engine.refresh()
        engine.round()
        view = next(v for v in engine.last_planning.jobs if v.job_id == "1")  # type: ignore[union-attr]
        assert view.measured and view.throughput({node: gpus}) == pytest.approx(300.0 * gpus)
        other = 2 if gpus == 4 else 4  # another count it may run at: carried from its records
        assert view.throughput({node: other}) == pytest.approx(300.0 * other)
        assert engine.state.known_model(model_key(HopsDirectives.from_canonical(DIRECTIVES), "tiny", "root")) \
            == (js.signature, ["a100"])  # type: ignore[union-attr]
    finally:
        engine.close()


def test_a_busy_cluster_probes_and_the_job_is_placed_once_gpus_are_idle(tmp_path: Path) -> None:
    api = StandInSlurm(starts=True, nodes=1, gpus_per_node=4)
    api.submit("1", "gpus=4 samples=1000 batch-size=8 model=vgg11")
    engine = _engine(tmp_path, api)
    try:
        engine.state.remember_model("root/vgg11|b8|tiny", "sig-vgg11", ["a100"])  # type: ignore[union-attr]
        engine.refresh_and_fill()
        assert api.get("1").state == "RUNNING"  # a known model, all 4 GPUs
        api.submit("2", DIRECTIVES)
        engine.refresh_and_fill()
        assert engine.tracked["2"].profile == PROFILE_PROBING and api.get("2").pending  # nothing idle: probed
        probe = str(engine.tracked["2"].probes["a100"]["slurm_id"])
        api.cancel("1")  # the running job ends: its GPUs are idle at the next refresh
        engine.refresh_and_fill()
        assert engine.tracked["2"].profile == PROFILE_INPLACE and api.get(probe).state == "CANCELLED"
        assert api.get("2").state == "RUNNING"
    finally:
        engine.close()


def test_probe_in_place_off_keeps_every_new_job_waiting_for_its_probes(tmp_path: Path) -> None:
    api = StandInSlurm(starts=True)
    api.submit("1", DIRECTIVES)
    engine = _engine(tmp_path, api, probe_in_place=False)
    try:
        engine.refresh_and_fill()
        assert engine.tracked["1"].profile == PROFILE_PROBING and api.get("1").pending
        assert [c for c in api.calls if c[0] == "submit_probe"]
    finally:
        engine.close()
