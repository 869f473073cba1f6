"""The simulator's cost model (hops_slurm/sim/costs.py) on both paths, against hand-computed timelines: the
notice (a job that ignores it loses exactly its work since its last checkpoint and holds its GPUs through
the grace; one that checkpoints loses nothing), start costs that are not progress, a first start that pays
the process start, and the fast path and the simulated slurmctld charging the same for one event sequence."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from hops_slurm.cli import main
from hops_slurm.sim.sim_backend import SimBackend, SimSettings
from hops_slurm.sim.cluster_spec import ClusterSpec, load_cluster
from hops_slurm.sim.costs import CHECKPOINT_SECONDS, CostModel, JobProgress, parse_checkpoint_seconds
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.slurmctld import EPOCH, SimCtlSettings, SimSlurmctld
from hops_slurm.sim.workload import JobSpec, load_workload
from planner.views import Plan

R50 = "ResNet-50 (batch size 64)"
THR4 = GroundTruth().samples_per_second(R50, "v100", 4, False)
#: 10 s process start, 5 s to write or load a ResNet-50 checkpoint, 120 s grace, a checkpoint every 100 s
COSTS = CostModel(process_start=10.0, grace=120.0, checkpoint_interval=100.0).with_checkpoint_seconds({"ResNet-50": 5.0})


def cluster(tmp_path: Path) -> ClusterSpec:
    path = tmp_path / "two.toml"
    path.write_text('name = "two"\n[profiler]\ngpus_per_type = 1\nprobe_seconds = 60.0\n'
                    '[[server_kind]]\nname = "v"\ngpu_type = "v100"\ngpus = 4\ncount = 2\n')
    return load_cluster(path)


def job(jid: str, seconds: float, *, on_notice: bool | None = None) -> JobSpec:
    return JobSpec(jid, 0.0, R50, (4,), THR4 * seconds, "u", checkpoint_on_notice=on_notice)


def backend_at(tmp_path: Path, *jobs: JobSpec, t: float = 120.0) -> SimBackend:
    """Both jobs probed by ``t`` (one profiler GPU: 0..60, 60..120)."""
    b = SimBackend(cluster(tmp_path), jobs, SimSettings(costs=COSTS))
    b.wait_until(t)
    return b


# ----- the fast path (ground truth: the job's own counter, JobProgress.done; the engine's estimate from its
# records, SimBackend.processed_samples, is tested in test_sim_backend.py) ------------------------------
def test_a_job_that_ignores_the_notice_loses_exactly_its_work_since_its_last_checkpoint_and_holds_its_gpus(tmp_path):
    b = backend_at(tmp_path, job("a", 5000.0, on_notice=False), job("b", 100.0))
    b.apply(Plan({"a": {"v-00": 4}}), fragment=False)  # starts at 120, progress from 130, checkpoints at 230, 330, ...
    b.wait_until(400.0)
    a = b.active["a"]
    assert a.progress.done == pytest.approx(THR4 * 270.0)
    assert a.progress.saved == pytest.approx(THR4 * 200.0)  # the checkpoint at 330
    b.apply(Plan({"a": None, "b": {"v-00": 4}}), fragment=False)  # preempts a; b is placed on a's GPUs
    b.wait_until(450.0)
    # a ignores the notice: it runs on (its checkpoint at 430 is taken) and keeps its GPUs; b waits, pending
    assert not b.active["b"].running and b.cluster_view(fragment=True).free_gpus == 4
    assert a.progress.done == pytest.approx(THR4 * 320.0)
    assert a.progress.saved == pytest.approx(THR4 * 300.0)
    b.wait_until(520.0)  # 400 + 120 s of grace: killed; the 90 s since its checkpoint at 430 are lost
    assert a.progress.done == pytest.approx(THR4 * 300.0)
    assert a.progress.lost == pytest.approx(THR4 * 90.0)
    assert b.active["b"].running and b.active["b"].ledger.first_start == pytest.approx(520.0)
    series = {t: used for t, used, _n in b.series}
    assert series[400.0] == 4 and series[520.0] == 4  # a's GPUs through the grace, then b's
    assert a.ledger.placements[-1]["end"] == pytest.approx(400.0)  # pending (requeued) from the notice on


def test_a_job_that_checkpoints_on_notice_loses_nothing_and_its_restart_is_not_progress(tmp_path):
    b = backend_at(tmp_path, job("a", 5000.0, on_notice=True), job("b", 100.0))
    b.apply(Plan({"a": {"v-00": 4}}), fragment=False)
    b.wait_until(400.0)
    b.apply(Plan({"a": {"v-01": 4}, "b": {"v-00": 4}}), fragment=False)  # a moves; b takes its GPUs
    a = b.active["a"]
    assert a.progress.done == pytest.approx(THR4 * 270.0)
    b.wait_until(405.0)  # the checkpoint write (5 s) holds a's old GPUs; then both start
    assert a.progress.saved == pytest.approx(THR4 * 270.0) and a.progress.lost == 0.0
    assert a.running and b.active["b"].running
    b.wait_until(405.0 + 15.0)  # 10 s process start + 5 s load: no progress
    assert a.progress.done == pytest.approx(THR4 * 270.0)
    b.wait_until(405.0 + 15.0 + 100.0)
    assert a.progress.done == pytest.approx(THR4 * 370.0)


def test_a_first_start_costs_the_process_start(tmp_path):
    b = backend_at(tmp_path, job("a", 1000.0))
    b.apply(Plan({"a": {"v-00": 4}}), fragment=False)
    b.wait_until(130.0)
    assert b.active["a"].progress.done == 0.0
    b.wait_until(5000.0)
    (rec,) = b.job_records()
    assert rec.start == pytest.approx(120.0) and rec.end == pytest.approx(120.0 + 10.0 + 1000.0)


def test_a_first_start_may_cost_its_own_seconds_and_restarts_still_pay_the_process_start(tmp_path):
    """whatif's replay: a recorded run time already holds the job's start (first_start = 0); a restart
    after a notice pays the process start and the checkpoint load as before."""
    costs = replace(COSTS, first_start=0.0)
    assert costs.start_cost(R50, from_checkpoint=False, first=True) == 0.0
    assert costs.start_cost(R50, from_checkpoint=False) == 10.0
    assert costs.start_cost(R50, from_checkpoint=True, first=True) == 15.0
    assert COSTS.start_cost(R50, from_checkpoint=False, first=True) == 10.0  # None: as every start
    b = SimBackend(cluster(tmp_path), (job("a", 1000.0),), SimSettings(costs=costs))
    b.wait_until(120.0)
    b.apply(Plan({"a": {"v-00": 4}}), fragment=False)
    b.wait_until(5000.0)
    (rec,) = b.job_records()
    assert rec.start == pytest.approx(120.0) and rec.end == pytest.approx(120.0 + 1000.0)
    with pytest.raises(ValueError, match="first_start"):
        CostModel(first_start=-1.0)


def test_a_job_that_ignores_the_notice_and_runs_out_of_samples_in_the_grace_completes(tmp_path):
    b = backend_at(tmp_path, job("a", 300.0, on_notice=False))
    b.apply(Plan({"a": {"v-00": 4}}), fragment=False)
    b.wait_until(400.0)  # 270 of its 300 s of work done
    b.apply(Plan({"a": None}), fragment=False)
    b.wait_until(1000.0)
    (rec,) = b.job_records()
    assert rec.state == "COMPLETED" and rec.end == pytest.approx(430.0)


# ----- the cost model and the workload ----------------------------------------------------------------
def test_default_checkpoint_seconds_are_gavels_table_4_per_family():
    assert CHECKPOINT_SECONDS["LM"] == pytest.approx(2.91 / 100 * 360 / 2, abs=0.05)
    assert CHECKPOINT_SECONDS["A3C"] == pytest.approx(0.22 / 100 * 360 / 2, abs=0.05)
    costs = CostModel()
    assert costs.start_cost("LM (batch size 20)", from_checkpoint=False) == costs.process_start
    assert costs.start_cost("LM (batch size 20)", from_checkpoint=True) == costs.process_start + CHECKPOINT_SECONDS["LM"]
    assert costs.move_cost(job("a", 1.0)) == pytest.approx(CHECKPOINT_SECONDS["ResNet-50"] * 2 + costs.process_start)
    assert parse_checkpoint_seconds("3") == dict.fromkeys(CHECKPOINT_SECONDS, 3.0)
    assert parse_checkpoint_seconds("LM=8, ResNet-50=4") == {"LM": 8.0, "ResNet-50": 4.0}
    for bad in ("", "LM", "Bogus=1", "LM=-1", "LM=nan", "x"):
        with pytest.raises(ValueError):
            parse_checkpoint_seconds(bad)
    with pytest.raises(ValueError):
        CostModel(notice_fraction=1.5)


def test_the_share_that_checkpoints_on_notice_is_drawn_per_job_and_a_job_may_say_itself():
    costs = CostModel(notice_fraction=0.3)
    jobs = [JobSpec(f"j{i}", 0.0, R50, (1,), 1.0) for i in range(2000)]
    share = sum(costs.checkpoints_on_notice(j) for j in jobs) / len(jobs)
    assert 0.25 < share < 0.35
    assert [costs.checkpoints_on_notice(j) for j in jobs] == [costs.checkpoints_on_notice(j) for j in jobs]
    assert costs.checkpoints_on_notice(replace(jobs[0], checkpoint_on_notice=True))
    assert not CostModel().checkpoints_on_notice(replace(jobs[0], checkpoint_on_notice=False))


def test_a_workload_file_sets_a_jobs_checkpoint_interval_and_whether_it_checkpoints_on_notice(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("arrival,model,requirements,samples,checkpoint_interval,checkpoint_on_notice\n"
                    "0,ResNet-50,4,100,600,false\n5,LM,1,100,,\n")
    a, b = load_workload(str(path), 0)
    assert (a.checkpoint_interval, a.checkpoint_on_notice) == (600.0, False)
    assert (b.checkpoint_interval, b.checkpoint_on_notice) == (None, None)
    assert CostModel().interval(a) == 600.0 and CostModel().interval(b) == CostModel().checkpoint_interval
    path.write_text("arrival,model,requirements,samples,checkpoint_on_notice\n0,LM,1,100,maybe\n")
    with pytest.raises(Exception, match="checkpoint_on_notice"):
        load_workload(str(path), 0)


def test_the_cost_flags_reach_the_simulation(tmp_path, capsys):
    path = tmp_path / "w.csv"
    path.write_text("arrival,model,requirements,duration\n0,ResNet-50,4,1000\n")
    out = tmp_path / "out"
    cluster(tmp_path)
    assert main(["simulate", "--cluster", str(tmp_path / "two.toml"),
                 "--workload", str(path), "--policies", "fifo-greedy", "--out", str(out), "--no-progress",
                 "--process-start-seconds", "77", "--checkpoint-seconds", "ResNet-50=9", "--grace-seconds", "30",
                 "--checkpoint-interval", "600", "--checkpoint-on-notice", "0.5"]) == 0
    text = (out / "results.md").read_text()
    assert "process start 77 s" in text and "ResNet-50 9" in text and "grace 30 s" in text and "600 s" in text
    assert "50% of jobs" in text
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--checkpoint-seconds", "ResNet-50=-1", "--out", str(out)])
    assert exc.value.code == 2 and "--checkpoint-seconds" in capsys.readouterr().err


# ----- both paths, one event sequence ------------------------------------------------------------------
def _place(ctl: SimSlurmctld, job_id: str, node: str) -> None:
    """What the enactor does to start a job on 4 GPUs of ``node``: its reservation, its placement, release."""
    name = f"hops-j{job_id}"
    if any(r.name == name for r in ctl.reservations()):
        ctl.delete_reservation(name)
    ctl.create_reservation(name, [node], ["u"], [])
    ctl.update_job(job_id, {"Reservation": name, "NodeList": node, "NumNodes": "1", "TresPerNode": "gres/gpu:4"})
    ctl.release(job_id)
    ctl.jobs()  # slurmctld schedules at the next read


@pytest.mark.parametrize("signal_first", [True, False])
def test_both_paths_charge_the_same_for_the_same_event_sequence(tmp_path, signal_first):
    """a ignores the notice, b checkpoints on it. Start both at 120; at 400 swap them (both preempted, each
    placed on the other's GPUs): each waits for the other's notice to end (a's grace) and its own; then both
    run to the end. The simulated slurmctld gets the engine's calls (a signal then requeuehold, or a
    requeuehold alone: the notice comes with it), the fast path the same plans."""
    jobs = (job("a", 2000.0, on_notice=False), job("b", 1500.0, on_notice=True))
    fast = backend_at(tmp_path, *jobs)
    fast.apply(Plan({"a": {"v-00": 4}, "b": {"v-01": 4}}), fragment=False)
    fast.wait_until(400.0)
    fast.apply(Plan({"a": {"v-01": 4}, "b": {"v-00": 4}}), fragment=False)
    fast.wait_until(402.0)
    assert fast.cluster_view(fragment=True).free_gpus == 0
    fast.wait_until(450.0)
    assert sum(fast._held().values()) == 4
    fast.wait_until(600.0)
    lost_fast = {j: fast.active[j].progress.lost for j in "ab"}
    fast.wait_until(10_000.0)
    fast_records = {r.job_id: r for r in fast.job_records()}

    ctl = SimSlurmctld(cluster(tmp_path), jobs, tmp_path / "env", SimCtlSettings(costs=COSTS, min_job_age=1e9))
    ctl.advance(120.0)
    ids = {ctl.workload_id(j): j for j in ctl.runs}
    _place(ctl, ids["a"], "v-00")
    _place(ctl, ids["b"], "v-01")
    ctl.advance(400.0)
    for w in "ab":
        if signal_first:
            ctl.signal(ids[w])
        ctl.requeue_hold(ids[w])
    _place(ctl, ids["a"], "v-01")
    _place(ctl, ids["b"], "v-00")
    ctl.advance(402.0)
    assert sum(len(n.gpus_used) for n in ctl.nodes()) == 8  # both notices hold their GPUs
    ctl.advance(450.0)
    assert sum(len(n.gpus_used) for n in ctl.nodes()) == 4  # b's write is done, a's grace is not
    assert all(ctl.runs[ids[w]].job.state == "PENDING" for w in "ab")
    ctl.advance(600.0)
    lost_ctl = {w: ctl.runs[ids[w]].progress.lost for w in "ab"}
    ctl.advance(10_000.0)

    assert lost_ctl == pytest.approx(lost_fast)
    assert lost_fast["b"] == 0.0 and lost_fast["a"] == pytest.approx(THR4 * 90.0)  # 430..520 since its checkpoint
    for w in "ab":
        assert ctl.runs[ids[w]].job.state == "COMPLETED"
        assert ctl.runs[ids[w]].job.start_time - EPOCH == pytest.approx(520.0)  # both wait for a's grace
        assert ctl.runs[ids[w]].job.end_time - EPOCH == pytest.approx(fast_records[w].end)
    # a: 300 s done by its checkpoint at 430; restarts at 520 (+15 s), 1700 s left
    assert fast_records["a"].end == pytest.approx(520.0 + 15.0 + 1700.0)
    # b: 270 s done, saved on notice; restarts at 520 (+15 s), 1230 s left
    assert fast_records["b"].end == pytest.approx(520.0 + 15.0 + 1230.0)


def test_a_requeue_without_notice_kills_at_once_and_loses_the_work_since_the_last_checkpoint(tmp_path):
    jobs = (job("a", 2000.0, on_notice=True),)
    ctl = SimSlurmctld(cluster(tmp_path), jobs, tmp_path / "env", SimCtlSettings(costs=COSTS, notice_on_requeue=False))
    ctl.advance(120.0)
    (jid,) = ctl.runs
    _place(ctl, jid, "v-00")
    ctl.advance(400.0)
    ctl.requeue_hold(jid)
    assert sum(len(n.gpus_used) for n in ctl.nodes()) == 0
    p = ctl.runs[jid].progress
    assert p.done == p.saved == pytest.approx(THR4 * 200.0) and p.lost == pytest.approx(THR4 * 70.0)


def test_job_progress_is_one_model():
    """The unit both paths call: periodic checkpoints by run time, a notice, a stop."""
    p = JobProgress(total=1000.0, interval=50.0)
    p.start(0.0, 1.0, 10.0)
    p.advance(5.0)
    assert p.done == 0.0
    p.advance(75.0)
    assert (p.done, p.saved) == (65.0, 50.0)
    notice = p.give_notice(75.0, JobSpec("x", 0.0, R50, (1,), 1000.0, checkpoint_on_notice=False), COSTS)
    assert notice.ends_at == 195.0 and not notice.checkpoints
    assert p.requeue(75.0) == 195.0
    assert p.stop(195.0) == pytest.approx(185.0 - 150.0)  # its checkpoint at 160 held 150; killed at 195 with 185
    assert p.done == p.saved == 150.0 and not p.running


def test_the_simulated_slurmctld_answers_a_notice_with_a_mark_only_when_the_job_checkpoints_on_it(tmp_path):
    """The engine's protocol (hops_slurm.engine.checkpoints) on the cost model: a job with a metrics file says
    it listens when it starts; signalled, one that checkpoints on notice writes a "saved" mark (notice=True,
    its count), one that ignores the notice writes none; a job not running cannot be signalled."""
    from profiler.records import CheckpointMark

    from hops_slurm.slurm.api import SlurmCommandError
    from hops_slurm.slurm.enact import write_job_env

    jobs = (job("a", 2000.0, on_notice=True), job("b", 2000.0, on_notice=False))
    ctl = SimSlurmctld(cluster(tmp_path), jobs, tmp_path / "env", SimCtlSettings(costs=COSTS))
    ctl.advance(120.0)
    ids = {ctl.workload_id(j): j for j in ctl.runs}
    for w, node in (("a", "v-00"), ("b", "v-01")):
        write_job_env(tmp_path / "env", ids[w], {"HOPS_METRICS_FILE": str(tmp_path / f"{w}.jsonl"),
                                                  "HOPS_JOB_SIGNATURE": f"sig-{w}", "HOPS_PREEMPT_SIGNAL": "USR1"})
        _place(ctl, ids[w], node)
    ctl.advance(400.0)
    for w in "ab":
        ctl.signal_job(ids[w], "USR1")

    def marks(w: str) -> list[CheckpointMark]:
        lines = (tmp_path / f"{w}.jsonl").read_text().splitlines()
        return [CheckpointMark.model_validate_json(x) for x in lines if '"event"' in x]

    a, b = marks("a"), marks("b")
    assert [m.event for m in a] == ["listening", "saved"] and a[1].notice
    assert a[1].samples == int(ctl.runs[ids["a"]].progress.done) and a[1].samples == pytest.approx(THR4 * 270.0, abs=1)
    assert [m.event for m in b] == ["listening"]
    ctl.requeue_hold(ids["a"])
    with pytest.raises(SlurmCommandError):
        ctl.signal_job(ids["a"], "USR1")
