"""Fixtures for the engine tests on the live minicluster: a site config (own state directory, tiny probes,
short rounds), job submission as root or a non-root user, running ``hops-slurm`` commands and daemons as
real processes, and cleanup of every job and ``hops-`` reservation afterwards.

Run with ``HOPS_TEST_SPEC=tests/data/minicluster-engine.toml`` so the cluster does not collide with
other test sessions on this machine."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.tools.minicluster.processes import stop_child
from slurm_helpers import TEST_USER, ensure_test_user, wait_until  # noqa: F401
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.cli import CliSlurm

SCRIPT = """#!/bin/bash
#HOPS gpus={gpus} samples=1M batch-size=8 model={model} lr=0.1@{top}
sleep 600
"""
CLI = [sys.executable, "-c", "import sys; from hops_slurm.cli import main; sys.exit(main())"]




@dataclass
class EngineEnv:
    cluster: Minicluster
    api: CliSlurm
    state_dir: Path
    config: Path
    workdir: Path
    submitted: list[str] = field(default_factory=list)
    daemons: list[subprocess.Popen[str]] = field(default_factory=list)
    logs: dict[int, Path] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        env = {**os.environ, **self.cluster.env()}
        env.pop("HOPS_ENGINE_CRASH_AFTER", None)
        return env

    def submit(self, gpus: str = "1,2,4", user: str | None = None, model: str = "resnet18") -> str:
        top = gpus.split(",")[-1].split("-")[-1]
        script = self.workdir / f"job{len(self.submitted)}.sh"
        script.write_text(SCRIPT.format(gpus=gpus, top=top, model=model))
        script.chmod(0o755)
        argv = ["sbatch", "--parsable", "-o", "/dev/null", "-D", str(self.workdir), str(script)]
        if user:
            argv = self.cluster.user_argv(user, argv, self.workdir)
        out = subprocess.run(argv, env=self.env, capture_output=True, text=True, check=True, timeout=30)
        job_id = out.stdout.strip().split(";")[0]
        self.submitted.append(job_id)
        return job_id

    def until_idle(self, timeout: float = 60.0) -> None:
        """Wait until no node has a GPU allocated (a job of an earlier test may still be completing): a test
        that plans a whole-cluster placement starts from an idle cluster, as its plan assumes."""
        def idle() -> bool:
            return all(not n.gpus_used for n in self.api.nodes()) and \
                not any(j.active for j in self.api.jobs())
        try:
            wait_until(idle, "an idle cluster (no GPU allocated, no job active)", timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.describe()}") from None

    def probes_first(self) -> None:
        """This test's engine probes every new model before planning it (``probe_in_place = false``): on
        the idle minicluster a new job would otherwise be measured in place, without any probe."""
        write_config(self.config, self.state_dir, probe_in_place=False)

    def ensure_user(self) -> str:
        return ensure_test_user()

    def hops(self, *args: str, extra_env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*CLI, *args], env={**self.env, **(extra_env or {})}, capture_output=True, text=True,
                              timeout=timeout, check=False, cwd=self.workdir)

    def plan_once(self, *extra: str, extra_env: dict[str, str] | None = None) -> dict[str, object]:
        proc = self.hops("plan", "--once", "--json", "--config", str(self.config), *extra, extra_env=extra_env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout)

    def until_planned(self, job_ids: list[str], timeout: float = 90.0, extra_env: dict[str, str] | None = None,
                      placed: bool = False) -> dict[str, object]:
        """Run ``plan --once`` (as cron would) until every job has been profiled and planned; with ``placed``
        until one plan gives every job GPUs (a GPU still held by another job, e.g. a probe, can keep a job
        out of one plan: the earlier plans and what Slurm said then go into the failure message)."""
        deadline = time.monotonic() + timeout
        unplaced: list[str] = []
        while True:
            out = self.plan_once(extra_env=extra_env)
            assign: dict[str, object] = out.get("assignments", {})  # type: ignore[assignment]
            if all(j in assign for j in job_ids):
                if not placed or all(assign[j] for j in job_ids):
                    return out
                unplaced.append(f"{json.dumps(out, indent=1)}\n{self.describe()}")
            assert time.monotonic() < deadline, \
                f"jobs {job_ids} not {'placed' if placed else 'planned'} after {timeout} s: {out}\n" + "\n".join(unplaced[:2])
            time.sleep(1.0)

    def daemon(self, extra_env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        """A ``hops-slurm daemon --foreground`` process; its output goes to a file (:meth:`output`)."""
        log = self.workdir / f"daemon{len(self.daemons)}.log"
        with log.open("w") as fh:
            proc = subprocess.Popen([*CLI, "daemon", "--foreground", "--config", str(self.config)],
                                    env={**self.env, **(extra_env or {})}, stdout=fh, stderr=subprocess.STDOUT,
                                    text=True, cwd=self.workdir)
        self.daemons.append(proc)
        self.logs[proc.pid] = log
        return proc

    def output(self, proc: subprocess.Popen[str]) -> str:
        return self.logs[proc.pid].read_text()

    def jobs(self) -> dict[str, SlurmJob]:
        return {j.job_id: j for j in self.api.jobs() if j.job_id in self.submitted}

    def detail(self, job_id: str) -> SlurmJob:
        job = self.api.job(job_id)
        assert job is not None, job_id
        return job

    def describe(self) -> str:
        """What Slurm and the engine state say now (for assertion messages): nodes with their GPU use,
        every job in the queue with its GPUs, and the engine's profile and probes of each job."""
        from hops_slurm.engine.state import EngineState

        lines = ["nodes:"]
        for n in self.api.nodes():
            lines.append(f"  {n.name} {n.state} {','.join(n.flags)} gpus used {list(n.gpus_used)} of {n.gpus_total}")
        lines.append("jobs:")
        for j in self.api.jobs():
            lines.append(f"  {j.job_id} {j.name} {j.state} {j.reason} nodes={list(j.nodes)} gpus={j.gpu_config()} "
                         f"resv={j.reservation}")
        db = self.state_dir / "engine.sqlite"
        if db.exists():
            state = EngineState(db)
            lines.append("engine state:")
            for js in state.jobs(active_only=False).values():
                lines.append(f"  {js.job_id} profile={js.profile} probes={js.probes} placements={js.placements}")
            state.close()
        return "\n".join(lines)

    def wait(self, pred: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
        """:func:`wait_until`; on failure the message ends with each daemon's state and the end of its log."""
        try:
            wait_until(pred, what, timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.daemon_tails()}") from None

    def daemon_tails(self, chars: int = 4000) -> str:
        """Each daemon this test started: running or its exit status, and the last ``chars`` of its log."""
        parts = []
        for proc in self.daemons:
            status = "running" if proc.poll() is None else f"exited {proc.returncode}"
            parts.append(f"daemon pid {proc.pid} ({status}), log tail:\n{self.output(proc)[-chars:]}")
        return "\n".join(parts)


def write_config(path: Path, state_dir: Path, *, probe_in_place: bool = True) -> None:
    path.write_text(f"""
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
probe_in_place = {str(probe_in_place).lower()}
[paths]
state_dir = "{state_dir}"
""")


@pytest.fixture(scope="session")
def engine_state() -> Iterator[Path]:
    """One engine state directory for the session: the probes of the test model run once, later jobs of
    the same model reuse the profile (as on a real site)."""
    d = Path(tempfile.mkdtemp(prefix="hops-engine-state-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def eng(minicluster: Minicluster, engine_state: Path) -> Iterator[EngineEnv]:
    workdir = Path(tempfile.mkdtemp(prefix="hops-engine-jobs-"))
    workdir.chmod(0o777)
    config = engine_state / "hops.toml"
    write_config(config, engine_state)
    e = EngineEnv(minicluster, CliSlurm(minicluster.env()), engine_state, config, workdir)
    yield e
    for proc in e.daemons:
        stop_child(proc, timeout=30)
    probes = [j.job_id for j in e.api.jobs() if j.name.startswith("hops-probe-") and (j.pending or j.active)]
    if e.submitted or probes:
        minicluster.run(["scancel", *e.submitted, *probes], check=False)
    deadline = time.monotonic() + 30
    while any((j.pending or j.active) for j in e.jobs().values()) and time.monotonic() < deadline:
        time.sleep(0.2)
    _clear_stale_gres(minicluster, e.api)
    names = [r.name for r in e.api.reservations() if r.name.startswith("hops-")]
    for job in e.api.jobs():
        if job.reservation in names and (job.pending or job.active):
            minicluster.run(["scontrol", "update", f"JobId={job.job_id}", "Reservation="], check=False)
    for name in names:
        minicluster.run(["scontrol", "delete", f"ReservationName={name}"], check=False)
    shutil.rmtree(workdir, ignore_errors=True)


def _clear_stale_gres(minicluster: Minicluster, api: CliSlurm, timeout: float = 30.0) -> None:
    """Twice in full live runs on 22.05 a node kept GPUs "used" after the job holding them (requeue-held,
    then cancelled) had ended, with no job active anywhere: every later test then saw a busy node. When
    that is so after a test, ``scontrol reconfigure`` makes slurmctld rebuild its GRES counts from its jobs.
    Root cause not found (docs: the session note); a node still busy afterwards is left to the next test's
    own checks, which name it."""
    if any(j.active for j in api.jobs()) or not any(n.gpus_used for n in api.nodes()):
        return
    minicluster.run(["scontrol", "reconfigure"], check=False)
    deadline = time.monotonic() + timeout
    while any(n.gpus_used for n in api.nodes()) and time.monotonic() < deadline:
        time.sleep(0.5)
