"""The simulated cluster against hand-computed timelines (probes, rounds, fragments, restarts)."""

import pytest

from hops_slurm.sim.sim_backend import PolicyPlanError, SimBackend, SimSettings
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.costs import CostModel
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.core.rounds import LoopSettings, run_rounds
from hops_slurm.report.metrics import summarize
from hops_slurm.sim.slurmctld import directives
from hops_slurm.sim.workload import JobSpec
from planner.baselines import FifoGreedy
from planner.views import Plan, Policy

R50 = "ResNet-50 (batch size 64)"
THR4 = GroundTruth().samples_per_second(R50, "v100", 4, False)
#: the hand-computed timelines below leave the start and restart costs out (tests/hops_slurm/sim/test_sim_costs.py)
FREE = SimSettings(costs=CostModel.free())


def cluster(tmp_path, nodes=1, speed=1.0):
    path = tmp_path / "tiny.toml"
    path.write_text(
        'name = "tiny"\n[profiler]\ngpus_per_type = 1\nprobe_seconds = 60.0\n'
        f'[[server_kind]]\nname = "v"\ngpu_type = "v100"\ngpus = 4\ncount = {nodes}\nspeed = {speed}\n'
    )
    return load_cluster(path)


def job(jid, seconds_at_4, arrival=0.0):
    return JobSpec(jid, arrival, R50, (4,), THR4 * seconds_at_4)


class NoFragments(FifoGreedy):
    supports_fragment_plans = False


def test_a_new_model_on_an_idle_cluster_starts_at_once_and_runs_at_ground_truth(tmp_path):
    backend = SimBackend(cluster(tmp_path), (job("a", 3600.0),))
    rounds = run_rounds(backend, FifoGreedy())
    (rec,) = backend.job_records()
    assert rec.start == pytest.approx(0.0)  # probe in place: its probe runs beside it on the profiler's GPU
    assert rec.end == pytest.approx(CostModel().process_start + 3600.0)  # a first start pays the process start
    assert rec.placements[0].config == {"v-00": 4} and rec.placements[0].gpu_type == "v100"
    assert rounds[0].time == pytest.approx(0.0) and rounds[0].gpus_in_use == 4
    assert rec.age_estimate and rec.age_estimate > 0  # made when its probes ended (t = 60)


def test_single_job_waits_for_its_probe_then_runs_at_ground_truth(tmp_path):
    backend = SimBackend(cluster(tmp_path), (job("a", 3600.0),), SimSettings(probe_in_place=False))
    rounds = run_rounds(backend, FifoGreedy())
    (rec,) = backend.job_records()
    assert rec.start == pytest.approx(60.0)  # the paper's order: profiled before it is queued
    assert rec.end == pytest.approx(60.0 + CostModel().process_start + 3600.0)
    assert rounds[0].time == pytest.approx(60.0) and rounds[0].gpus_in_use == 4


def test_slow_server_runs_at_its_speed_factor(tmp_path):
    backend = SimBackend(cluster(tmp_path, speed=0.5), (job("a", 1000.0),), FREE)
    run_rounds(backend, FifoGreedy())
    assert backend.job_records()[0].end == pytest.approx(2000.0)


def test_completion_frees_gpus_for_the_next_fragment_plan(tmp_path):
    jobs = (job("a", 1000.0), job("b", 1000.0))
    backend = SimBackend(cluster(tmp_path), jobs, FREE)
    run_rounds(backend, FifoGreedy())
    a, b = backend.job_records()
    assert a.end == pytest.approx(1000.0)
    # both seen at 0 with the cluster idle (in place); a's GPUs free at 1000; next 30 s refresh of the round
    # that began at 720 is 1020
    assert b.start == pytest.approx(1020.0) and b.end == pytest.approx(2020.0)

    backend = SimBackend(cluster(tmp_path), jobs, FREE)
    run_rounds(backend, NoFragments())
    a, b = backend.job_records()
    assert b.start == pytest.approx(3 * 360.0)  # waits for the round boundary


def test_a_job_seen_on_a_busy_cluster_waits_for_its_probes_until_gpus_are_idle(tmp_path):
    """b (another model) arrives while a holds every GPU: it is probed first, as the paper's profiler
    would; a ends at 300, long before b's probes end (600..1200: the profiler's one GPU probed a's model
    first), and b is offered at the next planning that finds its GPUs idle, planned on
    the fallback view; its probe results reach the store when they end, not before."""
    path = tmp_path / "slow-probes.toml"
    path.write_text('name = "slow"\n[profiler]\ngpus_per_type = 1\nprobe_seconds = 600.0\n'
                    '[[server_kind]]\nname = "v"\ngpu_type = "v100"\ngpus = 4\ncount = 1\n')
    r18 = "ResNet-18 (batch size 64)"
    jobs = (job("a", 300.0), JobSpec("b", 100.0, r18, (4,), 1.0e6))
    backend = SimBackend(load_cluster(path), jobs, FREE)
    backend.wait_until(0.0)
    backend.apply(Plan({"a": {"v-00": 4}}), fragment=False)
    backend.wait_until(100.0)
    assert backend.active["b"].ready_at == pytest.approx(1200.0)  # nothing idle at its arrival: probed first
    # a fragment plan sees the running job as context only (current set); b is not offered yet
    assert [(v.job_id, v.current is not None) for v in backend.job_views(fragment=True)] == [("a", True)]
    backend.wait_until(330.0)  # a ended at 300
    (view,) = backend.job_views(fragment=True)
    assert view.job_id == "b" and not view.measured  # no data yet: the fallback view
    assert not backend.knowledge.profiled("sim/" + r18)
    backend.wait_until(1200.0)
    assert backend.knowledge.profiled("sim/" + r18)
    assert next(v for v in backend.job_views(fragment=False) if v.job_id == "b").measured


class MoveOnce(Policy):
    """Round 1 on the first node, every later round on the second: one preemption."""

    name = "move-once"

    def __init__(self) -> None:
        self.calls = 0

    def plan(self, cluster, jobs, now, *, fragment=False):
        self.calls += 1
        node = cluster.nodes[0 if self.calls == 1 else 1].name
        return Plan({j.job_id: {node: 4} for j in jobs})


def test_preemption_pays_the_notice_and_the_restart(tmp_path):
    costs = CostModel(process_start=30.0).with_checkpoint_seconds({"ResNet-50": 5.0})
    backend = SimBackend(cluster(tmp_path, nodes=2), (job("a", 1000.0),), SimSettings(costs=costs))
    rounds = run_rounds(backend, MoveOnce(), LoopSettings(360.0, 30.0))
    (rec,) = backend.job_records()
    # started at 0 (probe in place), progress from 30 (process start) to 360 (330 s of work); moved at 360:
    # it checkpoints on notice (5 s write, its GPUs busy), restarts on node 1 at 365, 30 s start + 5 s load,
    # 670 s left
    assert rec.end == pytest.approx(365.0 + 35.0 + 670.0)
    assert [p.preempted for p in rec.placements] == [True, False]
    assert rec.placements[0].end == pytest.approx(360.0)
    assert rec.placements[1].start == pytest.approx(365.0)
    assert rec.preemptions == 1
    m = summarize(backend.job_records(), rounds)
    assert m.avg_wait == pytest.approx(5.0)  # pending while its notice ran
    assert m.makespan == pytest.approx(1070.0)


class Greedy(Policy):
    name = "bad"

    def __init__(self, config):
        self.config = config

    def plan(self, cluster, jobs, now, *, fragment=False):
        return Plan({j.job_id: self.config for j in jobs})


def test_unenactable_plans_are_rejected_with_the_reason(tmp_path):
    spec = cluster(tmp_path, nodes=2)
    with pytest.raises(PolicyPlanError, match="requirement set"):
        run_rounds(SimBackend(spec, (job("a", 10.0),)), Greedy({"v-00": 2}))
    two = (job("a", 10.0), job("b", 10.0, arrival=0.0))
    backend = SimBackend(spec, two)
    backend.wait_until(200.0)
    with pytest.raises(PolicyPlanError, match="uses 8 GPUs on v-00"):
        backend.apply(Plan({"a": {"v-00": 4}, "b": {"v-00": 4}}), fragment=False)


def test_same_inputs_same_records(tmp_path):
    from hops_slurm.sim.workload import load_workload

    spec = load_cluster("paper-64")
    jobs = load_workload("paper:jobs=10", 5, cluster_gpus=64)
    one = SimBackend(spec, jobs)
    run_rounds(one, FifoGreedy())
    two = SimBackend(spec, jobs)
    run_rounds(two, FifoGreedy())
    assert [r.model_dump() for r in one.job_records()] == [r.model_dump() for r in two.job_records()]
    assert all(r.state == "COMPLETED" for r in one.job_records())


class Never(Policy):
    name = "never"

    def plan(self, cluster, jobs, now, *, fragment=False):
        return Plan({j.job_id: None for j in jobs})


def test_jobs_a_policy_never_places_are_cancelled_and_counted(tmp_path):
    settings = SimSettings(stall_seconds=3600.0)
    backend = SimBackend(cluster(tmp_path), (job("a", 10.0), job("b", 10.0, arrival=100.0)), settings)
    rounds = run_rounds(backend, Never())
    records = backend.job_records()
    assert [r.state for r in records] == ["CANCELLED", "CANCELLED"]
    assert backend.done()
    # idle from b's arrival (t = 100; a's probes ended at 60) until the first round end after 100 + 3600
    assert backend.now() >= 3700.0 and backend.now() < 3700.0 + 360.0
    assert all(r.unassigned_jobs == r.active_jobs for r in rounds)


def test_a_hidden_slow_node_is_learned_from_runtime_records_and_shared_across_jobs(tmp_path):
    path = tmp_path / "hidden.toml"
    path.write_text('name = "hidden"\n[profiler]\ngpus_per_type = 1\nprobe_seconds = 60.0\n'
                    '[[server_kind]]\nname = "v"\ngpu_type = "v100"\ngpus = 4\ncount = 2\n'
                    '[[degraded]]\nnode = "v-01"\nspeed = 0.5\n')
    spec = load_cluster(path)
    assert {n.server_class for n in spec.view().nodes} == {"v100"}  # Slurm shows nothing
    thr1 = GroundTruth().samples_per_second(R50, "v100", 1, False)
    jobs = (JobSpec("a", 0.0, R50, (1,), thr1 * 0.5 * 7200, "alice"),
            JobSpec("b", 0.0, "ResNet-18 (batch size 64)", (1,), 1.0e9, "bob"))

    class OnSecondNode(Policy):
        name = "second-node"

        def plan(self, cluster, jobs, now, *, fragment=False):
            return Plan({j.job_id: {"v-01": 1} for j in jobs if j.job_id == "a"})

    backend = SimBackend(spec, jobs, SimSettings(stall_seconds=3600.0))
    before = backend.knowledge.throughput_fn("bob/ResNet-18 (batch size 64)")
    assert before({"v-01": 1}) == pytest.approx(before({"v-00": 1}))
    run_rounds(backend, OnSecondNode(), max_rounds=5)
    # job a ran on the slow node: its own estimate there is its measured rate, and a job that never
    # ran there (b, another owner and model) is now estimated slower there too
    a_fn = backend.knowledge.throughput_fn("alice/" + R50)
    assert a_fn({"v-01": 1}) == pytest.approx(0.5 * thr1, rel=1e-3)
    b_fn = backend.knowledge.throughput_fn("bob/ResNet-18 (batch size 64)")
    assert b_fn({"v-01": 1}) == pytest.approx(0.5 * b_fn({"v-00": 1}), rel=1e-3)
    backend.close()


def test_understated_job_is_reaged_as_it_runs_and_taints_its_owners_queue(tmp_path):
    """Issue 16: ``bad`` declares a 1000 s job as 10 s. Once it ran past 10.5 s of work its age grows
    with what it did (x (1 + headroom) of it), and bad's queued job is aged by the same ratio; with the
    defences off both keep their declared ages."""
    from dataclasses import replace

    from estimator.honesty import HonestyParams
    from planner.views import Plan

    def run(enabled):
        liar = replace(job("a", 1000.0), user="bad", declared_samples=THR4 * 10.0)
        queued = replace(job("b", 100.0), user="bad")
        backend = SimBackend(cluster(tmp_path, nodes=2), (liar, queued),
                             SimSettings(honesty=HonestyParams(enabled=enabled), costs=CostModel.free()))
        backend.wait_until(120.0)  # both probed (one profiler GPU: 0..60, 60..120)
        backend.apply(Plan({"a": {"v-00": 4}}), fragment=False)
        declared_age = {v.job_id: v.age for v in backend.job_views(fragment=False)}
        backend.wait_until(120.0 + 400.0)  # a did 400 s of work (its first record at 300 s): 40x its declaration
        return declared_age, {v.job_id: v.age for v in backend.job_views(fragment=False)}, backend

    before, after, backend = run(True)
    # the engine's estimate: its record (a 300 s window) and the 100 s since, at the record's rate
    assert backend.processed_samples(backend.active["a"]) == pytest.approx(THR4 * 400.0, rel=1e-3)
    assert after["a"] == pytest.approx(before["a"] * 40.0 * 2.0, rel=1e-3)  # 40x done, (1 + headroom 1) x what it did
    assert after["b"] == pytest.approx(before["b"] * 40.0, rel=1e-3)  # bad's history: worst ratio 40
    before_off, after_off, _ = run(False)
    assert after_off == before_off == before


@pytest.mark.parametrize("policy", ["hops", "sia-lr", "gavel-lr", "themis", "slurm-backfill", "slurm-multifactor",
                                    "fifo-greedy"])
def test_a_job_with_zero_progress_on_every_config_is_set_aside_and_not_placed_again(tmp_path, policy):
    # a rigid 2-GPU request of a model that makes no progress on more than one GPU (ground truth: 0),
    # beside a job that runs: the no-progress job is tried where its estimates say it could run, its
    # records there show no progress, it is set aside with the reason and the run ends
    from planner.servable import NO_USABLE_CONFIG
    from planner.policies import make_policy

    rec_model = "Recommendation (batch size 1024)"
    assert GroundTruth().samples_per_second(rec_model, "v100", 2, False) == 0.0
    jobs = (JobSpec("stuck", 0.0, rec_model, (2,), 1.0e9, "carol"), job("ok", 4 * 3600.0))
    backend = SimBackend(cluster(tmp_path, nodes=2), jobs, SimSettings(stall_seconds=30 * 86400.0))
    run_rounds(backend, make_policy(policy))
    assert backend.done()
    ok, stuck = sorted(backend.job_records(), key=lambda r: r.job_id)
    assert ok.state == "COMPLETED"
    assert stuck.state == "CANCELLED" and backend.aside["stuck"].startswith(NO_USABLE_CONFIG)
    assert stuck.aside == backend.aside["stuck"]  # in its record: counted as set aside, not as unfinished
    metrics = summarize(backend.job_records(), [])
    assert (metrics.jobs, metrics.set_aside, metrics.unfinished) == (1, 1, 0)
    # one try per config the estimator could not rule out (one node, two nodes), each ended by its
    # first runtime record: not placed again after that, set aside long before the stall rule
    assert 1 <= len(stuck.placements) <= 2
    assert stuck.end is not None and stuck.end < 2 * 3600.0
    assert all(p.end is not None and p.end - p.start < 3600.0 for p in stuck.placements)


def test_a_fractional_declaration_is_planned_as_its_hops_line_states_it(tmp_path):
    """The fast path plans with the samples the engine path reads from the job's #HOPS line (an integer
    count the simulated hook writes), not with the workload's fraction: else every eq. 9 age differs between
    the paths in its last digits and the planner's ties break apart (docs/results/engine-sim.md)."""
    honest = JobSpec("a", 0.0, R50, (4,), 1000.6)
    liar = JobSpec("b", 0.0, R50, (4,), 1e6, declared_samples=2.4)
    backend = SimBackend(cluster(tmp_path, nodes=2), (honest, liar))
    backend.wait_until(0.0)
    views = {v.job_id: v for v in backend.job_views(fragment=False)}
    assert views["a"].total_samples == float(directives(honest).samples) == 1001.0
    assert views["b"].total_samples == float(directives(liar).samples) == 2.0
    assert {r.job_id: r.total_samples for r in backend.job_records()} == {"a": 1001.0, "b": 2.0}
