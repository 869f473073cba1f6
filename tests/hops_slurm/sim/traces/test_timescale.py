"""The time-scaled replay (``,start=S,end=E,speedup=K`` on any workload spec), on small files written here."""

import json
from pathlib import Path

import pytest

from hops_slurm.cli import main
from hops_slurm.errors import HopsError
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.traces.alibaba import import_nodes
from hops_slurm.sim.traces.timescale import Replay, split_replay
from hops_slurm.sim.traces.specs import load_any_workload, trace_workload
from hops_slurm.sim.workload import JobSpec

POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"


def pods_file(tmp_path: Path) -> Path:
    """Four one-GPU tasks a day apart (the first at t=0 of the trace), each running one hour."""
    path = tmp_path / "pods.csv"
    path.write_text(POD_HEADER + "".join(f"p{i},1000,1024,1,1000,,LS,Succeeded,{t},{t + 3600},{t}\n"
                                         for i, t in enumerate((0, 86400, 2 * 86400, 3 * 86400))))
    return path


def nodes_file(tmp_path: Path) -> Path:
    path = tmp_path / "nodes.csv"
    path.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\n")
    return path


def test_replay_keys_come_off_any_spec_and_leave_its_own_parameters():
    assert split_replay("paper:jobs=5,speedup=2") == ("paper:jobs=5", Replay(2.0))
    assert split_replay("paper:speedup=2,jobs=5,rate=3") == ("paper:jobs=5,rate=3", Replay(2.0))
    assert split_replay("sia:/a/b,speedup=3,start=2d") == ("sia:/a/b", Replay(3.0, 2 * 86400.0))
    assert split_replay("trace.csv,start=90m,end=6h") == ("trace.csv", Replay(1.0, 5400.0, 21600.0))
    assert split_replay("alibaba:/x/pods.csv,jobs=5") == ("alibaba:/x/pods.csv,jobs=5", None)
    assert split_replay("paper") == ("paper", None)


@pytest.mark.parametrize(("spec", "message"), [
    ("paper:speedup=0", "speedup must be a number in (0, 1e+06]"),
    ("paper:speedup=inf", "speedup must be a number"),
    ("paper:speedup=fast", "speedup must be a number"),
    ("paper:start=-5", "start must be seconds or a number with s, m, h or d"),
    ("paper:start=2w", "start must be seconds"),
    ("paper:start=2d,end=1d", "end (86400 s) must be after start (172800 s)"),
    ("paper:start=99999999999d", "start must be at most ten years"),
    ("paper:speedup=2,speedup=3", "speedup given twice"),
    (":speedup=2", "name a workload before the replay keys"),
])
def test_bad_replay_keys_are_one_line_errors(spec, message):
    with pytest.raises(HopsError) as err:
        split_replay(spec)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_window_is_kept_and_its_gaps_compressed_work_unchanged():
    jobs = tuple(JobSpec(f"j{i}", float(t), "ResNet-50", (g,), 100.0 * (i + 1), classes=("A",) if i == 2 else None,
                         time_limit=7200.0) for i, (t, g) in enumerate(((0, 1), (100, 2), (300, 4), (1000, 1))))
    kept, note = Replay(speedup=4.0, start=100.0, end=1000.0).apply(jobs)
    assert [j.job_id for j in kept] == ["j1", "j2"]  # [start, end): j0 before, j3 at the end left out
    assert [j.arrival for j in kept] == [0.0, 50.0]  # (t - start) / K
    assert [(j.requirements, j.total_samples, j.classes, j.time_limit, j.model) for j in kept] == \
        [((2,), 200.0, None, 7200.0, "ResNet-50"), ((4,), 300.0, ("A",), 7200.0, "ResNet-50")]
    assert note.startswith("time-scaled replay: 2 of 4 jobs kept (arrivals in [1.667 min, 16.67 min)), arriving 4x faster")
    with pytest.raises(HopsError, match="no job arrives in the window"):
        Replay(start=2000.0).apply(jobs)


def test_an_imported_trace_replays_faster_and_each_task_keeps_its_run_time(tmp_path):
    cluster, _ = import_nodes(nodes_file(tmp_path))
    plain, _ = trace_workload(f"alibaba:{pods_file(tmp_path)}", 0, cluster)
    fast, notes = trace_workload(f"alibaba:{pods_file(tmp_path)},start=1d,speedup=24", 0, cluster)
    assert [j.job_id for j in fast] == ["p1", "p2", "p3"]
    assert [j.arrival for j in fast] == [0.0, 3600.0, 7200.0]  # a day apart -> an hour apart
    assert [j.total_samples for j in fast] == [j.total_samples for j in plain[1:]]
    assert "time-scaled replay: 3 of 4 jobs kept (arrivals in [1 d, the end)), arriving 24x faster" in notes.notes[-1]
    generated = load_any_workload("gavel:jobs=6,speedup=2", 3, load_cluster("paper-64"))
    original = load_any_workload("gavel:jobs=6", 3, load_cluster("paper-64"))
    assert [j.arrival for j in generated] == [j.arrival / 2 for j in original]


def test_the_simulator_runs_the_replay_and_says_what_it_changed(tmp_path, capsys):
    """Replayed 24x faster from day 1, the three one-hour tasks arrive an hour apart and each runs its hour."""
    out = tmp_path / "out"
    assert main(["simulate", "--cluster", f"alibaba:{nodes_file(tmp_path)}", "--workload",
                 f"alibaba:{pods_file(tmp_path)},start=1d,speedup=24", "--policies", "slurm-backfill", "--seeds", "0",
                 "--out", str(out), "--no-progress", "--plan-on-events"]) == 0
    records = [json.loads(line) for line in (out / "slurm-backfill" / "seed0" / "jobs.jsonl").read_text().splitlines()]
    assert sorted((r["job_id"], r["submit"]) for r in records) == [("p1", 0.0), ("p2", 3600.0), ("p3", 7200.0)]
    assert all(r["state"] == "COMPLETED" and r["end"] - r["start"] >= 3600 for r in records)
    assert "hops-slurm: note: time-scaled replay: 3 of 4 jobs kept" in capsys.readouterr().err
    assert "time-scaled replay: 3 of 4 jobs kept" in (out / "results.md").read_text()
