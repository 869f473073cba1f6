"""``make demo``: the emulation arithmetic, the shipped workload, the training job's checkpoint/resume,
and a reduced demo end to end on its own minicluster (own ports and state) under the real daemon."""

from __future__ import annotations

import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hops_slurm.config import load_config
from hops_slurm.tools.demo.ab import GPU_USE, HOPS, JCT_CDF, SLURM, TIMELINE, load_runs
from hops_slurm.tools.demo.emulation import Emulation, gpu_type_of, load_emulation, parse_config
from hops_slurm.tools.demo.run import (
    JOBS_DIR,
    ROOT,
    SITE_CONFIG,
    WORKLOAD,
    load_workload,
    run_demo,
    stop_stale_daemon,
    write_site_config,
)
from hops_slurm.directives import parse_script
from hops_slurm.errors import ConfigError, DirectiveError
from hops_slurm.tools.minicluster import processes
from hops_slurm.tools.minicluster.spec import Ports, load_spec
from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.report.timeline import timeline_problems
from slurm_helpers import leftover_processes, root_mounts, test_release

TRAIN = ROOT / "etc" / "demo" / "train.py"


def _emulation() -> Emulation:
    return Emulation.model_validate({
        "step_seconds": {"resnet18": 0.1, "gpt2": 0.2},
        "speed": {"a100": {"default": 1.0}, "v100": {"default": 0.5, "gpt2": 0.25}},
        "scaling": {"sync_overhead": 0.1, "cross_node": 1.5},
    })


# ----- emulation ------------------------------------------------------------------------------------
def test_step_time_by_hand() -> None:
    e = _emulation()
    assert e.step_time("resnet18", {"a100-1": 1}) == pytest.approx(0.1)
    # 0.1 / 0.5 * (1 + 0.1 * log2 4) = 0.24
    assert e.step_time("resnet18", {"v100-2": 4}) == pytest.approx(0.24)
    # slowest type sets the pace, cross-node: 0.2 / 0.25 * (1 + 0.1 * 3) * 1.5 = 1.56
    assert e.step_time("gpt2", {"a100-1": 4, "v100-1": 4}) == pytest.approx(1.56)
    # 8 GPUs x 16 samples per 0.2 * 1.3 s step
    assert e.throughput("gpt2", 16, {"a100-1": 8}) == pytest.approx(128 / 0.26)
    assert e.job_seconds("gpt2", 16, 12800, {"a100-1": 8}) == pytest.approx(26.0)


def test_emulation_errors_name_the_missing_entry() -> None:
    e = _emulation()
    with pytest.raises(ConfigError, match=r"\[speed.h100\]"):
        e.step_time("resnet18", {"h100-1": 1})
    with pytest.raises(ConfigError, match="vit"):
        e.step_time("vit", {"a100-1": 1})


def test_node_names_and_hops_config() -> None:
    assert gpu_type_of("a100-12") == "a100"
    assert gpu_type_of("v100") == "v100"
    assert parse_config("a100-1:4,a100-2:2") == {"a100-1": 4, "a100-2": 2}
    with pytest.raises(ValueError, match="NODE:GPUS"):
        parse_config("a100-1")


def test_shipped_emulation_covers_every_demo_model_and_node_type() -> None:
    e = load_emulation()
    spec = load_spec()
    for sub in load_workload():
        try:
            d = parse_script(sub.script.read_text())
        except DirectiveError:
            continue
        assert d is not None
        for group in spec.nodes:
            assert e.speed_of(group.gpu_type, d.model) > 0
        assert e.step_seconds_of(d.model) > 0


def test_probe_compute_times_scaled_to_the_emulated_step() -> None:
    from profiler.records import ProbeResult

    from hops_slurm.tools.demo.probe import scale_probe

    probe = ProbeResult(
        model="resnet18", source="zoo", size="tiny", signature="s", gpu_type="v100", device="cpu", node="v100-1",
        batch_size=32, input_shape=(3, 32, 32), params=1000, iterations=3, warmup=1, t_data=0.001,
        t_forward=0.01, t_backward=0.02, t_update=0.01, t_iter_observed=0.05, t_wait_observed=0.0,
        data_samples=[0.001] * 3, forward_samples=[0.01, 0.012, 0.008], backward_samples=[0.02] * 3,
        update_samples=[0.01] * 3, pattern=1, pattern_determined=False, pattern_margin=0.0, peak_memory_bytes=1,
        memory_source="process_max_rss", timing="wall_clock_sync", threads=1, torch_version="x", probe_seconds=1.0,
    )
    scaled = scale_probe(probe, _emulation())
    assert isinstance(scaled, ProbeResult)
    # emulated one-V100 step of resnet18: 0.1 / 0.5 = 0.2 s; measured compute 0.04 s -> factor 5
    assert (scaled.t_forward, scaled.t_backward, scaled.t_update) == pytest.approx((0.05, 0.1, 0.05))
    assert scaled.forward_samples == pytest.approx([0.05, 0.06, 0.04])
    assert scaled.t_iter_observed == pytest.approx(0.25) and scaled.t_data == 0.001


# ----- the shipped workload -------------------------------------------------------------------------
def test_workload_is_12_to_20_jobs_of_30_to_90_seconds_plus_one_malformed() -> None:
    e = load_emulation()
    subs = load_workload(JOBS_DIR, WORKLOAD)
    parsed, rejected = {}, []
    for sub in subs:
        try:
            parsed[sub.script.name] = parse_script(sub.script.read_text())
        except DirectiveError as exc:
            rejected.append((sub.script.name, str(exc)))
    assert rejected == [("broken.sh", "#HOPS gpus: duplicate count 2")]
    assert 12 <= len(parsed) <= 20
    assert len({d.model for d in parsed.values()}) >= 5
    assert any(len(d.gpus) >= 3 for d in parsed.values()) and any(d.lr is not None for d in parsed.values())
    assert {s.at for s in subs} == {0.0, 30.0, 60.0}
    for name, d in parsed.items():
        k = d.gpus[len(d.gpus) // 2] if len(d.gpus) > 1 else d.gpus[0]  # a middle count, A100 nodes of 8
        config = {"a100-1": min(k, 8), **({"a100-2": k - 8} if k > 8 else {})}
        seconds = e.job_seconds(d.model, d.batch_size, d.samples, config)
        assert 30 <= seconds <= 90, f"{name}: {seconds:.0f} s of work at {k} A100s"


def test_workload_rejects_arrivals_for_missing_scripts(tmp_path: Path) -> None:
    (tmp_path / "a.sh").write_text("#!/bin/bash\n")
    (tmp_path / "w.toml").write_text('[arrivals]\n"b.sh" = 5\n')
    with pytest.raises(ConfigError, match="b.sh"):
        load_workload(tmp_path, tmp_path / "w.toml")


def test_site_config_copy_changes_only_the_overrides(tmp_path: Path) -> None:
    dest = write_site_config(SITE_CONFIG, tmp_path / "hops.toml", {
        "paths": {"state_dir": str(tmp_path / "engine")}, "engine": {"probe_python": "/x/probe-python"},
        "planner": {"solver": "HiGHS"}})
    original, copy = load_config(SITE_CONFIG), load_config(dest)
    assert copy.paths.state_dir == tmp_path / "engine"
    assert copy.engine.probe_python == "/x/probe-python" and copy.planner.solver == "HiGHS"
    assert copy.model_copy(update={"paths": original.paths, "engine": original.engine,
                                   "planner_section": original.planner_section}) == original
    assert copy.engine.model_copy(update={"probe_python": original.engine.probe_python}) == original.engine
    assert original.scheduler.round_length <= 120 and original.scheduler.queue_refresh <= 5  # minutes, not hours


def test_a_daemon_left_by_a_killed_demo_is_stopped_and_nothing_else(tmp_path: Path) -> None:
    config, pid_file = tmp_path / "hops.toml", tmp_path / "daemon.pid"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "unrelated"])
    stale = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(config)])
    try:
        # a child's command line is its parent's until it has exec'd (slow on a loaded machine)
        deadline = time.monotonic() + 30
        while (str(config) not in processes.cmdline(stale.pid) or "unrelated" not in processes.cmdline(other.pid)) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stop_stale_daemon(pid_file, config) is None  # no PID file
        pid_file.write_text(f"{other.pid}\n")
        assert stop_stale_daemon(pid_file, config) is None and other.poll() is None  # not ours: left alone
        pid_file.write_text(f"{stale.pid}\n")
        assert stop_stale_daemon(pid_file, config) == stale.pid
        assert not processes.is_alive(stale.pid) and processes.is_alive(other.pid)
    finally:
        for p in (other, stale):
            p.kill()
            p.wait()


# ----- the training job -----------------------------------------------------------------------------
def _job_env(tmp_path: Path, job_id: str, **extra: str) -> dict[str, str]:
    return dict(os.environ, SLURM_JOB_ID=job_id, HOPS_DEMO_STATE=str(tmp_path / "state"),
                HOPS_METRICS_FILE=str(tmp_path / "metrics.jsonl"), PYTHONUNBUFFERED="1", **extra)


def test_train_checkpoints_resumes_on_a_new_allocation_and_records(tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#HOPS gpus=1,4 samples=4000 batch-size=32 model=resnet18\n")
    ckpt = tmp_path / "state" / "ckpt" / "91"
    first = subprocess.Popen([sys.executable, str(TRAIN), str(script)], text=True, stdout=subprocess.PIPE,
                             env=_job_env(tmp_path, "91", SLURMD_NODENAME="v100-1", HOPS_GPUS="1"))
    deadline = time.monotonic() + 60
    while not (ckpt / "state.pt").exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    first.send_signal(signal.SIGTERM)  # what Slurm sends a job it requeues
    out1, _ = first.communicate(timeout=30)
    assert first.returncode == 143, out1
    assert "EMULATED v100 speed: 0.200 s per step of 32 samples" in out1
    assert "checkpoint saved" in out1 and not (ckpt / "done.json").exists()

    second = subprocess.run([sys.executable, str(TRAIN), str(script)], text=True, capture_output=True, timeout=90,
                            env=_job_env(tmp_path, "91", HOPS_PLACEMENT="a100-1:2,a100-2:2", HOPS_LR="0.04"))
    assert second.returncode == 0, second.stderr
    assert "resumed from checkpoint at" in second.stdout
    done = json.loads((ckpt / "done.json").read_text())
    assert [r["config"] for r in done["runs"]] == [{"v100-1": 1}, {"a100-1": 2, "a100-2": 2}]
    saved = done["runs"][0]["samples_at_save"]
    assert 32 <= saved < 4000 and saved % 32 == 0
    # the second run adds 4 GPUs x 32 samples per step until 4000 are reached
    assert done["samples"] == saved + 128 * math.ceil((4000 - saved) / 128)
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    runtime = [r for r in records if r["kind"] == "runtime"]
    assert {r["gpus"] for r in runtime} == {1, 4}
    # the records carry the job's own count: from 0 in the first run, from its checkpoint in the second
    # (so the engine counts the samples it redoes once: hops_slurm.core.processed)
    first_run, second_run = ([r for r in runtime if r["gpus"] == g] for g in (1, 4))
    assert first_run[0]["done_samples"] == first_run[0]["steps"] * 32
    assert second_run[0]["done_samples"] - second_run[0]["steps"] * 32 * 4 == saved
    assert second_run[-1]["done_samples"] == done["samples"]
    assert {r["kind"] for r in records} == {"runtime", "checkpoint"}
    marks = [r for r in records if r["kind"] == "checkpoint"]  # profiler.preempt: each run listens, saves are marked
    assert [m["event"] for m in marks].count("listening") == 2
    assert any(m["event"] == "saved" and m["samples"] == saved and not m["notice"] for m in marks)


def _wait_for(path: Path, text: str, proc: subprocess.Popen[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and text in path.read_text()) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert path.exists() and text in path.read_text(), f"{text!r} never written to {path}"


def test_train_answers_a_notice_with_a_checkpoint_and_resumes_where_it_saved(tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#HOPS gpus=1 samples=400000 batch-size=32 model=resnet18\n")
    metrics = tmp_path / "metrics.jsonl"
    env = _job_env(tmp_path, "92", SLURMD_NODENAME="v100-1", HOPS_GPUS="1", HOPS_PREEMPT_GRACE="60")
    first = subprocess.Popen([sys.executable, str(TRAIN), str(script)], text=True, stdout=subprocess.PIPE, env=env)
    _wait_for(metrics, '"samples":', first)  # listening, and a first regular checkpoint marked
    first.send_signal(signal.SIGUSR1)  # the notice: Hops will requeue it
    _wait_for(metrics, '"notice":true', first)
    assert first.poll() is None  # it waits for the requeue, it does not exit (exit 0 would end the job)
    first.send_signal(signal.SIGTERM)  # the requeue
    out1, _ = first.communicate(timeout=30)
    assert first.returncode == 143 and "checkpoint saved, waiting to be requeued" in out1, out1
    answer = next(m for m in map(json.loads, metrics.read_text().splitlines()) if m.get("notice"))
    second = subprocess.Popen([sys.executable, str(TRAIN), str(script)], text=True, stdout=subprocess.PIPE,
                              env=_job_env(tmp_path, "92", HOPS_CONFIG="a100-1:2"))
    try:
        while (line := second.stdout.readline()) and "resumed from checkpoint" not in line:  # type: ignore[union-attr]
            pass
    finally:
        second.send_signal(signal.SIGTERM)
        second.communicate(timeout=30)
    assert f"resumed from checkpoint at {answer['samples']}/400000" in line  # no work lost


def test_train_near_its_end_finishes_within_the_notice_instead_of_answering(tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#HOPS gpus=1 samples=3200 batch-size=32 model=resnet18\n")  # 100 steps of 0.2 s
    metrics = tmp_path / "metrics.jsonl"
    job = subprocess.Popen([sys.executable, str(TRAIN), str(script)], text=True, stdout=subprocess.PIPE,
                           env=_job_env(tmp_path, "93", SLURMD_NODENAME="v100-1", HOPS_GPUS="1", HOPS_PREEMPT_GRACE="60"))
    _wait_for(metrics, '"listening"', job)
    job.send_signal(signal.SIGUSR1)
    out, _ = job.communicate(timeout=90)
    assert job.returncode == 0 and "notice; finishing within it" in out and "finished 3200 samples" in out, out
    assert '"notice":true' not in metrics.read_text()  # no answer: Hops sees it end and never requeues it


# ----- end to end -----------------------------------------------------------------------------------
TINY_JOBS = {
    "a.sh": "gpus=1,2 samples=1200 batch-size=32 model=resnet18",
    "b.sh": "gpus=2,4 samples=400 batch-size=8 model=gpt2",
    "c.sh": "gpus=1 samples=600 batch-size=16 model=mobilenetv2 lr=0.02@1",
    "z-broken.sh": "gpus=1,2,2 samples=1K batch-size=64 model=resnet18",
}


@pytest.mark.slurm
def test_reduced_demo_end_to_end(tmp_path: Path) -> None:
    for name, hops in TINY_JOBS.items():
        body = (JOBS_DIR / "resnet18-a.sh").read_text().splitlines()[4:]  # the shipped env + train lines
        (tmp_path / name).write_text("\n".join(["#!/bin/bash", f"#SBATCH -J {name[:-3]}", f"#HOPS {hops}", *body]) + "\n")
    spec = load_spec().model_copy(
        update={"state_dir": Path("/var/tmp/hops-minicluster-demo-test"), "cluster_name": "hopsdemo",
                "ports": Ports(slurmctld=6947, slurmd_base=17401, slurmdbd=6949, mariadb=13346)}
    ).with_release(test_release())
    out = io.StringIO()
    mounts_before = root_mounts(Minicluster(spec))
    try:
        rc = run_demo(out, spec, jobs_dir=tmp_path, workload=None, report_dir=tmp_path / "report", timeout=240, poll=2)
    finally:
        print(out.getvalue())
    text = out.getvalue()
    assert rc == 0
    assert "z-broken.sh     rejected by sbatch: #HOPS gpus: duplicate count 2" in text
    assert "3 running" in text or "2 running" in text or "1 running" in text
    assert "0 pending, 3 completed" in text
    for name in ("a", "b", "c"):
        assert f" {name:<13} COMPLETED " in text
    assert "== hops-slurm report --summary" in text
    # the trainer saw what the engine wrote into the env file: the learning rate, and the recorder's path
    logs = spec.state_dir / "demo" / "logs"
    assert "(1 GPUs, lr 0.02)" in next(logs.glob("c-*.out")).read_text()
    metrics = spec.state_dir / "demo" / "engine" / "metrics"  # one place per job, owned by its owner, gone
    assert metrics.is_dir() and not any(metrics.iterdir())  # once the job ended (its records read before)
    report = (tmp_path / "report" / "report.md").read_text()
    assert report.count("COMPLETED") == 3
    assert list((tmp_path / "report").glob("*.png"))
    # then the same three jobs under Slurm's own backfill, rigid at the median count, never held by the hook
    slurm_part = text.split("== the same 3 jobs under Slurm's own scheduling", 1)[1]
    for name, rigid in (("a.sh", "1 of gpus=1,2"), ("b.sh", "2 of gpus=2,4"), ("c.sh", "1 of gpus=1")):
        assert f"{name:<15} job " in slurm_part and f"(rigid: {rigid})" in slurm_part
    assert "z-broken" not in slurm_part
    assert "0 pending, 3 completed" in slurm_part
    rows = {line.split()[1]: line.split() for line in slurm_part.split("== the jobs under Slurm", 1)[1].splitlines()[1:4]}
    assert {n: (r[2], sum(int(c.split(":")[1]) for c in r[3].split(","))) for n, r in rows.items()} == {
        "a": ("COMPLETED", 1), "b": ("COMPLETED", 2), "c": ("COMPLETED", 1)}
    table = slurm_part.split("== Hops beside Slurm's own scheduling: the same 3 jobs on the same 24 GPUs\n", 1)[1].splitlines()
    assert table[0].split() == ["Hops", "Slurm", "backfill", "(rigid)"]
    assert table[2].split() == ["Jobs", "completed", "3", "of", "3", "3", "of", "3"]
    assert table[5].split()[:3] == ["RAQLR", "(eq.", "7)"]  # the paper's eq. 7 on both sides
    assert all(re.fullmatch(r"\d+\.\d\d\d", x) for x in table[5].split()[-2:])
    assert all(re.fullmatch(r"\d+\.\d\d", x) for x in table[6].split()[-2:])  # max LR on both sides
    comparison = (tmp_path / "report" / "comparison.md").read_text()
    assert "| Jobs completed | 3 of 3 | 3 of 3 |" in comparison
    # both runs' records kept in the report folder, within the cluster; the A/B plots on the comparison page
    total, runs = load_runs(tmp_path / "report")
    assert total == 24 and [label for label, _ in runs] == [HOPS, SLURM]
    assert [len(records.jobs) for _, records in runs] == [3, 3]
    for _, records in runs:
        assert timeline_problems(list(records.jobs), total, records.last_time() or 0.0) == []
        # a run the engine preempted says why (planner.changes), and only such a run does
        assert all(bool(p.cause) == p.preempted for j in records.jobs for p in j.placements)
    for png in (JCT_CDF, GPU_USE, TIMELINE):
        assert f"]({png})" in comparison and (tmp_path / "report" / png).stat().st_size > 10_000
    assert "GPUs in use: Hops: peak " in text
    assert leftover_processes(spec.state_dir) == []
    assert root_mounts(Minicluster(spec)) == mounts_before
