"""hops_slurm.sim.site: the simulator runs the site's own Slurm policies as Slurm runs them (issue 23):
no probe before a job may start, scheduling at each submission and end (not at refresh ticks), the
workload's time limits; Hops still runs as the engine does."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hops_slurm.sim import runner
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.costs import CostModel
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.site import SITE_POLICIES, SLURM_EVENT_GAP, as_slurm_runs, first_start_free, is_site_policy
from hops_slurm.sim.workload import JobSpec

R50 = "ResNet-50 (batch size 64)"
THR4 = GroundTruth().samples_per_second(R50, "v100", 4, False)
#: nothing charged for a start: a job's JCT is its wait plus its work
FREE = CostModel(process_start=0.0)


def tiny(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text('name = "tiny"\n[profiler]\ngpus_per_type = 2\nprobe_seconds = 60.0\n'
                    '[[server_kind]]\nname = "v"\ngpu_type = "v100"\ngpus = 4\ncount = 2\nspeed = 1.0\n')
    return load_cluster(path)


def starts(result: runner.RunResult) -> dict[str, float]:
    return {j.job_id: j.start for j in result.jobs}


@pytest.mark.parametrize("policy", SITE_POLICIES)
def test_a_site_policy_starts_a_job_at_its_submission_without_a_probe(tmp_path, policy: str) -> None:
    """Two 4-GPU jobs of ~10 min on an idle 8-GPU cluster, submitted at 0 and at 7 s: under Slurm each
    starts when it is submitted; run as the engine runs (30 s refresh ticks) the second waits for a tick."""
    jobs = (JobSpec("a", 0.0, R50, (4,), THR4 * 600.0), JobSpec("b", 7.0, R50, (4,), THR4 * 600.0))
    opts = runner.Options(round_seconds=360.0, refresh_seconds=30.0, costs=FREE)
    as_slurm = starts(runner.simulate(tiny(tmp_path), jobs, policy, 0, opts))
    assert as_slurm == pytest.approx({"a": 0.0, "b": 7.0})
    as_engine = starts(runner.simulate(tiny(tmp_path), jobs, policy, 0, replace(opts, site_as_slurm=False)))
    assert as_engine["b"] == pytest.approx(30.0)  # the next refresh tick (the check above can fail)


def test_a_site_policy_starts_a_waiting_job_the_moment_gpus_free(tmp_path) -> None:
    """A job of a model never seen arrives on a full cluster: under Slurm it starts the instant the running
    job ends (no probe, a scheduling pass at the end); as the engine runs, at a later refresh tick."""
    jobs = (JobSpec("a", 0.0, R50, (8,), THR4 * 40.0), JobSpec("b", 1.0, "ResNet-18 (batch size 64)", (4,), THR4 * 600.0))
    opts = runner.Options(round_seconds=360.0, refresh_seconds=30.0, costs=FREE)
    a_end = {j.job_id: j.end for j in runner.simulate(tiny(tmp_path), jobs, "slurm-backfill", 0, opts).jobs}["a"]
    assert a_end is not None and a_end < 60.0
    as_slurm = starts(runner.simulate(tiny(tmp_path), jobs, "slurm-backfill", 0, opts))
    assert as_slurm["b"] == pytest.approx(a_end, abs=1e-6)
    as_engine = starts(runner.simulate(tiny(tmp_path), jobs, "slurm-backfill", 0, replace(opts, site_as_slurm=False)))
    assert as_engine["b"] == pytest.approx(30.0)  # the refresh tick after it (the check above can fail)


def test_submissions_within_batch_sched_delay_are_one_scheduling_pass(tmp_path) -> None:
    """Three 2-GPU jobs on an idle 8-GPU cluster, submitted at 0, 1 and 2 s: Slurm runs the pass their
    submissions ask for once ``batch_sched_delay`` (3 s) has passed since the last pass, so the second and
    third start together at 3 s, in one planning; with the gap set to 0 each starts at its submission."""
    jobs = tuple(JobSpec(f"j{i}", float(i), R50, (2,), THR4 * 600.0) for i in range(3))
    opts = runner.Options(round_seconds=360.0, refresh_seconds=30.0, costs=FREE)
    merged = runner.simulate(tiny(tmp_path), jobs, "slurm-backfill", 0, opts)
    assert starts(merged) == pytest.approx({"j0": 0.0, "j1": SLURM_EVENT_GAP, "j2": SLURM_EVENT_GAP})
    each = runner.simulate(tiny(tmp_path), jobs, "slurm-backfill", 0, replace(opts, event_gap=0.0))
    assert starts(each) == pytest.approx({"j0": 0.0, "j1": 1.0, "j2": 2.0})
    assert len({r.time for r in merged.rounds if r.time < 30.0}) < len({r.time for r in each.rounds if r.time < 30.0})


def test_hops_still_runs_as_the_engine_runs(tmp_path) -> None:
    jobs = (JobSpec("a", 0.0, R50, (4,), THR4 * 600.0), JobSpec("b", 7.0, R50, (4,), THR4 * 600.0))
    got = starts(runner.simulate(tiny(tmp_path), jobs, "hops", 0, runner.Options(refresh_seconds=30.0, costs=FREE)))
    assert got["b"] == pytest.approx(30.0)  # at the engine's refresh tick


def test_the_backfill_plans_with_the_workloads_time_limits(tmp_path) -> None:
    """8 GPUs: a 4-GPU job runs ~20 min; an 8-GPU job waits for it; a short 4-GPU job (10 min) behind it may
    start beside the first only if it ends before the first does by the time limits the backfill reads:
    with a 2 h limit on the first it fits, with the first's 20 min limit and a 1 h limit on the short one
    it does not."""
    def jobs(first_limit: float, short_limit: float) -> tuple[JobSpec, ...]:
        return (JobSpec("first", 0.0, R50, (4,), THR4 * 1200.0, time_limit=first_limit),
                JobSpec("wide", 1.0, R50, (8,), THR4 * 600.0, time_limit=3600.0),
                JobSpec("short", 2.0, R50, (4,), THR4 * 600.0, time_limit=short_limit))
    opts = runner.Options(costs=FREE)
    fits = starts(runner.simulate(tiny(tmp_path), jobs(7200.0, 900.0), "slurm-backfill", 0, opts))
    assert fits["short"] == pytest.approx(SLURM_EVENT_GAP)  # its arrival (2 s) merged into the pass at 3 s
    blocked = starts(runner.simulate(tiny(tmp_path), jobs(1300.0, 3600.0), "slurm-backfill", 0, opts))
    assert blocked["short"] > fits["short"] + 600.0


def test_the_semantics_are_derived_in_one_place(tmp_path) -> None:
    cluster, opts = as_slurm_runs(tiny(tmp_path), runner.Options())
    assert cluster.profiler.probe_seconds == 0.0 and opts.plan_on_events
    assert is_site_policy("slurm-multifactor") and not is_site_policy("hops") and not is_site_policy("gavel")
    assert first_start_free(runner.Options()).costs.first_start == 0.0
    kept = runner.Options(costs=CostModel(first_start=5.0))
    assert first_start_free(kept).costs.first_start == 5.0
