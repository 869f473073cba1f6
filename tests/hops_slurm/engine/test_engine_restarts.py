"""Restart costs in the live engine (hops_slurm.engine.restarts): measured from a job's runtime record
files per model signature (the stand-in slurmctld and the simulated one, in-process), the site default
before, and what the job views carry (KnownJob.restart_cost)."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from estimator.store import ThroughputStore
from hops_slurm.config import parse_config
from hops_slurm.engine.engine import Engine
from hops_slurm.engine.known_jobs import job_views
from hops_slurm.engine.restarts import RestartCosts
from hops_slurm.engine.runtime_records import RUNTIME_FILE
from hops_slurm.engine.state import PROFILE_DONE, JobState
from hops_slurm.engine.userfiles import Owner
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.engine_run import engine_simulation
from hops_slurm.sim.workload import load_workload
from hops_slurm.slurm.api import SlurmJob
from profiler.records import RuntimeRecord
from standin import StandInSlurm

JOB = "gpus=1,2 samples=100000 batch-size=8 model=resnet18"
T0 = 1_700_000_000.0


def _state(job_id: str = "1", signature: str = "sig-a") -> JobState:
    js = JobState(job_id=job_id, name="j", user="root", directives=JOB, submit_time=T0, first_seen=T0, last_seen=T0,
                  last_state="PENDING", signature=signature)
    js.profile = PROFILE_DONE
    return js


def test_the_default_until_a_restart_of_the_model_is_measured(tmp_path: Path) -> None:
    with ThroughputStore(tmp_path / "s.db") as store:
        costs = RestartCosts(store, 45.0)
        a, same_model, other = _state("1"), _state("2"), _state("3", "sig-b")
        assert costs.of(a) == 45.0
        assert costs.observe(a, 12.0, T0) and costs.observe(same_model, 14.0, T0 + 1)
        assert costs.of(a) == costs.of(same_model) == 13.0  # the model's, whichever job showed it
        assert costs.of(other) == 45.0 and costs.of(_state("4", "")) == 45.0  # no signature: the default
        assert not costs.observe(a, -1.0, T0) and not costs.observe(_state("5", ""), 5.0, T0)
        assert costs.of(a) == 13.0
        dry = RestartCosts(store, 45.0, writes=False)  # a dry run reads, never writes
        assert not dry.observe(other, 5.0, T0) and dry.of(other) == 45.0 and dry.of(a) == 13.0
    assert RestartCosts(None, 30.0).of(_state()) == 30.0


def test_the_job_views_carry_each_job_s_restart_cost() -> None:
    a, b = _state("1"), _state("2", "sig-b")
    listing = {j.job_id: SlurmJob(job_id=j.job_id, state="PENDING") for j in (a, b)}
    views = job_views([a, b], listing, None, T0, lambda js, why: None,
                      restart_cost=lambda js: 30.0 if js.signature == "sig-a" else 90.0)
    assert {v.job_id: v.restart_cost for v in views} == {"1": 30.0, "2": 90.0}


def _record(at: float, window: float, node: str, done: float | None = None, gpus: int = 1) -> str:
    """A window of 80 samples from a job of ``gpus`` GPUs on one node (its allocation: record_limits)."""
    return RuntimeRecord(signature="sig-resnet18", gpu_type="a100", node=node, gpus=gpus, nodes=1, batch_size=8 // gpus,
                         steps=10, window_seconds=window, throughput=80.0 / window, data_times=[], sync_waits=[],
                         step_times=[], measured_at=datetime.fromtimestamp(at, tz=timezone.utc),
                         done_samples=done).model_dump_json() + "\n"


def test_the_engine_measures_a_job_s_start_from_its_record_file(tmp_path: Path) -> None:
    """Started at T0 (the refresh that saw it pending), its first window began 10 s later: the store keeps 10 s
    for its model, and the next planning's view of the job carries it instead of the configured default."""
    api = StandInSlurm(starts=True)
    clock = [T0]
    api.now = lambda: clock[0]  # type: ignore[method-assign]
    api.submit("1", JOB)
    config = parse_config({"engine": {"settle_timeout": 0.5, "probe_size": "tiny", "restart_cost_default": 45.0},
                           "paths": {"state_dir": str(tmp_path / "state")}})
    me = Owner("root", os.getuid(), os.getgid())
    engine = Engine(config, api=api, owners=lambda user: me).open()
    try:
        engine.state.remember_model("root/resnet18|b8|tiny", "sig-resnet18", ["a100"])  # type: ignore[union-attr]
        engine.refresh()
        planning = engine.round()  # starts it (its first placement is dated at this refresh: T0)
        assert planning is not None
        views = {v.job_id: v for v in planning.jobs}
        assert views["1"].restart_cost == 45.0  # nothing measured yet: [engine] restart_cost_default
        clock[0] = T0 + 30.0
        engine.refresh()
        js = engine.tracked["1"]
        assert js.placements[-1]["start"] == T0
        node = next(iter(js.config))
        place = tmp_path / "state" / "metrics" / "1"
        gpus = js.config[node]
        assert list(js.config) == [node] and 8 % gpus == 0
        (place / RUNTIME_FILE).write_text(_record(T0 + 12.0, 2.0, node, done=80.0, gpus=gpus)
                                          + _record(T0 + 14.0, 2.0, node, 160.0, gpus=gpus))
        clock[0] = T0 + 60.0
        engine.refresh()
        assert engine.store.restart_cost("sig-resnet18") == pytest.approx(10.0)  # once per run, not per record
        assert engine.store.db.execute("select count(*) from restart_cost").fetchone()[0] == 1
        assert engine.restarts.of(js) == pytest.approx(10.0)
        planning = engine.round()
        assert planning is not None
        views = {v.job_id: v for v in planning.jobs}
        assert views["1"].restart_cost == pytest.approx(10.0)
        # processed: its two windows and the 46 s since the last one at their 40 samples/s, not its first 10 s
        assert js.processed == pytest.approx(160.0 + 46.0 * 40.0)
    finally:
        engine.close()


def test_the_engine_on_the_simulated_cluster_measures_what_the_simulator_charges(tmp_path: Path) -> None:
    """A workload with preemptions through the production engine: every run's first record gives its restart
    cost (what the simulated slurmctld's cost model charged it: the process start, plus the checkpoint load
    for a restart), and every job ends with processed samples at its true samples, not above."""
    cluster = load_cluster("paper-64")
    jobs = load_workload("paper:jobs=6", 0, cluster_gpus=cluster.total_gpus)
    with engine_simulation(cluster, jobs, state_dir=tmp_path / "state") as sim:
        sim.run()
        costs = sim.ctl.settings.costs
        charged = max(costs.start_cost(j.model, from_checkpoint=True) for j in jobs)  # a restart's, at most
        store, state = sim.engine.store, sim.engine.state
        seen = [float(r["seconds"]) for r in store.db.query("select seconds from restart_cost")]
        ended = state.jobs(active_only=False).values()
        runs = [p for js in ended for p in js.placements if "rec_samples" in p]
        restarts = sum(1 for js in ended for p in js.placements[1:] if "rec_samples" in p)
        assert restarts > 0, "the workload should preempt some job"
        assert len(seen) == len(runs)  # one observation per run that wrote a record
        assert all(costs.process_start - 1.0 <= s <= charged + 1.0 for s in seen), seen  # a first start pays too
        restart_least = min(costs.start_cost(j.model, from_checkpoint=True) for j in jobs)
        # a record-timed observation is good to about a second (a first start charged 35 s has been seen at
        # 34.1 s), the size of the smallest checkpoint load: 1.5 s of slack tells restarts from first starts
        assert sum(1 for s in seen if s >= restart_least - 1.5) >= restarts, seen
        records, _ = sim.records()
    for rec in records:
        assert rec.processed_samples is not None and rec.total_samples is not None
        # within 0.1%: a run the enactor requeue-held at once (its split was not the plan) may add a window it redid
        assert rec.total_samples * 0.999 <= rec.processed_samples <= rec.total_samples * 1.001, rec.job_id
