"""Workload generators are seeded and follow their definitions; trace files are validated."""

import json
from collections import Counter

import pytest

from hops_slurm.errors import HopsError
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.workload import load_workload


def test_paper_workload_for_64_gpus():
    jobs = load_workload("paper", 3, cluster_gpus=64)
    assert len(jobs) == 25
    assert jobs == load_workload("paper", 3, cluster_gpus=64)
    assert jobs != load_workload("paper", 4, cluster_gpus=64)
    assert jobs[0].arrival == 0.0
    assert all(a.arrival <= b.arrival for a, b in zip(jobs, jobs[1:]))
    for job in jobs:
        assert 1 <= len(job.requirements) <= 8
        assert 1 <= job.requirements[0] and job.requirements[-1] <= 16
        assert job.category in {"S", "M", "L", "XL"}
        assert job.total_samples > 0


def test_paper_workload_rate_and_scale():
    jobs = load_workload("paper", 0, cluster_gpus=512)
    assert len(jobs) == 500
    span_h = jobs[-1].arrival / 3600
    assert 4.0 < span_h < 6.0  # 500 jobs at 100/h: ~5 h
    fast = load_workload("sweep:rate=1200,jobs=200", 0, cluster_gpus=512)
    assert fast[-1].arrival / 3600 < 0.25  # 200 jobs at 1200/h: ~10 min


def test_gavel_generator_scale_factor_mix():
    jobs = load_workload("gavel:jobs=2000,rate=60", 1)
    counts = Counter(j.requirements for j in jobs)
    assert set(counts) == {(1,), (2,), (4,), (8,)}
    assert counts[(1,)] / 2000 == pytest.approx(0.70, abs=0.04)
    assert counts[(2,)] / 2000 == pytest.approx(0.10, abs=0.03)
    assert counts[(4,)] / 2000 == pytest.approx(0.15, abs=0.03)
    assert counts[(8,)] / 2000 == pytest.approx(0.05, abs=0.02)
    truth = GroundTruth()
    durations = [j.total_samples / truth.samples_per_second(j.model, "v100", j.requirements[0], False) for j in jobs]
    assert min(durations) >= 60 * 10**1.5 * 0.999 and max(durations) <= 60 * 10**4 * 1.001


def test_philly_trace_reads_gavel_format():
    jobs = load_workload("philly:trace=0e4a51,jobs=20", 0)
    assert len(jobs) == 20
    assert jobs[0].model == "Transformer (batch size 128)" and jobs[0].requirements == (1,)
    assert jobs[0].total_samples == pytest.approx(95121 * 128)  # first line: 95121 steps, batch 128
    assert jobs[1].arrival == 6.0
    with pytest.raises(HopsError, match="known"):
        load_workload("philly:trace=nope", 0)


def test_trace_files_csv_and_jsonl(tmp_path):
    csv = tmp_path / "w.csv"
    csv.write_text("arrival,model,requirements,samples,user,time_limit\n0,ResNet-50,1 2 4,1000,alice,3600\n"
                   "30,LM (batch size 20),2,500,bob,\n")
    jobs = load_workload(str(csv), 0)
    assert [j.requirements for j in jobs] == [(1, 2, 4), (2,)]
    assert [j.time_limit for j in jobs] == [3600.0, None]
    assert jobs[0].model == "ResNet-50 (batch size 64)" and jobs[1].user == "bob"
    jl = tmp_path / "w.jsonl"
    jl.write_text(json.dumps({"arrival": 5, "model": "A3C", "requirements": [1], "duration": 100, "job_id": "x"}) + "\n")
    (job,) = load_workload(str(jl), 0)
    truth = GroundTruth()
    assert job.job_id == "x" and job.total_samples == pytest.approx(100 * truth.samples_per_second("A3C", "v100", 1, False))


def test_trace_file_errors_name_every_bad_line(tmp_path):
    csv = tmp_path / "bad.csv"
    csv.write_text(
        "arrival,model,requirements,samples,time_limit\n"
        "-1,ResNet-50,1,10,\n"  # line 2: negative arrival
        "0,VGG,1,10,\n"  # line 3: unknown model
        "0,ResNet-50,0,10,\n"  # line 4: bad requirement
        "0,ResNet-50,1,10,60\n"  # fine
        "0,ResNet-50,1,10,-5\n"  # line 6: a negative time limit
    )
    with pytest.raises(HopsError) as err:
        load_workload(str(csv), 0)
    text = str(err.value)
    assert "bad.csv:2: arrival" in text and "bad.csv:3: unknown model" in text and "bad.csv:4: requirements" in text
    assert "bad.csv:5" not in text and "bad.csv:6: time_limit must be seconds" in text
    with pytest.raises(HopsError, match="unknown workload"):
        load_workload("nonsense", 0)
    with pytest.raises(HopsError, match="unknown parameter"):
        load_workload("paper:jobz=3", 0)
