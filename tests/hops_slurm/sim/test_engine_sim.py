"""The production engine (:class:`hops_slurm.engine.engine.Engine`) on the simulated slurmctld, in-process
and without root: a whole workload to completion (probe jobs and their record files, runtime records,
journal, records), a crash at a journaled step and the restart that reconciles, the simulator's two
paths agreeing, and server entities learned through the engine."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from hops_slurm.cli import main
from hops_slurm.engine.crashpoints import CRASH_AT_ENV, CrashingJournal
from hops_slurm.journal import Journal
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.engine_run import engine_simulation, simulate_engine
from hops_slurm.sim.runner import Options, simulate
from hops_slurm.sim.slurmctld import directive_model
from hops_slurm.sim.workload import JobSpec, load_workload
from hops_slurm.slurm.snapshot import GATE

CLUSTER = load_cluster("paper-64")
JOBS = load_workload("paper:jobs=6", 0, cluster_gpus=CLUSTER.total_gpus)


class Crashed(BaseException):
    """The engine process ended at a crash point (nothing in the engine catches a BaseException)."""


def _check_clean(sim: object) -> None:
    """Every job ended, nothing left held or reserved, nothing open in the journal."""
    ctl = sim.ctl  # type: ignore[attr-defined]
    assert ctl.done() and ctl.ended == len(JOBS)
    assert {r.name for r in ctl.reservations()} <= {GATE}
    assert not Journal(sim.state_dir / "journal.sqlite").open_actions()  # type: ignore[attr-defined]


def test_the_engine_runs_a_workload_to_completion_through_probe_jobs_and_record_files(tmp_path: Path,
                                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with engine_simulation(CLUSTER, JOBS, state_dir=tmp_path / "state") as sim:
        sim.run()
        _check_clean(sim)
        ctl, store = sim.ctl, sim.engine.store
        # each (owner, model) was probed once per GPU type, by probe jobs whose record files the engine read
        pairs = {(j.user, j.model) for j in JOBS}
        assert ctl.calls["submit_probe"] == len(pairs) * len(CLUSTER.gpu_types)
        # (each job's probe place went when the job ended, after the engine read its record files)
        assert not list((tmp_path / "state" / "probes").glob("*/probe-*.json"))
        signatures = store.signatures()
        assert len(signatures) == len(pairs) and all(sig.split("/")[0] in {u for u, _ in pairs} for sig in signatures)
        # and the runtime records the jobs wrote went into the type and entity layers
        counts = [store.record_counts(sig) for sig in signatures]
        assert sum(c["type_aggregated"] + c["type_distributed"] for c in counts) >= len(JOBS), counts
        assert sum(c["entity_aggregated"] + c["entity_distributed"] for c in counts) >= len(JOBS), counts
        jobs, rounds = sim.records()
    assert len(jobs) == len(JOBS) and all(j.state == "COMPLETED" and j.end is not None for j in jobs)
    # every planned requeue came with a notice that the simulated job answered at once: no work lost
    moved = [p for j in jobs for p in j.placements if p.preempted]
    assert moved and all(p.notice is not None and p.checkpoint_seen and p.work_lost == 0 for p in moved), moved
    assert {j.name.split(":")[1] for j in jobs} == {directive_model(s.model) for s in JOBS}
    assert rounds and all(r.total_gpus == CLUSTER.total_gpus for r in rounds)
    # hops-slurm report reads the engine's records of a simulation as it reads a cluster's
    assert main(["report", "--records", str(tmp_path / "state" / "records.sqlite"), "--parsable2", "--noheader",
                 "--format", "JobID,State"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines) == sorted(f"{j.job_id}|COMPLETED" for j in jobs)


#: every kind of journaled step a placement meets (the live fault test's chain), and a preemption (its notice too)
CHAIN = [("hold", "after"), ("reserve", "before"), ("reserve", "after"), ("place", "before"), ("place", "after"),
         ("env", "after"), ("release", "before"), ("release", "after"), ("detach", "after"),
         ("unreserve", "after"), ("gate", "after"), ("notice", "before"), ("notice", "after"),
         ("requeuehold", "before"), ("requeuehold", "after")]


@pytest.mark.parametrize(("kind", "when"), CHAIN)
def test_a_crash_at_a_journaled_step_loses_no_job_and_the_restart_finishes_the_workload(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, when: str) -> None:
    def crash(self: CrashingJournal, what: str) -> None:
        raise Crashed(what)

    monkeypatch.setattr(CrashingJournal, "_crash", crash)
    monkeypatch.setenv(CRASH_AT_ENV, f"{kind}:before" if when == "before" else kind)
    with engine_simulation(CLUSTER, JOBS, state_dir=tmp_path / "state", start=False) as sim:
        with pytest.raises(Crashed):
            sim.restart()  # the engine's start (its reconcile may act) is a crash point too
            sim.run()
        monkeypatch.delenv(CRASH_AT_ENV)
        sim.restart()  # reconciles the journal with the simulated Slurm before anything else
        assert not Journal(tmp_path / "state" / "journal.sqlite").open_actions()
        sim.run()
        _check_clean(sim)
        jobs, _ = sim.records()
    assert sorted(j.state for j in jobs) == ["COMPLETED"] * len(JOBS)


def test_the_engine_and_the_fast_simulator_path_agree_on_the_same_workload() -> None:
    """The two ways to simulate share the planner, estimator, job views and accounting; the engine path
    adds Slurm's part (probe jobs at refresh ticks; the fast path refuses the splits Slurm would not make
    as the enactor does: hops_slurm.sim.split).
    They are deterministic; Hops' avg JCT differs by +0.3 % over Table 3's seeds (docs/results/engine-sim.md)."""
    engine = simulate_engine(CLUSTER, JOBS, "hops", 0, Options())
    fast = simulate(CLUSTER, JOBS, "hops", 0, Options())
    assert engine.metrics.unfinished == fast.metrics.unfinished == 0
    assert engine.metrics.avg_jct == pytest.approx(fast.metrics.avg_jct, rel=0.10)
    assert engine.metrics.avg_wait == pytest.approx(fast.metrics.avg_wait, rel=0.25, abs=300)
    # Themis' ideal time by one formula (hops_slurm.sim.groundtruth.ideal_time) on both paths
    assert math.isfinite(engine.metrics.max_rho) and engine.metrics.max_rho == pytest.approx(fast.metrics.max_rho, rel=0.25)


def test_the_engine_learns_degraded_servers_hidden_in_a_class() -> None:
    """Two V100 servers of class v100-dgx run at half speed; Slurm shows nothing of it. After a workload
    the engine's store (entity layer, fed by runtime record files) rates them clearly below their peers."""
    cluster = load_cluster("entities-80")
    jobs = tuple(JobSpec(job_id=f"j{i}", arrival=60.0 * i, model=m, requirements=(1, 2, 4, 8), user=f"u{i % 3}",
                         total_samples=s)
                 for i, (m, s) in enumerate([("ResNet-50 (batch size 64)", 4e6), ("Transformer (batch size 64)", 3e6)] * 12))
    with engine_simulation(cluster, jobs) as sim:
        sim.run()
        factors = sim.engine.store.entity_factors()
    slow = [factors[n] for n in ("v100-dgx-01", "v100-dgx-04") if n in factors]
    fast = [f for n, f in factors.items() if n.startswith("v100-dgx") and n not in ("v100-dgx-01", "v100-dgx-04")]
    assert slow and fast, factors
    assert max(slow) < 0.75 < min(fast), factors


@pytest.mark.parametrize(("monitor", "second_starts"), [(5.0, 10.0), (None, 30.0)])
def test_the_monitor_step_starts_a_new_job_at_its_next_instant_not_the_next_refresh(
        monitor: float | None, second_starts: float) -> None:
    """The daemon's monitor step (``Options.monitor_seconds``, from ``[engine] monitor_interval``): a job
    submitted at 7 s to idle GPUs starts at the monitor instant 10 s (the daemon's 5 s timer), where
    without the step it waits for the 30 s refresh. Both jobs are of models new to Hops: measured in place,
    no probe before either start."""
    jobs = (JobSpec("a", 0.0, "ResNet-50 (batch size 64)", (1, 2), 2e6, "u1"),
            JobSpec("b", 7.0, "Transformer (batch size 64)", (1, 2), 2e6, "u2"))
    result = simulate_engine(CLUSTER, jobs, "hops", 0, Options(monitor_seconds=monitor))
    starts = {r.name.partition(":")[0]: r.start for r in result.jobs}
    assert starts == {"a": 0.0, "b": second_starts}
