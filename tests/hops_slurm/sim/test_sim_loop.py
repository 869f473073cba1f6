"""The round loop and the comparison: fragment plans at the round plan's instant, Avg.frag counted
after them, reproducible records, silent solvers, and a failed policy that loses nothing else."""

from __future__ import annotations

import json

import pytest

from hops_slurm.sim import runner
from hops_slurm.sim.sim_backend import SimBackend, SimSettings
from hops_slurm.sim.costs import CostModel
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.core.rounds import LoopSettings, run_rounds
from hops_slurm.report.metrics import summarize
from hops_slurm.sim.comparison import markdown_table, write_summary
from hops_slurm.sim.workload import JobSpec, load_workload
from planner.baselines import FifoGreedy
from planner.policies import make_policy, policy_names
from planner.views import Plan, Policy

R50 = "ResNet-50 (batch size 64)"
THR4 = GroundTruth().samples_per_second(R50, "v100", 4, False)


def tiny(tmp_path, nodes: int = 2):
    path = tmp_path / "tiny.toml"
    path.write_text('name = "tiny"\n[profiler]\ngpus_per_type = 2\nprobe_seconds = 60.0\n'
                    f'[[server_kind]]\nname = "v"\ngpu_type = "v100"\ngpus = 4\ncount = {nodes}\nspeed = 1.0\n')
    return load_cluster(path)


class FragmentsOnly(FifoGreedy):
    """Round plans keep running jobs and start nothing; fragment plans place pending jobs (FIFO)."""

    name = "fragments-only"

    def plan(self, cluster, jobs, now, *, fragment=False):
        if fragment:
            return super().plan(cluster, jobs, now, fragment=True)
        return Plan({j.job_id: j.current for j in jobs})


@pytest.mark.parametrize(("at_once", "start", "frag"), [(True, 0.0, 0.0), (False, 30.0, 8.0)])
def test_fragment_plans_follow_the_round_plan_at_the_same_instant(tmp_path, at_once: bool, start: float,
                                                                  frag: float) -> None:
    jobs = (JobSpec("a", 0.0, R50, (4,), THR4 * 1000.0), JobSpec("b", 0.0, R50, (4,), THR4 * 1000.0))
    backend = SimBackend(tiny(tmp_path), jobs)
    rounds = run_rounds(backend, FragmentsOnly(), LoopSettings(360.0, 30.0, fragment_at_once=at_once))
    assert [r.start for r in backend.job_records()] == [pytest.approx(start)] * 2
    first = [r for r in rounds if r.time == pytest.approx(0.0)]  # both seen on the idle cluster: in place
    assert [r.plan_index for r in first] == ([0, 1] if at_once else [0])
    # Avg.frag after the plans of the round's instant: nothing idles once the fragment plan ran
    # (at ticks only, the round plan leaves all 8 GPUs idle while both jobs wait)
    first_round = summarize(backend.job_records(), rounds[: len(first)])
    assert first_round.avg_frag == pytest.approx(frag)


def test_no_more_fragment_plans_than_placements_at_one_instant(tmp_path) -> None:
    jobs = tuple(JobSpec(f"j{k}", 0.0, R50, (4,), THR4 * 1000.0) for k in range(3))
    backend = SimBackend(tiny(tmp_path), jobs)
    rounds = run_rounds(backend, FragmentsOnly(), LoopSettings(360.0, 30.0), max_rounds=1)
    at_0 = [r.plan_index for r in rounds if r.time == pytest.approx(0.0)]
    assert at_0 == [0, 1]  # the fragment plan filled both nodes: no idle GPU, no further plan


def test_plan_on_events_starts_a_job_at_the_end_that_frees_its_gpus(tmp_path) -> None:
    """Slurm's scheduler runs at each job end: with ``plan_on_events`` the queued job starts when the running
    one ends (t = 100), not at the next refresh tick (t = 120)."""
    jobs = (JobSpec("a", 0.0, R50, (4,), THR4 * 100.0), JobSpec("b", 0.0, R50, (4,), THR4 * 100.0))
    ends = {}
    for on_events in (False, True):
        path = tmp_path / "one.toml"
        path.write_text('name = "one"\n[profiler]\nprobe_seconds = 0.0\n'
                        '[[server_kind]]\nname = "v"\ngpu_type = "v100"\ngpus = 4\ncount = 1\n')
        backend = SimBackend(load_cluster(path), jobs, SimSettings(costs=CostModel.free()))
        run_rounds(backend, FragmentsOnly(), LoopSettings(360.0, 30.0, plan_on_events=on_events))
        ends[on_events] = {r.job_id: (r.start, r.end) for r in backend.job_records()}
    assert ends[True] == {"a": (pytest.approx(0.0), pytest.approx(100.0)), "b": (pytest.approx(100.0), pytest.approx(200.0))}
    assert ends[False]["b"] == (pytest.approx(120.0), pytest.approx(220.0))


def records(result: runner.RunResult) -> tuple[list[dict], list[dict]]:
    jobs = [r.model_dump() for r in result.jobs]
    rounds = [r.model_dump(exclude={"solve_seconds"}) for r in result.rounds]  # measured wall time
    return jobs, rounds


def test_hops_runs_are_reproducible(tmp_path) -> None:
    cluster = load_cluster("paper-64")
    jobs = load_workload("paper:jobs=20", 3, cluster_gpus=cluster.total_gpus)
    one = runner.simulate(cluster, jobs, "hops", 3)
    two = runner.simulate(cluster, jobs, "hops", 3)
    assert records(one) == records(two)
    assert one.metrics.limit_hits == 0 and all(r.state == "COMPLETED" for r in one.jobs)
    assert any(r.plan_index > 0 for r in one.rounds)


def test_no_policy_writes_solver_logs_to_stdout(tmp_path, capfd) -> None:
    cluster = load_cluster("paper-64")
    names = policy_names()
    assert {"hops", "sia", "sia-lr", "gavel", "gavel-lr", "themis"} <= set(names)
    runner.compare(cluster, "paper:jobs=8", names, [0], None, progress=False)
    assert capfd.readouterr().out == ""


class Unenactable(Policy):
    name = "unenactable"

    def plan(self, cluster, jobs, now, *, fragment=False):
        return Plan({j.job_id: {cluster.nodes[0].name: 99} for j in jobs})


def test_one_failed_policy_does_not_lose_the_comparison(tmp_path, monkeypatch) -> None:
    real = make_policy
    monkeypatch.setattr(runner, "make_policy", lambda name: Unenactable() if name == "unenactable" else real(name))
    out = tmp_path / "out"
    results = runner.compare(load_cluster("paper-64"), "paper:jobs=6", ["fifo-greedy", "unenactable"], [0, 1], out,
                             progress=False)
    assert [(r.policy, r.seed) for r in results] == [("fifo-greedy", 0), ("fifo-greedy", 1)]
    assert [(f.policy, f.seed) for f in results.failures] == [("unenactable", 0), ("unenactable", 1)]
    assert "99 GPUs" in (out / "unenactable" / "seed0" / "error.txt").read_text()
    assert (out / "fifo-greedy" / "seed1" / "jobs.jsonl").is_file()
    table = markdown_table(results)
    assert "| fifo-greedy |" in table and "| unenactable (FAILED) |" in table and "FAILED: unenactable seed 0" in table
    js, _md = write_summary(results, out)
    assert [f["policy"] for f in json.loads(js.read_text())["failed"]] == ["unenactable", "unenactable"]


def test_a_policy_name_too_long_for_a_file_name_gets_a_short_folder_with_its_name_inside(tmp_path) -> None:
    """A policy with many settings after the colon is longer than a file name may be (255 bytes): its runs
    go to a shortened folder named with a digest, and ``policy.txt`` there says the whole name."""
    long = "hops:" + ",".join(f"swap_back={i}" for i in range(30))  # valid, later settings win; 400+ characters
    other = long.replace("swap_back=29", "swap_back=28")  # the same first 80 characters
    assert len(long.encode()) > 255
    out = tmp_path / "out"
    results = runner.compare(load_cluster("paper-64"), "paper:jobs=4", ["fifo-greedy", long, other], [0], out,
                             progress=False)
    assert not results.failures
    assert (out / "fifo-greedy" / "seed0" / "jobs.jsonl").is_file()  # a short name stays as it is
    folders = {runner.policy_folder(name) for name in (long, other)}
    assert len(folders) == 2 and all(len(f.encode()) <= runner.FOLDER_NAME_MAX for f in folders)
    for name in (long, other):
        top = out / runner.policy_folder(name)
        assert (top / "seed0" / "metrics.json").is_file()
        assert (top / "policy.txt").read_text() == name + "\n"
    assert runner.policy_folder("hops:a/b") != "hops:a/b" and "/" not in runner.policy_folder("hops:a/b")


def test_runs_in_several_processes_give_what_one_at_a_time_gives(tmp_path, monkeypatch) -> None:
    """``compare(workers=2)``: the same runs, the same results in the same order, failures kept too."""
    real = make_policy
    monkeypatch.setattr(runner, "make_policy", lambda name: Unenactable() if name == "unenactable" else real(name))
    cluster = load_cluster("paper-64")
    names = ["hops", "fifo-greedy", "unenactable"]
    one = runner.compare(cluster, "paper:jobs=6", names, [0, 1], None, progress=False)
    out = tmp_path / "out"
    two = runner.compare(cluster, "paper:jobs=6", names, [0, 1], out, progress=False, workers=2)
    assert [(r.policy, r.seed) for r in two] == [(r.policy, r.seed) for r in one]
    def outcome(r: runner.RunResult) -> tuple[object, ...]:  # the planner's wall-clock seconds differ, nothing else
        m = r.metrics
        return (m.makespan, m.avg_jct, m.avg_wait, m.max_lr, m.avg_frag, m.preemptions, m.jct, m.lr)

    assert [outcome(r) for r in two] == [outcome(r) for r in one]
    assert [[(j.job_id, j.end) for j in r.jobs] for r in two] == [[(j.job_id, j.end) for j in r.jobs] for r in one]
    assert [(f.policy, f.seed) for f in two.failures] == [("unenactable", 0), ("unenactable", 1)]
    assert (out / "hops" / "seed1" / "jobs.jsonl").is_file() and (out / "unenactable" / "seed0" / "error.txt").is_file()


def test_the_bench_s_worker_count_is_checked(monkeypatch) -> None:
    from hops_slurm.tools.bench.paper_tables import bench_workers
    from hops_slurm.errors import HopsError

    monkeypatch.setenv("HOPS_BENCH_WORKERS", "3")
    assert bench_workers() == 3
    for bad in ("0", "-1", "two", "65", "1e3"):
        monkeypatch.setenv("HOPS_BENCH_WORKERS", bad)
        with pytest.raises(HopsError, match="HOPS_BENCH_WORKERS: .* is not a whole number from 1 to 64"):
            bench_workers()


def test_every_preemption_of_a_run_is_counted_once_under_its_cause() -> None:
    """The round records name each enacted preemption (planner.changes), for Hops and a baseline alike."""
    from planner.changes import Change
    from hops_slurm.sim.traces.specs import load_any_workload

    cluster = load_cluster("paper-64")
    jobs = load_any_workload("paper:jobs=40", 0, cluster)
    for name in ("hops", "sia-lr"):
        r = runner.simulate(cluster, jobs, name, 0)
        causes = r.metrics.preemption_causes
        assert sum(j.preemptions for j in r.jobs) == sum(causes.values()) > 0, name
        assert set(causes) <= {c.value for c in Change} | {"other"}, causes
        assert sum(sum(x.preempted_by.values()) for x in r.rounds if x.plan_index > 0) == 0  # fragment plans preempt nobody
        # each job's preempted placements name the same causes, one each: what report --history shows
        kept: dict[str, int] = {}
        for j in r.jobs:
            for p in j.placements:
                assert bool(p.cause) == p.preempted, (j.job_id, p)
                if p.preempted:
                    kept[p.cause] = kept.get(p.cause, 0) + 1
        assert kept == causes, name
