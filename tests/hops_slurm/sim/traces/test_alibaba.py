"""Alibaba's GPU trace v2023 formats (pod list, node list), on small files written here in the same format."""

import json
from pathlib import Path

import pytest

from hops_slurm.cli import main
from hops_slurm.errors import HopsError
from hops_slurm.records import JobRecord
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.traces.alibaba import MODEL, TRUTH_TYPE, import_nodes, import_pods
from hops_slurm.sim.traces.specs import load_any_cluster, trace_workload

POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"


def nodes_file(tmp_path: Path) -> Path:
    path = tmp_path / "nodes.csv"
    path.write_text(NODE_HEADER + "n0,64000,262144,2,P100\nn1,64000,262144,2,P100\nn2,96000,786432,8,V100M32\n"
                    "n3,32000,262144,0,\nn4,96000,786432,8,V100M16\nn5,96000,786432,4,P100\n")
    return path


def pods_file(tmp_path: Path) -> Path:
    path = tmp_path / "pods.csv"
    path.write_text(POD_HEADER
                    + "p-cpu,4000,1024,0,0,,BE,Running,100,900,100\n"             # CPU only: left out
                    + "p-share,6000,12288,1,460,,LS,Running,1000,4600,1000\n"    # shares a GPU: one whole GPU
                    + "p-v100,16000,32768,1,1000,V100M16|V100M32,LS,Running,1200,8400,1300\n"
                    + "p-pend,16000,32768,1,1000,,LS,Pending,1500,,\n"           # never scheduled
                    + "p-zero,16000,32768,1,1000,,LS,Failed,1600,1700,1700\n"    # ran 0 s
                    + "p-multi,88000,327680,4,1000,P100,Burstable,Succeeded,2000,9200,2000\n")
    return path


def test_nodes_become_kinds_of_their_gpu_model(tmp_path):
    cluster, imported = import_nodes(nodes_file(tmp_path))
    kinds = {(k.features[0], k.gpus): k.count for k in cluster.server_kind}
    assert kinds == {("P100", 2): 2, ("P100", 4): 1, ("V100M16", 8): 1, ("V100M32", 8): 1}
    assert cluster.total_gpus == 2 + 2 + 8 + 8 + 4
    assert {k.gpu_type for k in cluster.server_kind} == {TRUTH_TYPE}
    assert "1 nodes without GPUs left out" in imported.notes


def test_tasks_become_rigid_jobs_that_run_their_recorded_time(tmp_path):
    jobs, imported = import_pods(pods_file(tmp_path))
    truth = GroundTruth()
    assert [j.job_id for j in jobs] == ["p-share", "p-v100", "p-multi"]
    assert [j.arrival for j in jobs] == [0.0, 200.0, 1000.0]  # from the first kept task's creation
    share, v100, multi = jobs
    assert share.requirements == (1,) and share.classes is None
    assert v100.classes == ("V100M16", "V100M32") and multi.classes == ("P100",) and multi.requirements == (4,)
    for job, run in ((share, 3600), (v100, 7100), (multi, 7200)):
        n = job.requirements[0]
        assert job.model == MODEL
        assert job.total_samples / truth.samples_per_second(MODEL, TRUTH_TYPE, n, False) == pytest.approx(run)
    text = "\n".join(imported.notes)
    assert "1 tasks share a GPU (gpu_milli < 1000): each given a whole GPU" in text
    assert "1 tasks left out: CPU-only" in text and "1 tasks left out: never scheduled" in text
    assert "1 tasks left out: run of 0 s" in text and "2 with a GPU-type constraint" in text
    assert [j.job_id for j in import_pods(pods_file(tmp_path), jobs=2)[0]] == ["p-share", "p-v100"]
    first = "\n".join(import_pods(pods_file(tmp_path), jobs=1)[1].notes)  # counts are of the kept tasks
    assert "0 with a GPU-type constraint" in first and "1 tasks share a GPU" in first


def test_a_constraint_no_node_meets_leaves_the_task_out(tmp_path):
    pods = pods_file(tmp_path)
    pods.write_text(pods.read_text() + "p-a100,1,1,1,1000,A100,LS,Running,3000,4000,3000\n")
    cluster, _ = load_any_cluster(f"alibaba:{nodes_file(tmp_path)}")
    jobs, imported = trace_workload(f"alibaba:{pods}", 0, cluster)
    assert "p-a100" not in {j.job_id for j in jobs}
    assert any("1 jobs left out: their GPU-type constraint names no server class" in n for n in imported.notes)
    assert [j.job_id for j in trace_workload(f"alibaba:{pods},jobs=1", 0, cluster)[0]] == ["p-share"]


def test_constrained_tasks_run_only_on_their_gpu_models(tmp_path, capsys):
    out = tmp_path / "out"
    for policy in ("hops", "hops-fifo"):  # Hops plans within JobView.nodes (planner.eligible)
        assert main(["simulate", "--cluster", f"alibaba:{nodes_file(tmp_path)}", "--workload", f"alibaba:{pods_file(tmp_path)}",
                     "--policies", policy, "--seeds", "0", "--out", str(out), "--no-progress"]) == 0
        records = {j.job_id: j for j in (JobRecord.model_validate_json(line) for line in
                                         (out / policy / "seed0" / "jobs.jsonl").read_text().splitlines())}
        assert all(r.state == "COMPLETED" for r in records.values())
        assert all(node.startswith(("v100m16-8g", "v100m32-8g")) for p in records["p-v100"].placements for node in p.config)
        assert all(node.startswith("p100-") for p in records["p-multi"].placements for node in p.config)
    err = capsys.readouterr().err
    assert "hops-slurm: note: Alibaba node list nodes.csv: 5 GPU nodes, 24 GPUs" in err
    assert "hops-slurm: note: Alibaba pod list pods.csv: 3 GPU tasks" in err


def test_slurm_backfill_runs_a_constrained_task_only_on_the_nodes_its_gpu_types_allow(tmp_path):
    """slurm-backfill, which places by GPU type in node order, reads JobView.nodes (a task's GPU-type
    constraint) like every policy: the V100 task runs on a V100 node although a P100 node comes first."""
    out = tmp_path / "out"
    assert main(["simulate", "--cluster", f"alibaba:{nodes_file(tmp_path)}", "--workload", f"alibaba:{pods_file(tmp_path)}",
                 "--policies", "slurm-backfill", "--seeds", "0", "--out", str(out), "--no-progress"]) == 0
    records = [json.loads(line) for line in (out / "slurm-backfill" / "seed0" / "jobs.jsonl").read_text().splitlines()]
    v100 = next(r for r in records if r["job_id"] == "p-v100")
    assert v100["placements"] and all(n.startswith(("v100m16-", "v100m32-")) for p in v100["placements"] for n in p["config"]), v100


def test_every_bad_row_is_one_line_naming_it(tmp_path):
    bad = tmp_path / "pods.csv"
    bad.write_text(POD_HEADER
                   + "ok,1,1,1,1000,,LS,Running,0,100,0\n"
                   + "early,1,1,1,1000,,LS,Running,500,900,100\n"       # 3: scheduled before created
                   + "back,1,1,1,1000,,LS,Running,0,50,100\n"           # 4: deleted before scheduled
                   + "huge,1,1,9999,1000,,LS,Running,0,50,0\n"          # 5: absurd GPU count
                   + "spec,1,1,1,1000,V100;rm -rf,LS,Running,0,50,0\n"   # 6: not a GPU model list
                   + "frac,1,1,1.5,1000,,LS,Running,0,50,0\n"           # 7: not whole GPUs
                   + "inf,1,1,1,1000,,LS,Running,0,inf,0\n"             # 8: infinite time
                   + "$(x),1,1,1,1000,,LS,Running,0,50,0\n")            # 9: a name that is not a name
    with pytest.raises(HopsError) as err:
        import_pods(bad)
    lines = str(err.value).splitlines()[1:]
    assert [line.split(": ", 1)[0].rsplit(":", 1)[1] for line in lines] == ["3", "4", "5", "6", "7", "8", "9"]
    assert "scheduled_time 100 is before creation_time 500" in lines[0]
    assert "deletion_time 50 is before scheduled_time 100" in lines[1]
    assert "num_gpu must be in [0, 64]" in lines[2]
    assert "gpu_spec must be GPU models joined by '|'" in lines[3]
    assert "num_gpu must be a whole number" in lines[4]
    assert "deletion_time must be in" in lines[5]
    assert "name must match" in lines[6]
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(NODE_HEADER + "n0,1,1,8,G2\nn1,1,1,8,\nn2,1,1,-1,G2\n")
    with pytest.raises(HopsError) as err:
        import_nodes(nodes)
    assert ["nodes.csv:3: model must be a GPU model name" in str(err.value), "nodes.csv:4: gpu must be in [0, 64]" in str(err.value)] == [True, True]


def test_the_command_names_the_problem_in_one_line(tmp_path, capsys):
    nodes = nodes_file(tmp_path)
    cases = [
        (["--cluster", "alibaba:"], "give the node list's path after the colon"),
        (["--cluster", f"alibaba:{tmp_path / 'missing.csv'}"], "no such file"),
        (["--cluster", f"alibaba:{nodes}", "--workload", "alibaba:"], "give a path after the colon"),
        (["--cluster", f"alibaba:{nodes}", "--workload", f"alibaba:{pods_file(tmp_path)},jobs=0"], "jobs must be a whole number"),
        (["--cluster", f"alibaba:{nodes}", "--workload", f"alibaba:{nodes}"], "header lacks column(s) name, num_gpu"),
        (["--cluster", f"alibaba:{nodes}", "--workload", f"alibaba:{pods_file(tmp_path)}", "--engine"],
         "--engine does not model GPU-type constraints"),
    ]
    for args, message in cases:
        code = main(["simulate", *args, "--policies", "gavel", "--out", str(tmp_path / "out"), "--no-progress"])
        err = capsys.readouterr().err
        assert code == 1 and message in err and "Traceback" not in err, (args, err)
