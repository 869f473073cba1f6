"""Record what real Slurm daemons print, for the adapter's unit tests (tests/hops_slurm/slurm/test_recorded_*.py).

Usage (root, from the repository root, under the shared lock; one release at a time)::

    flock /tmp/hops-live.lock .venv/bin/python tests/data/slurm-output/capture.py 22.05
    flock /tmp/hops-live.lock .venv/bin/python tests/data/slurm-output/capture.py 24.11 --root /var/tmp/cap-roots/trixie
    flock /tmp/hops-live.lock .venv/bin/python tests/data/slurm-output/capture.py 26.05 --root /var/tmp/cap-roots/sid

22.05 runs the host's Debian packages; a newer release runs inside a Debian root that has Slurm installed
(see README.md beside this file for how the roots were made). Either way the same four-node fake-GPU cluster
(ports 7217 and 7301-7304, slurmdbd 7219 with MariaDB 7220, state under /var/tmp/hops-capture) gets the
same jobs in the same order, so job ids and GPU indices agree between releases; the outputs are written
to ``<release>/`` beside this file and everything started is stopped (by PID) and unmounted at the end.
A root's slurmdbd keeps its database in a MariaDB run on the host (Debian 12's mariadb-server), so the
roots need only ``slurmdbd`` besides the Slurm daemons.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from hops_slurm.hooklua import MODULE_FILES
from hops_slurm.tools.minicluster import conf, processes
from hops_slurm.tools.minicluster.slurmdbd import DB_USER, Accounting
from hops_slurm.tools.minicluster.cluster import Minicluster, hostname
from hops_slurm.tools.minicluster.spec import MiniclusterSpec
from hops_slurm.report.sacct import sacct_command
from hops_slurm.slurm.cli import CliSlurm

HERE = Path(__file__).resolve().parent
HOOK = HERE.parents[2] / "hooks" / "job_submit.lua"
STATE = Path("/var/tmp/hops-capture")
DB_STATE = Path("/var/tmp/hops-capture-db")  # a root's cluster keeps its accounting in a MariaDB on the host

SPEC = MiniclusterSpec.model_validate({
    "cluster_name": "hopscap",
    "state_dir": str(STATE),
    "accounting": True,
    "ports": {"slurmctld": 7217, "slurmd_base": 7301, "slurmdbd": 7219, "mariadb": 7220},
    "nodes": [
        {"prefix": "a100-", "count": 2, "gpu_type": "a100", "gpus": 8, "cpus": 16, "memory_mb": 64000},
        {"prefix": "v100-", "count": 2, "gpu_type": "v100", "gpus": 4, "cpus": 8, "memory_mb": 32000},
    ],
    "partitions": [{"name": "hops", "default": True}, {"name": "profiler"}],
})

#: A job name that imitates the fields of ``scontrol -o show job`` (the running #HOPS job carries it).
HOSTILE_NAME = "x Reservation=fake JobState=PENDING Nodes=v100-1 GRES=gpu:v100:4(IDX:0-3) NodeList=v100-1"
#: A comment that does the same (on the pending job; comments come after the per-node detail).
HOSTILE_COMMENT = "Nodes=v100-2 CPU_IDs=0 Mem=1 GRES=gpu:v100:4(IDX:0-3) Reservation=fake2"
HOPS_SCRIPT = "#!/bin/bash\n#HOPS gpus=1,2,4,8 samples=1M batch-size=32 model=resnet50 lr=0.1@8\nsleep 900\n"


class Cluster:
    """Client commands and daemons of the capture cluster, on the host or inside a Debian root."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self.pids: list[int] = []
        self.mounted = False
        self.db: Accounting | None = None
        self.db_pid: int | None = None

    def path(self, p: Path) -> Path:
        """Where a path the daemons see lies on this host."""
        return self.root / p.relative_to("/") if self.root else p

    def argv(self, argv: list[str]) -> list[str]:
        if self.root is None:
            return argv
        return ["chroot", str(self.root), "env", f"SLURM_CONF={SPEC.conf_path}", *argv]

    def run(self, argv: list[str], check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, SLURM_CONF=str(SPEC.conf_path), SLURM_TIME_FORMAT="standard")
        done = subprocess.run(self.argv(argv), env=env, input=stdin, capture_output=True, text=True, timeout=60)
        if check and done.returncode != 0:
            sys.exit(f"capture: `{' '.join(argv)}` failed ({done.returncode}): {done.stderr.strip()}")
        return done

    # ----- a cluster inside a root -----------------------------------------------------------------
    def up_in_root(self) -> None:
        assert self.root is not None
        shutil.copyfile("/etc/hosts", self.root / "etc" / "hosts")
        if not os.path.ismount(self.root / "proc"):
            subprocess.run(["mount", "--bind", "/proc", str(self.root / "proc")], check=True)
        self.mounted = True
        s = self.path(STATE)
        if s.exists():
            shutil.rmtree(s)
        for sub in ("etc", "log", "ctld", "spool", "dev", "run", "munge"):
            (s / sub).mkdir(parents=True)
        uid, gid = _root_user(self.root, "munge")
        for sub in ("run", "munge"):
            os.chown(s / sub, uid, gid)
        (s / "munge").chmod(0o700)
        key = s / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        os.chown(key, uid, gid)
        key.chmod(0o400)
        for node in SPEC.node_names():
            (s / "spool" / node).mkdir()
            for dev in conf.device_paths(SPEC, node):
                self.path(dev).parent.mkdir(parents=True, exist_ok=True)
                os.mknod(self.path(dev), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        etc = s / "etc"
        (etc / "slurm.conf").write_text(conf.render_slurm_conf(SPEC, hostname(), job_submit_lua=True))
        (etc / "gres.conf").write_text(conf.render_gres_conf(SPEC))
        (etc / "cgroup.conf").write_text("CgroupPlugin=disabled\n")  # slurmd 24.11+ needs it without a cgroup fs
        shutil.copyfile(HOOK, etc / "job_submit.lua")
        for name in MODULE_FILES:  # the Hops module it loads from beside itself, and its partitions
            shutil.copyfile(HOOK.with_name(name), etc / name)
        (etc / "hops-partitions").write_text(conf.render_hops_partitions(SPEC.hops_partition_names()))
        self.db = Accounting(SPEC.model_copy(update={"state_dir": DB_STATE}))
        if DB_STATE.exists():
            shutil.rmtree(DB_STATE)
        (DB_STATE / "etc").mkdir(parents=True)
        self.db.write_files(hostname())
        env = dict(os.environ)
        self.db_pid = processes.start("mariadb", self.db.argv("mariadb"), DB_STATE / "log" / "mariadb.out", env=env).pid
        _wait(lambda: self.db is not None and self.db.ready("mariadb", env), "MariaDB")
        dbd = etc / "slurmdbd.conf"
        dbd.write_text(conf.render_slurmdbd_conf(SPEC, hostname(), DB_USER, self.db.password_file.read_text().strip()))
        dbd.chmod(0o600)
        r = STATE / "run"
        self.start(["runuser", "-u", "munge", "--", "/usr/sbin/munged", "-F", "--force", f"--socket={r / 'munge.socket'}",
                    f"--key-file={STATE / 'munge' / 'munge.key'}", f"--pid-file={STATE / 'munge' / 'munged.pid'}",
                    f"--log-file={STATE / 'munge' / 'munged.log'}", f"--seed-file={STATE / 'munge' / 'munged.seed'}"], "munged")
        _wait(lambda: self.path(r / "munge.socket").exists(), "munged's socket")
        self.start(["slurmdbd", "-D"], "slurmdbd")
        _wait(lambda: self.run(["sacctmgr", "-i", "add", "cluster", SPEC.cluster_name], check=False).returncode == 0,
              "slurmdbd registering the cluster")
        self.start(["slurmctld", "-D", "-c", "-f", str(SPEC.conf_path)], "slurmctld")
        for node in SPEC.node_names():
            self.start(["slurmd", "-D", "-N", node, "-f", str(SPEC.conf_path)], f"slurmd-{node}")

    def start(self, argv: list[str], name: str) -> None:
        log = open(self.path(STATE / "log" / f"{name}.out"), "w")  # noqa: SIM115 (kept open by the child)
        proc = subprocess.Popen(self.argv(argv), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.pids.append(proc.pid)

    def down_in_root(self) -> None:
        assert self.root is not None
        for pid in reversed(self.pids):
            _stop(pid)
        root = os.path.realpath(self.root)
        for entry in Path("/proc").iterdir():  # whatever still runs inside this root (job steps)
            if entry.name.isdigit():
                try:
                    if os.readlink(entry / "root") == root:
                        _stop(int(entry.name))
                except OSError:
                    pass
        if self.mounted:
            subprocess.run(["umount", str(self.root / "proc")], check=True)
        if self.db_pid is not None:
            processes.stop_pid(self.db_pid)


def _root_user(root: Path, name: str) -> tuple[int, int]:
    for line in (root / "etc" / "passwd").read_text().splitlines():
        f = line.split(":")
        if f[0] == name:
            return int(f[2]), int(f[3])
    sys.exit(f"capture: no user {name!r} in {root}/etc/passwd; install munge in the root")


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(50):
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except ChildProcessError:
            if not Path(f"/proc/{pid}").exists():
                return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _wait(pred: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            sys.exit(f"capture: {what} not reached in {timeout:.0f} s")
        time.sleep(0.3)


# ----- the scenario ----------------------------------------------------------------------------------
def states(c: Cluster) -> dict[str, str]:
    out = c.run(["squeue", "-h", "-t", "all", "-o", "%i|%T"]).stdout
    return dict(line.split("|", 1) for line in out.split())


def gpu_index(c: Cluster, job: str) -> list[int]:
    """The GPU indices of a running one-node job, from ``scontrol -d show job`` (the capture's own reading)."""
    m = re.search(r"GRES=\S*\(IDX:([0-9,-]+)\)", c.run(["scontrol", "-d", "show", "job", job]).stdout)
    assert m, f"job {job}: no GPU index"
    out = []
    for part in m[1].split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def sbatch(c: Cluster, *args: str, script: str | None = None) -> str:
    argv = ["sbatch", "--parsable", "-o", "/dev/null", "-D", "/tmp", *args]
    if script is None:
        argv += ["--wrap", "sleep 900"]
    return c.run(argv, stdin=script).stdout.strip().split(";")[0]


def scenario(c: Cluster) -> dict[str, object]:
    """Jobs 1-8 fill a100-1, 9-16 fill a100-2; cancelling some leaves scattered free GPUs that the #HOPS
    job 17 (hostile name) gets across both nodes through a reservation, as the enactor places jobs."""
    def idle() -> bool:  # sinfo -N lists a node once per partition
        nodes = dict(line.split("|") for line in c.run(["sinfo", "-h", "-N", "-o", "%N|%T"]).stdout.split())
        return len(nodes) == 4 and set(nodes.values()) == {"idle"}

    _wait(idle, "4 idle nodes")
    fills = {node: [sbatch(c, "-J", f"fill-{node}", "-w", node, "--gres=gpu:a100:1") for _ in range(8)]
             for node in ("a100-1", "a100-2")}
    every = [j for js in fills.values() for j in js]
    _wait(lambda: all(states(c).get(j) == "RUNNING" for j in every), "16 fill jobs running")
    index = {j: gpu_index(c, j)[0] for j in every}
    free = {"a100-1": [1, 5], "a100-2": [2, 3, 6]}
    for node, idx in free.items():
        c.run(["scancel", *[j for j in fills[node] if index[j] in idx]])
    hops = sbatch(c, "-J", HOSTILE_NAME, script=HOPS_SCRIPT)  # held by the submit hook
    assert hops == "17", hops
    held = sbatch(c, "-J", "held-user", script=HOPS_SCRIPT)  # stays held by the hook (JobHeldUser)
    pending = sbatch(c, "-J", "pending", "--comment", HOSTILE_COMMENT, "-p", "hops", "--gres=gpu:a100:8")
    v100 = sbatch(c, "-J", "v100-whole", "-w", "v100-1", "--gres=gpu:v100:4")
    admin = sbatch(c, "-J", "held-admin", script=HOPS_SCRIPT)
    c.run(["scontrol", "hold", admin])
    _wait(lambda: states(c).get(v100) == "RUNNING", "the v100 job running")
    # placed as hops_slurm.slurm.enact does it: clear, then typed TresPerJob + NumNodes + NodeList, a
    # reservation on exactly those nodes, StartTime=now, release
    c.run(["scontrol", "update", f"JobId={hops}", "TresPerJob=", "TresPerNode="])
    c.run(["scontrol", "update", f"JobId={hops}", "TresPerJob=gres:gpu:a100:5", "NumNodes=2", "NodeList=a100-1,a100-2"])
    c.run(["scontrol", "create", "reservation", f"ReservationName=hops-job-{hops}", "Nodes=a100-1,a100-2", "Users=root",
           "StartTime=now", "Duration=UNLIMITED", "Flags=OVERLAP,IGNORE_JOBS"])
    c.run(["scontrol", "update", f"JobId={hops}", f"Reservation=hops-job-{hops}", "StartTime=now"])
    c.run(["scontrol", "release", hops])
    _wait(lambda: states(c).get(hops) == "RUNNING", "the #HOPS job running")
    # slurmctld marks reserved nodes (State=...+RESERVED) in a periodic pass: record them marked
    _wait(lambda: all(re.search(r"\bState=\S*RESERVED", c.run(["scontrol", "-o", "show", "node", n]).stdout)
                      for n in ("a100-1", "a100-2")), "the reserved nodes marked RESERVED")
    requeued = fills["a100-2"][0]  # a100-2 GPU 0: requeued and held, as the enactor preempts
    c.run(["scontrol", "requeuehold", requeued])
    c.run(["scontrol", "update", "NodeName=v100-2", "State=DRAIN", "Reason=capture"])
    _wait(lambda: states(c).get(requeued) == "PENDING", "the requeued job pending")
    time.sleep(2)  # let the requeued job's GPU be released and the node states settle
    return {"hops": hops, "held": held, "pending": pending, "v100": v100, "admin": admin, "requeued": requeued,
            "fills": fills, "free_before_hops": free}


def record(c: Cluster, out: Path, release: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "scontrol-version.txt").write_text(c.run(["scontrol", "--version"]).stdout)
    (out / "squeue.json").write_text(c.run(["squeue", "--json"]).stdout)
    (out / "sinfo.json").write_text(c.run(["sinfo", "--json"]).stdout)
    # what the report's cross-check runs (hops_slurm.report.sacct), once slurmdbd has every job's start
    ids = [str(i) for i in range(1, 22)]
    parsable = sacct_command(ids)

    def settled() -> bool:
        rows = [r.split("|") for r in c.run(parsable).stdout.splitlines()[1:]]
        return len(rows) == 21 and all(r[3] for r in rows)  # Partition: empty in slurmdbd's stand-in rows

    _wait(settled, "sacct listing all 21 jobs with their partition")
    (out / "sacct-parsable2.txt").write_text(c.run(parsable).stdout)
    (out / "sacct.json").write_text(c.run(sacct_command(ids, json_output=True)).stdout)
    if release == "22.05":
        (out / "scontrol-show-job.txt").write_text(c.run(["scontrol", "-o", "-d", "show", "job"]).stdout)
        (out / "scontrol-show-node.txt").write_text(c.run(["scontrol", "-o", "show", "node"]).stdout)
        (out / "scontrol-show-reservation.txt").write_text(c.run(["scontrol", "-o", "show", "reservation"]).stdout)
    else:
        (out / "scontrol-show-job.json").write_text(c.run(["scontrol", "show", "job", "--json"]).stdout)
        (out / "scontrol-show-job-17.json").write_text(c.run(["scontrol", "show", "job", "17", "--json"]).stdout)
        (out / "scontrol-show-nodes.json").write_text(c.run(["scontrol", "show", "nodes", "--json"]).stdout)
        (out / "scontrol-show-reservation.json").write_text(c.run(["scontrol", "show", "reservation", "--json"]).stdout)
        gone = c.run(["scontrol", "show", "job", "999", "--json"], check=False)
        (out / "scontrol-show-job-999.txt").write_text(f"exit {gone.returncode}\n--- stdout\n{gone.stdout}--- stderr\n{gone.stderr}")


def check_adapter(c: Cluster) -> str:
    """Read the live cluster through the adapter, its clients found on PATH (for a root: wrapper scripts
    that run them inside it), and check what the scenario made."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, SLURM_CONF=str(SPEC.conf_path))
        if c.root is not None:
            for cmd in ("scontrol", "squeue", "sinfo", "scancel"):
                wrapper = Path(tmp) / cmd
                wrapper.write_text(f'#!/bin/sh\nexec chroot {c.root} env SLURM_CONF={SPEC.conf_path} {cmd} "$@"\n')
                wrapper.chmod(0o755)
            env["PATH"] = f"{tmp}:{env['PATH']}"
        api = CliSlurm(env)
        job = api.job("17")
        free = {n.name: n.gpus_free for n in api.nodes()}
        resv = [r.name for r in api.reservations()]
        ok = (job is not None and job.gpu_alloc == {"a100-1": (1, 5), "a100-2": (2, 3, 6)} and job.reservation == "hops-job-17"
              and free == {"a100-1": 0, "a100-2": 1, "v100-1": 0, "v100-2": 4} and resv == ["hops-job-17"]
              and len(api.jobs()) == 21)
        if not ok:
            sys.exit(f"capture: the adapter read job 17 {job}, free GPUs {free}, reservations {resv}")
        return f"adapter (Slurm {api.dialect.release}, clients on PATH): job 17 on {job.gpu_alloc if job else None}, free {free}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("release", choices=["22.05", "24.11", "26.05"])
    p.add_argument("--root", type=Path, help="the Debian root with Slurm installed (24.11, 26.05)")
    p.add_argument("--out", type=Path, default=HERE)
    a = p.parse_args()
    if (a.release == "22.05") != (a.root is None):
        sys.exit("capture: 22.05 runs on the host (no --root); 24.11 and 26.05 need --root")
    c = Cluster(a.root.resolve() if a.root else None)
    host_cluster = Minicluster(SPEC, job_submit_lua=HOOK) if a.root is None else None
    if host_cluster and STATE.exists():
        host_cluster.down()
        shutil.rmtree(STATE)  # a fresh accounting database: job ids start at 1 again
    try:
        if host_cluster:
            host_cluster.up()
        else:
            c.up_in_root()
        version = c.run(["scontrol", "--version"]).stdout.split()[-1]
        if not version.startswith(a.release):
            sys.exit(f"capture: asked for {a.release}, the cluster runs {version}")
        roles = scenario(c)
        record(c, a.out / a.release, a.release)
        print(f"capture: {check_adapter(c)}")
        print(f"capture: Slurm {version}; wrote {a.out / a.release}; jobs {roles}")
    finally:
        if host_cluster:
            host_cluster.down()
        else:
            c.run(["scancel", "-u", "root"], check=False)
            time.sleep(1)
            c.down_in_root()


if __name__ == "__main__":
    main()
