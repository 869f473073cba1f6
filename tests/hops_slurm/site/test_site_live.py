"""Hops dropped into a site that already runs Slurm (issue 33), live: the site-shaped cluster
(tests/data/minicluster-site.toml: the site's default `cpu` partition and its `gpu` partition, a Hops
partition called `gpu-hops`, accounts enforced) with the site's own job_submit.lua (tests/data/site/: three
rules of its own) calling the Hops module.

It shows: the site's three rules hold on every job, Hops or not; Hops jobs are planned and run;
`hops-slurm site check` exits 0; the site's jobs in `gpu` are never touched by Hops (their start times with
the daemon running and with it stopped: docs/results/site.md, written from the file named by
``$HOPS_SITE_RESULTS``); after `hops-slurm site leave` and taking out the lines it names, the site's hook
alone accepts and runs jobs.

Installed as a site installs it, on the cluster this folder's tests share (conftest.py): the wheel built from
this checkout in a virtualenv outside it, every step running its `hops-slurm` (the daemon and its probes
included), the hook files slurmctld loads the ones `hops-slurm site files` writes out of the wheel; put back
before this module's tests (test_admin_guide_live.py leaves the site before).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest

from hops_slurm.slurm.parse import expand_hostlist
from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.tools.minicluster.processes import stop_child
from site_helpers import Installed, reinstall_hooks
from slurm_helpers import job_fields, wait_until

pytestmark = pytest.mark.slurm

#: the `hops-slurm` command every step runs (set by the ``installed`` fixture)
HOPS_SLURM: list[str] = []
HOPS_PARTITION = "gpu-hops"
HOPS_NODES = {"hops-a100-1", "hops-a100-2"}
GPU_NODES = {"gpu-1", "gpu-2"}
HOPS_SCRIPT = """#!/bin/bash
#HOPS gpus=2,4 samples=1M batch-size=8 model=resnet18 lr=0.1@4
sleep {seconds}
"""
PLAIN_SCRIPT = "#!/bin/bash\nsleep {seconds}\n"
#: the site's jobs in its `gpu` partition, submitted at once (GPUs, seconds): 8 GPUs on 2 nodes, so they queue
GPU_SET = [(4, 4), (4, 6), (2, 3), (4, 3), (2, 2), (4, 2), (1, 3), (3, 2)]


@dataclass
class Site:
    cluster: Minicluster
    config: Path
    state_dir: Path
    workdir: Path
    daemon: subprocess.Popen[str] | None = None
    submitted: list[str] = field(default_factory=list)

    @property
    def etc(self) -> Path:
        return self.cluster.spec.state_dir / "etc"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, **self.cluster.env()}

    def hops(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*HOPS_SLURM, *args], env=self.env, capture_output=True, text=True, timeout=120,
                              check=False, cwd=self.workdir)

    def sbatch(self, script: str, *opts: str) -> subprocess.CompletedProcess[str]:
        path = self.workdir / f"job{len(list(self.workdir.glob('job*.sh')))}.sh"
        path.write_text(script)
        path.chmod(0o755)
        proc = subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", "-D", str(self.workdir), *opts, str(path)],
                              env=self.env, capture_output=True, text=True, timeout=30, check=False)
        if proc.returncode == 0:
            self.submitted.append(proc.stdout.strip().split(";")[0])
        return proc

    def submit(self, script: str, *opts: str) -> str:
        proc = self.sbatch(script, *opts)
        assert proc.returncode == 0, proc.stderr
        return self.submitted[-1]

    def start_daemon(self) -> None:
        log = (self.workdir / "daemon.log").open("a")
        self.daemon = subprocess.Popen([*HOPS_SLURM, "daemon", "--foreground", "--config", str(self.config)],
                                       env=self.env, stdout=log, stderr=subprocess.STDOUT, text=True, cwd=self.workdir)
        try:
            wait_until(lambda: (self.etc / "hops-partitions").exists(), "the daemon writing hops-partitions", 60)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the daemon said:\n{(self.workdir / 'daemon.log').read_text()[-3000:]}") from None

    def stop_daemon(self) -> None:
        if self.daemon is not None:
            stop_child(self.daemon, timeout=30)
            self.daemon = None

    def fields(self, job_id: str) -> dict[str, str]:
        return job_fields(self.cluster, job_id)

    def cancel_all(self) -> None:
        if self.submitted:
            self.cluster.run(["scancel", *self.submitted], check=False)
        wait_until(lambda: all(self.fields(j).get("JobState") not in ("PENDING", "RUNNING", "COMPLETING")
                               for j in self.submitted), "every job of the test ended", 60)
        self.submitted.clear()


def _write_config(path: Path, state_dir: Path, hook_dir: Path) -> None:
    path.write_text(f"""
[slurm]
partitions = ["{HOPS_PARTITION}"]
profiler_partition = "profiler"
[scheduler]
round_length = 8
queue_refresh = 4
[planner]
time_limit = 5
[engine]
probe_size = "tiny"
probe_iterations = 3
probe_time_limit = 60
probe_device = "cpu"
monitor_interval = 2
settle_timeout = 10
hook_dir = "{hook_dir}"
[paths]
state_dir = "{state_dir}"
""")


@pytest.fixture(scope="module")
def site(site_cluster: Minicluster, installed: Installed) -> Iterator[Site]:
    """The shared site-shaped cluster (conftest.py) with the site's hook and the module put back, this module's
    configuration and the daemon running."""
    HOPS_SLURM[:] = installed.hops_slurm
    reinstall_hooks(site_cluster, installed)
    state = Path(tempfile.mkdtemp(prefix="hops-site-state-"))
    workdir = Path(tempfile.mkdtemp(prefix="hops-site-jobs-"))
    workdir.chmod(0o777)
    config = state / "hops.toml"
    _write_config(config, state / "state", site_cluster.spec.state_dir / "etc")
    s = Site(site_cluster, config, state / "state", workdir)
    try:
        s.start_daemon()
        yield s
    finally:
        s.stop_daemon()
        s.cancel_all()
        HOPS_SLURM.clear()
        shutil.rmtree(state, ignore_errors=True)
        shutil.rmtree(workdir, ignore_errors=True)


def _unset(fields: dict[str, str], key: str) -> bool:
    """``scontrol show job`` leaves an empty field out (AdminComment, Comment) or prints ``(null)``."""
    return fields.get(key, "(null)") in ("(null)", "")


def _epoch(slurm_time: str) -> float:
    return datetime.strptime(slurm_time, "%Y-%m-%dT%H:%M:%S").timestamp()


def test_the_sites_three_rules_hold_on_every_job_hops_or_not(site: Site) -> None:
    for script in (PLAIN_SCRIPT, HOPS_SCRIPT):
        kind = "Hops" if "#HOPS" in script else "plain"
        refused = site.sbatch(script.format(seconds=30))  # rule 2: no time limit
        assert refused.returncode != 0 and "site rule: every job needs a time limit" in refused.stderr, (kind, refused)
        charged = site.submit(script.format(seconds=30), "--time=5")  # rule 1: no account named
        assert site.fields(charged)["Account"] == "research", kind
        named = site.submit(script.format(seconds=30), "--time=5", "-A", "physics")
        assert site.fields(named)["Account"] == "physics", kind
        rewritten = site.submit(script.format(seconds=30), "--time=5", "--qos=debug")  # rule 3
        assert site.fields(rewritten)["QOS"] == "low", kind
        if kind == "Hops":  # and the Hops module took them: in the Hops partition, its directives stored
            for job in (charged, named, rewritten):
                f = site.fields(job)
                assert f["Partition"] == HOPS_PARTITION and f["AdminComment"].startswith("hops:"), f
        else:
            assert site.fields(charged)["Partition"] == "cpu" and _unset(site.fields(charged), "AdminComment")
    site.cancel_all()


def test_hops_jobs_are_planned_and_run_on_the_hops_partition_only(site: Site) -> None:
    jobs = [site.submit(HOPS_SCRIPT.format(seconds=600), "--time=20") for _ in range(2)]
    wait_until(lambda: all(site.fields(j)["JobState"] == "RUNNING" for j in jobs), "both Hops jobs running", 120)
    for job in jobs:
        f = site.fields(job)
        assert f["Partition"] == HOPS_PARTITION and set(expand_hostlist(f["NodeList"])) <= HOPS_NODES, f
    queue = site.hops("queue", "--config", str(site.config), "--json")
    assert queue.returncode == 0, queue.stderr
    planned = {row["jobid"] for row in json.loads(queue.stdout)["jobs"]}
    assert set(jobs) <= planned
    site.cancel_all()


def test_site_check_finds_nothing_missing_or_in_conflict(site: Site) -> None:
    proc = site.hops("site", "check", "--config", str(site.config), "--parsable2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line.split("|") for line in proc.stdout.splitlines()[1:]]
    status = {row[0]: row[1] for row in rows}
    assert not [c for c, s in status.items() if s in ("MISSING", "CONFLICT")], proc.stdout
    assert status["hook"] == status["hook-module"] == status["partition-file"] == status[f"partition:{HOPS_PARTITION}"] == "OK"
    as_json = json.loads(site.hops("site", "check", "--config", str(site.config), "--json").stdout)
    assert as_json["blockers"] == 0 and {c["check"]: c["status"] for c in as_json["checks"]} == status
    module = site.etc / "hops_submit.lua"  # a blocker: one line naming it, exit status 1
    module.rename(module.with_name("hops_submit.lua.aside"))
    try:
        broken = site.hops("site", "check", "--config", str(site.config), "--noheader")
    finally:
        module.with_name("hops_submit.lua.aside").rename(module)
    assert broken.returncode == 1
    assert broken.stderr.splitlines() == [f"hops-slurm: site check: MISSING hook-module: missing: {module} (needs "
                                          "hops_submit.lua where the hook loads it)"], broken.stderr


def _gpu_set_starts(site: Site) -> dict[str, object]:
    """The GPU_SET jobs submitted at once in the site's `gpu` partition, run to the end: each one's start
    (seconds after the first submission) and node, and what Slurm says Hops did to it (nothing)."""
    ids = [site.submit(PLAIN_SCRIPT.format(seconds=s), "-p", "gpu", f"--gres=gpu:v100:{g}", "-N", "1", "--time=2")
           for g, s in GPU_SET]
    wait_until(lambda: all(site.fields(j)["JobState"] == "COMPLETED" for j in ids), "the gpu set completed", 180)
    fields = [site.fields(j) for j in ids]
    first = min(_epoch(f["SubmitTime"]) for f in fields)
    for f in fields:
        assert f["Partition"] == "gpu" and f["NodeList"] in GPU_NODES, f
        assert _unset(f, "AdminComment") and _unset(f, "Comment") and _unset(f, "Reservation"), f
    return {"starts": [_epoch(f["StartTime"]) - first for f in fields], "nodes": [f["NodeList"] for f in fields]}


def test_the_sites_gpu_jobs_run_as_without_hops(site: Site) -> None:
    """Behaviour here; the start times, with and without the daemon, go to the results file (docs/results/site.md)."""
    busy = [site.submit(HOPS_SCRIPT.format(seconds=600), "--time=20") for _ in range(2)]  # the engine has work
    wait_until(lambda: all(site.fields(j)["JobState"] == "RUNNING" for j in busy), "the Hops jobs running", 120)
    with_daemon = _gpu_set_starts(site)
    site.stop_daemon()
    without = _gpu_set_starts(site)
    again = _gpu_set_starts(site)  # Slurm's own run-to-run variation, beside the difference with the daemon
    site.start_daemon()
    site.cancel_all()
    out = os.environ.get("HOPS_SITE_RESULTS")
    if out:
        Path(out).write_text(json.dumps({"gpu_set": GPU_SET, "daemon_running": with_daemon, "daemon_stopped": without,
                                         "daemon_stopped_again": again, "slurm": site.cluster.spec.slurm}, indent=1))


def test_after_leaving_the_sites_hook_alone_accepts_and_runs_jobs(site: Site) -> None:
    running = site.submit(HOPS_SCRIPT.format(seconds=600), "--time=20")
    wait_until(lambda: site.fields(running)["JobState"] == "RUNNING", "a Hops job running", 120)
    site.stop_daemon()
    held = site.submit(HOPS_SCRIPT.format(seconds=5), "--time=5")
    assert site.fields(held)["Priority"] == "0"  # the hook holds it; no daemon places it
    proc = site.hops("site", "leave", "--config", str(site.config))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"leave: job {held} released asking Slurm for 2 GPUs" in proc.stdout
    wait_until(lambda: site.fields(held)["JobState"] == "COMPLETED", "the released Hops job ran", 60)
    assert site.fields(running)["JobState"] == "RUNNING"  # a running job keeps running
    assert "ReservationName=hops-" not in site.cluster.run(["scontrol", "show", "reservation"], check=False).stdout
    assert not (site.etc / "hops-partitions").exists()
    # the one step left to the administrator: the lines it names come out of their hook
    named = [int(line.split()[2].rstrip(":")) for line in proc.stdout.splitlines() if line.startswith("leave:   line ")]
    hook = (site.etc / "job_submit.lua").read_text().splitlines()
    assert named and all("hops" in hook[n - 1] for n in named), proc.stdout
    (site.etc / "job_submit.lua").write_text("".join(line + "\n" for n, line in enumerate(hook, start=1) if n not in named))
    for module in site.etc.glob("hops_*.lua"):
        module.unlink()
    site.cluster.run(["scontrol", "reconfigure"])
    refused = site.sbatch(PLAIN_SCRIPT.format(seconds=1))
    assert refused.returncode != 0 and "site rule: every job needs a time limit" in refused.stderr
    jobs = [site.submit(PLAIN_SCRIPT.format(seconds=1), "--time=5", "--qos=debug"),
            site.submit(HOPS_SCRIPT.format(seconds=1), "--time=5")]  # #HOPS lines are a comment to Slurm now
    wait_until(lambda: all(site.fields(j)["JobState"] == "COMPLETED" for j in jobs), "jobs run by the site's hook alone", 60)
    for job in jobs:
        f = site.fields(job)
        assert f["Account"] == "research" and f["Partition"] == "cpu" and _unset(f, "AdminComment"), f
    assert site.fields(jobs[0])["QOS"] == "low"
    site.cancel_all()
