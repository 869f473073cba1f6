"""The gavel-explore bench's check over a run's records: a job held on a slower type while a faster one
it could use stayed idle for a whole round (issue 22)."""

from __future__ import annotations

from hops_slurm.tools.bench import discover
from hops_slurm.tools.bench import gavel_explore as bench
from hops_slurm.records import JobRecord, PlacementRecord
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.groundtruth import GroundTruth

LM = "LM (batch size 5)"  # issue 22's j0031: far faster on two V100s than on two K80s
HOUR = 3600.0


def job(job_id: str, model: str, start: float, end: float, config: dict[str, int], gpu_type: str) -> JobRecord:
    return JobRecord(job_id=job_id, name=model, submit=0.0, start=start, end=end, state="COMPLETED",
                     requirements=[sum(config.values())], ideal_time=HOUR,
                     placements=[PlacementRecord(start=start, end=end, config=config, gpu_type=gpu_type)])


def test_a_job_on_k80s_while_v100s_stay_idle_is_counted_for_every_whole_round():
    cluster, truth = load_cluster("paper-64"), GroundTruth()
    assert truth.samples_per_second(LM, "v100", 2, False) > bench.FASTER * truth.samples_per_second(LM, "k80", 2, False)
    held = bench.idle_faster_rounds([job("a", LM, 0.0, 2 * HOUR, {"k80-sugon-00": 2}, "k80")], cluster, truth)
    assert held == {"a": int(2 * HOUR // bench.ROUND_SECONDS)}
    check = bench.check_run([job("a", LM, 0.0, 2 * HOUR, {"k80-sugon-00": 2}, "k80")], cluster, truth)
    assert check["over"] == ["a"] and check["held_over"] == ["a"]  # 2 h in the cluster, ideal 1 h


def test_no_count_when_the_faster_gpus_are_busy_or_the_job_is_already_on_the_fastest():
    cluster, truth = load_cluster("paper-64"), GroundTruth()
    lm = job("a", LM, 0.0, 2 * HOUR, {"k80-sugon-00": 2}, "k80")
    v100s = [n for n, k in cluster.nodes() if k.gpu_type == "v100"]
    p100s = [n for n, k in cluster.nodes() if k.gpu_type == "p100"]
    # every V100 and P100 taken by other jobs (on the fastest type, nothing faster for them) the whole time
    others = [job(f"v{i}", LM, 0.0, 2 * HOUR, {n: 4}, "v100") for i, n in enumerate(v100s)]
    others += [job(f"p{i}", "ResNet-18 (batch size 32)", 0.0, 2 * HOUR, {n: 8}, "p100") for i, n in enumerate(p100s)]
    held = bench.idle_faster_rounds([lm, *others], cluster, truth)
    assert "a" not in held and not any(k.startswith("v") for k in held)
    # the V100s free only for the first half hour: at most that many rounds
    short = [job(f"v{i}", LM, 0.5 * HOUR, 2 * HOUR, {n: 4}, "v100") for i, n in enumerate(v100s)]
    short += others[len(v100s):]
    held = bench.idle_faster_rounds([lm, *short], cluster, truth)
    assert 0 < held.get("a", 0) <= int(0.5 * HOUR // bench.ROUND_SECONDS)


def test_the_bench_is_discovered_and_run_by_name_only():
    assert discover()["gavel-explore"] is bench and bench.IN_ALL is False
