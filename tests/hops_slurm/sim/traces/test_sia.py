"""Sia's workload and profile formats, on small files written here in the same format (no file of Sia's
artifact enters the repository: docs/traces.md)."""

from pathlib import Path

import pytest

from hops_slurm.cli import main
from hops_slurm.errors import HopsError
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.traces.specs import trace_workload
from hops_slurm.sim.traces.sia import import_sia
from hops_slurm.sim.traces.sia_profiles import load_application, packed, seconds_per_step, steps_to_complete

HEADER = "name,time,application,num_replicas,batch_size\n"


def write_app(root: Path, name: str, epochs: int, *, var: float = 1.0) -> None:
    """An application measured on 'rtx' and 'aws': step time 0.1 s + 0.001 s per sample of local batch."""
    app = root / name
    app.mkdir(parents=True)
    for size in (128, 256):
        rows = [f"{100.0 * (e + 1)},{100 * (e + 1)},0.5,1.0,{var}" for e in range(epochs)]
        (app / f"validation-{size}.csv").write_text("progress,iteration,metric,grad_sqr,grad_var\n" + "\n".join(rows) + "\n")
    for suffix, slow in (("rtx", 1.0), ("aws", 2.0)):
        lines = ["placement,local_bsz,step_time,sync_time"]
        for placement in ("1", "2", "4", "8", "44"):
            for local in (16, 64, 128):
                lines.append(f"{placement},{local},{slow * (0.1 + 0.001 * local)},0.02")
        (app / f"placements-{suffix}.csv").write_text("\n".join(lines) + "\n")
        (app / f"scalability-{suffix}.csv").write_text(
            "num_nodes,num_replicas,local_bsz,step_time,sync_time\n"
            f"2,16,16,{slow * 0.3},0.1\n2,16,128,{slow * 0.5},0.1\n")


@pytest.fixture
def artifact(tmp_path: Path) -> Path:
    """The artifact's layout: <root>/traces/<application>/..., <root>/workloads/<trace>/workload-K.csv."""
    write_app(tmp_path / "traces", "toynet", 3)
    write_app(tmp_path / "traces", "ncf", 10)
    (tmp_path / "workloads" / "mini").mkdir(parents=True)
    return tmp_path


def test_steps_follow_the_goodput_model(artifact):
    app = load_application(artifact / "traces" / "toynet", "rtx")
    assert app.epochs == 3 and app.init_batch == 128
    # at the smallest batch size a step is one step of progress: 300 in all
    assert steps_to_complete(app, 128) == pytest.approx(300.0)
    # twice the batch: gain = (var + sqr) / (var / 2 + sqr) = 2 / 1.5, so 3/4 of the steps
    assert steps_to_complete(app, 256) == pytest.approx(225.0)
    with pytest.raises(ValueError, match="outside toynet's validated batch sizes 128-256"):
        steps_to_complete(app, 512)


def test_step_time_interpolates_and_accumulates(artifact):
    app = load_application(artifact / "traces" / "toynet", "rtx")
    # 4 GPUs, batch 256: 64 per GPU, measured on placement "4"
    assert seconds_per_step(app, 4, 8, 256) == pytest.approx(0.1 + 0.064)
    # 2 GPUs, batch 200: 100 per GPU, between 64 and 128
    assert seconds_per_step(app, 2, 8, 200) == pytest.approx(0.1 + 0.1)
    # 1 GPU, batch 256 > the largest measured 128: two accumulated steps of 128, the second without sync
    assert seconds_per_step(app, 1, 8, 256) == pytest.approx(0.228 + (0.228 - 0.02))
    # 16 GPUs on 8-GPU nodes ("88") is not a measured placement: the (2 nodes, 16 GPUs) scalability rows
    assert packed(16, 8) == "88" and packed(10, 8) == "28"
    assert seconds_per_step(app, 16, 8, 256) == pytest.approx(0.3)
    assert seconds_per_step(app, 24, 8, 256) is None  # 3 nodes: nothing measured


def test_a_job_runs_as_long_on_the_reference_type_as_sia_says(artifact):
    (artifact / "workloads" / "mini" / "workload-1.csv").write_text(HEADER + "a-0,30,toynet,4,256\nb-1,10.5,ncf,4,128\n")
    jobs, imported = import_sia(artifact / "workloads" / "mini" / "workload-1.csv")
    truth = GroundTruth()
    assert [j.job_id for j in jobs] == ["b-1", "a-0"]  # by arrival
    a = jobs[1]
    assert a.requirements == (4,) and a.arrival == 30.0 and a.model == "ResNet-50 (batch size 64)"
    seconds_on_p100 = a.total_samples / truth.samples_per_second(a.model, "p100", 4, False)
    assert seconds_on_p100 == pytest.approx(225.0 * (0.1 + 0.064))
    ncf = jobs[0]  # Recommendation runs on one GPU: the row's 4 becomes 1, and the notes say so
    assert ncf.requirements == (1,) and ncf.model == "Recommendation (batch size 2048)"
    # slowdown 1.5 (Sia's calibration of ncf), 1000 steps at its smallest batch size, 1 GPU at local 128
    assert ncf.total_samples / truth.samples_per_second(ncf.model, "p100", 1, False) == pytest.approx(1000 * 0.228 * 1.5)
    text = "\n".join(imported.notes)
    assert "1 ncf jobs asked for several GPUs" in text
    assert "speed vs rtx (toynet): aws 0.50x in Sia, k80" in text


def test_a_folder_gives_one_workload_per_seed_in_natural_order(artifact):
    folder = artifact / "workloads" / "mini"
    for k in (1, 2, 10):
        (folder / f"workload-{k}.csv").write_text(HEADER + f"w{k},0,toynet,1,128\n")
    cluster = load_cluster("sia-saturn")
    assert [trace_workload(f"sia:{folder}", s, cluster)[0][0].job_id for s in (0, 1, 2)] == ["w1", "w2", "w10"]
    with pytest.raises(HopsError, match="has 3 workloads: seeds 0-2 pick one each, got seed 3"):
        trace_workload(f"sia:{folder}", 3, cluster)
    # profiles elsewhere: profiles=DIR
    moved = artifact / "elsewhere"
    (artifact / "traces").rename(moved)
    with pytest.raises(HopsError, match="no Sia profiles found"):
        trace_workload(f"sia:{folder}", 0, cluster)
    assert trace_workload(f"sia:{folder},profiles={moved}", 0, cluster)[0][0].job_id == "w1"


def test_every_bad_row_is_one_line_naming_it(artifact):
    bad = artifact / "workloads" / "mini" / "workload-1.csv"
    bad.write_text(HEADER + "ok,0,toynet,1,128\n"
                   "x,-5,toynet,1,128\n"          # 3: negative time
                   "y,0,nosuchapp,1,128\n"        # 4: no profiles
                   "../z,0,toynet,1,128\n"        # 5: a name that is not a name
                   "w,0,toynet,1e9,128\n"         # 6: absurd GPU count
                   "v,0,toynet,2,4096\n"          # 7: batch outside the validated sizes
                   "u,0,toynet,1,nan\n"           # 8: not a number
                   "t,0,toynet,3,128,extra\n")    # 9: more fields than the header
    with pytest.raises(HopsError) as err:
        import_sia(bad)
    lines = str(err.value).splitlines()[1:]
    assert [line.split(": ", 1)[0].rsplit(":", 1)[1] for line in lines] == ["3", "4", "5", "6", "7", "8", "9"]
    assert "time must be in [0" in lines[0]
    assert "application 'nosuchapp': no profiles in" in lines[1]
    assert "name must match" in lines[2]
    assert "num_replicas must be in [1, 4096]" in lines[3]
    assert "outside toynet's validated batch sizes" in lines[4]
    assert "batch_size must be in" in lines[5]
    assert "6 fields, the header has 5" in lines[6]


def test_hostile_files_get_one_line_errors_from_the_command(artifact, tmp_path, capsys):
    folder = artifact / "workloads" / "mini"
    cases = {
        "header.csv": ("name,time\nx,0\n", "header lacks column(s) application, num_replicas, batch_size"),
        "binary.csv": ("name,time\x00\n", "contains NUL bytes"),
        "empty.csv": ("", "empty file"),
    }
    for name, (text, message) in cases.items():
        (folder / name).write_text(text)
        code = main(["simulate", "--cluster", "sia-saturn", "--workload", f"sia:{folder / name}", "--policies", "gavel",
                     "--out", str(tmp_path / "out"), "--no-progress"])
        err = capsys.readouterr().err
        assert code == 1 and message in err and "Traceback" not in err
    (folder / "latin1.csv").write_bytes(HEADER.encode() + "\xe9t\xe9,0,toynet,1,128\n".encode("latin-1"))
    assert main(["simulate", "--cluster", "sia-saturn", "--workload", f"sia:{folder / 'latin1.csv'}",
                 "--out", str(tmp_path / "out"), "--no-progress", "--policies", "gavel"]) == 1
    assert "UTF-8" in capsys.readouterr().err
    prof = artifact / "traces" / "toynet" / "placements-rtx.csv"
    prof.write_text("placement,local_bsz,step_time,sync_time\n10,16,0.1,0.01\n1,16,-1,0\n")
    (folder / "workload-1.csv").write_text(HEADER + "a,0,toynet,1,128\n")
    with pytest.raises(HopsError) as err:
        import_sia(folder / "workload-1.csv")
    assert "placements-rtx.csv:2: placement must be digits 1-9" in str(err.value)
    assert "placements-rtx.csv:3: step_time must be in" in str(err.value)


def test_gavel_runs_an_imported_workload_end_to_end(artifact, tmp_path, capsys):
    (artifact / "workloads" / "mini" / "workload-1.csv").write_text(
        HEADER + "".join(f"j{i},{60 * i},toynet,{(1, 2, 4, 8)[i % 4]},256\n" for i in range(8)))
    out = tmp_path / "out"
    assert main(["simulate", "--cluster", "sia-saturn", "--workload", f"sia:{artifact / 'workloads' / 'mini'}",
                 "--policies", "gavel", "--seeds", "0", "--out", str(out), "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "hops-slurm: note: Sia workload workload-1.csv: 8 rigid jobs (toynet 8 as ResNet-50)" in captured.err
    assert "Import: Sia workload workload-1.csv" in (out / "results.md").read_text()
    assert "| gavel |" in captured.out
