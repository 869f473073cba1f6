"""Bring a minicluster up, report its status, and tear it down (by PID).

``up`` writes the config into the spec's state directory, starts munged, (MariaDB and slurmdbd when
accounting is on), slurmctld and one ``slurmd -N`` per node, and waits until every node is idle. It is
idempotent: daemons already running are kept, missing ones (e.g. a crashed slurmd) are started again.
``down`` cancels jobs, stops exactly the recorded daemons and any process still in their sessions.

Slurm 24.11 and 26.05 run the same way inside a Debian root (roots.py builds it, chroot.py mounts it
and writes the client wrappers); 22.05 is the host's packages.
"""

from __future__ import annotations

import logging
import os
import pwd
import secrets
import shutil
import socket
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from hops_slurm.errors import MiniclusterError
from hops_slurm.hooklua import HOOKS, MODULE_FILES
from hops_slurm.tools.minicluster import conf, processes, roots
from hops_slurm.tools.minicluster.slurmdbd import Accounting
from hops_slurm.tools.minicluster.chroot import RootRuntime
from hops_slurm.tools.minicluster.packages import ensure_mariadb, ensure_packages
from hops_slurm.tools.minicluster.spec import MiniclusterSpec

log = logging.getLogger(__name__)

#: sinfo states of a node whose slurmd answers; "reserved": idle inside a reservation (an engine's gate, or one
#: left by an interrupted run: Slurm keeps reservations across restarts), "planned": held for a backfill plan
READY_STATES = {"idle", "mixed", "allocated", "completing", "reserved", "planned"}


@dataclass(frozen=True)
class NodeStatus:
    name: str
    state: str


@dataclass(frozen=True)
class ClusterStatus:
    conf: Path
    daemons: dict[str, tuple[int, bool]]  # role -> (pid, alive)
    nodes: list[NodeStatus]

    @property
    def up(self) -> bool:
        return bool(self.daemons) and all(alive for _, alive in self.daemons.values())


def hostname() -> str:
    return socket.gethostname().split(".")[0]


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return True
    return False


class Minicluster:
    def __init__(self, spec: MiniclusterSpec, job_submit_lua: Path | None = None) -> None:
        self.spec = spec
        self.state = spec.state_dir
        self.registry = processes.Registry(self.state / "run" / "daemons.json")
        self.job_submit_lua = job_submit_lua
        self.rooted: RootRuntime | None = None
        if spec.slurm != roots.HOST_RELEASE:
            self.rooted = RootRuntime(roots.root_path(spec.slurm), spec.slurm, self.state, spec.conf_path)
        prefix = self.rooted.prefix() if self.rooted else None
        self.accounting = Accounting(spec, prefix, "/usr/sbin/slurmdbd" if self.rooted else None) if spec.accounting else None

    # ----- environment for client commands ---------------------------------------------------------
    @property
    def conf_path(self) -> Path:
        return self.spec.conf_path

    def env(self) -> dict[str, str]:
        """The environment of a client command: SLURM_CONF, and for a root the wrappers first on PATH."""
        env = dict(os.environ, SLURM_CONF=str(self.conf_path))
        if self.rooted:
            env["PATH"] = f"{self.rooted.bin_dir}:{env.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"
        return env

    def user_argv(self, user: str, argv: list[str], cwd: Path | None = None) -> list[str]:
        """``argv`` (a Slurm client) run as ``user`` against this cluster: ``runuser`` on the host,
        ``chroot --userspec`` for a root."""
        if self.rooted:
            return self.rooted.user_argv(user, argv, cwd)
        return ["runuser", "-u", user, "--", "env", f"SLURM_CONF={self.conf_path}", *argv]

    def state_prefixes(self) -> list[str]:
        """How the state directory shows in other processes' open files (also through the root)."""
        out = [str(self.state) + "/"]
        if self.rooted:
            out.append(str(self.rooted.inside(self.state)) + "/")
        return out

    def run(self, argv: list[str], check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command against this cluster (argv list, never a shell)."""
        result = subprocess.run(argv, env=self.env(), capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise MiniclusterError(f"`{' '.join(argv)}` failed ({result.returncode}): {result.stderr.strip()}")
        return result

    # ----- roles -----------------------------------------------------------------------------------
    def roles(self) -> list[str]:
        roles = ["munged"]
        if self.accounting:
            roles += ["mariadb", "slurmdbd"]
        roles += ["slurmctld"] + [f"slurmd:{n}" for n in self.spec.node_names()]
        return roles

    def _ports(self) -> dict[str, int]:
        ports = {"slurmctld": self.spec.ports.slurmctld}
        ports.update({f"slurmd:{n}": self.spec.node_port(n) for n in self.spec.node_names()})
        if self.accounting:
            ports.update({"mariadb": self.spec.ports.mariadb, "slurmdbd": self.spec.ports.slurmdbd})
        return ports

    # ----- up --------------------------------------------------------------------------------------
    def up(self, timeout: float = 60.0) -> ClusterStatus:
        if os.geteuid() != 0:
            raise MiniclusterError("the minicluster runs Slurm daemons as root: run `hops-slurm minicluster up` as root")
        if self.rooted:
            roots.ensure_root(self.spec.slurm)
            if self.spec.accounting:
                ensure_mariadb()
        else:
            ensure_packages(self.spec.accounting)
        daemons = {r: d for r, d in self.registry.load().items() if processes.owns(d)}
        missing = [r for r in self.roles() if r not in daemons]
        if not missing:
            log.info("minicluster already up (%d daemons)", len(daemons))
            return self.wait_ready(timeout)
        ports = self._ports()
        taken = [f"{role} port {ports[role]}" for role in missing if role in ports and port_in_use(ports[role])]
        if taken:
            raise MiniclusterError(
                "ports already in use (another Slurm or minicluster on this host?): "
                + ", ".join(taken)
                + f"; change [ports] in the spec or stop what holds them (`ss -ltnp`)"
            )
        fresh = not daemons
        if fresh:
            self._write_files()
        if self.rooted:
            self.rooted.enter()
        for role in missing:
            daemons[role] = self._start(role, fresh)
            self.registry.save(daemons)
            # MariaDB's first start and slurmdbd creating its tables take longer than a Slurm daemon.
            self._wait_started(daemons[role], timeout=90.0 if role in ("mariadb", "slurmdbd") else 20.0)
        return self.wait_ready(timeout)

    def _write_files(self) -> None:
        s = self.state
        for sub in ("etc", "log", "ctld", "spool", "dev"):
            (s / sub).mkdir(parents=True, exist_ok=True)
        munge_uid, munge_gid = self._munge_ids()
        for sub in ("run", "munge"):
            (s / sub).mkdir(parents=True, exist_ok=True)
            os.chown(s / sub, munge_uid, munge_gid)
            (s / sub).chmod(0o755 if sub == "run" else 0o700)
        key = s / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(secrets.token_bytes(1024))
        os.chown(key, munge_uid, munge_gid)
        key.chmod(0o400)
        for f in (s / "munge").iterdir():  # a state directory first used by the other release's munge user
            os.chown(f, munge_uid, munge_gid)
        for node in self.spec.node_names():
            (s / "spool" / node).mkdir(parents=True, exist_ok=True)
            for dev in conf.device_paths(self.spec, node):
                dev.parent.mkdir(parents=True, exist_ok=True)
                if dev.exists() and not stat.S_ISCHR(dev.stat().st_mode):
                    dev.unlink()
                if not dev.exists():
                    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
                    dev.chmod(0o666)
        host = hostname()
        lua = self.job_submit_lua is not None
        (s / "etc" / "slurm.conf").write_text(conf.render_slurm_conf(self.spec, host, job_submit_lua=lua))
        (s / "etc" / "gres.conf").write_text(conf.render_gres_conf(self.spec))
        cgroup = conf.render_cgroup_conf(self.spec)
        if cgroup:
            (s / "etc" / "cgroup.conf").write_text(cgroup)
        if lua:
            self._install_hook(s / "etc")
        if self.spec.site_hook is not None:
            self._install_site_hook(s / "etc")
        if self.accounting:
            self.accounting.write_files(host)
        # World-readable so non-root users' client commands can read it.
        for f in (s / "etc").iterdir():
            if f.name != "slurmdbd.conf":
                f.chmod(0o644)
        (s / "etc").chmod(0o755)
        self.state.chmod(0o755)

    def _install_site_hook(self, etc: Path) -> None:
        """The spec's ``site_hook`` as job_submit.lua in place of the Hops hook this cluster was given, whose
        module files (:meth:`_install_hook`) stay beside it: a site that keeps its own hook and calls the module."""
        if self.job_submit_lua is None:
            raise MiniclusterError("a spec with site_hook needs the Hops hook too (--job-submit-lua): its module files")
        assert self.spec.site_hook is not None
        shutil.copyfile(self.spec.site_hook, etc / "job_submit.lua")

    def _install_hook(self, etc: Path) -> None:
        """The given job_submit.lua, the Hops module files it loads from beside itself (from beside the given
        hook when they are there, else the shipped ones; a file missing there is missing here too) and the
        hops-partitions file written from the spec's Hops partitions, as the daemon writes it."""
        assert self.job_submit_lua is not None
        shutil.copyfile(self.job_submit_lua, etc / "job_submit.lua")
        source = self.job_submit_lua.parent if (self.job_submit_lua.parent / "hops_submit.lua").exists() else HOOKS
        for name in MODULE_FILES:
            (etc / name).unlink(missing_ok=True)
            if (source / name).exists():
                shutil.copyfile(source / name, etc / name)
        parts = etc / "hops-partitions"
        parts.unlink(missing_ok=True)
        names = self.spec.hops_partition_names()
        if names:
            parts.write_text(conf.render_hops_partitions(names))

    def _munge_ids(self) -> tuple[int, int]:
        if self.rooted:
            return self.rooted.root_uid("munge")
        munge = pwd.getpwnam("munge")
        return munge.pw_uid, munge.pw_gid

    def _start(self, role: str, fresh: bool) -> processes.Daemon:
        s, conf_path = self.state, str(self.conf_path)
        env = self.env()
        prefix = self.rooted.prefix() if self.rooted else None
        if role == "munged":
            argv = [
                "munged", "-F", "--force", f"--socket={s / 'run' / 'munge.socket'}",
                f"--key-file={s / 'munge' / 'munge.key'}", f"--pid-file={s / 'munge' / 'munged.pid'}",
                f"--log-file={s / 'munge' / 'munged.log'}", f"--seed-file={s / 'munge' / 'munged.seed'}",
            ]
            if self.rooted:
                uid, gid = self._munge_ids()
                return processes.start(role, self._abs(argv), s / "log" / "munged.out", env=env,
                                       prefix=self.rooted.prefix(f"{uid}:{gid}"))
            return processes.start(role, self._abs(argv), s / "log" / "munged.out", env=env, user="munge")
        if role in ("mariadb", "slurmdbd"):
            assert self.accounting is not None
            return self.accounting.start(role, env)
        if role == "slurmctld":
            # A fresh cluster starts with clean state (-c); a restarted slurmctld keeps jobs and reservations.
            argv = ["slurmctld", "-D", "-c" if fresh else "-i", "-f", conf_path]
            return processes.start(role, self._abs(argv), s / "log" / "slurmctld.out", env=env, prefix=prefix)
        node = role.split(":", 1)[1]
        argv = ["slurmd", "-D", "-N", node, "-f", conf_path]
        return processes.start(role, self._abs(argv), s / "log" / f"slurmd-{node}.out", env=env, prefix=prefix)

    def _abs(self, argv: list[str]) -> list[str]:
        """The program as an absolute path (inside the root for a root) so /proc cmdline matches."""
        if not self.rooted:
            return _abs(argv)
        for d in ("/usr/sbin", "/usr/bin"):
            if self.rooted.inside(Path(d, argv[0])).exists():
                return [f"{d}/{argv[0]}", *argv[1:]]
        raise MiniclusterError(f"{argv[0]} not found in the Slurm {self.spec.slurm} root {self.rooted.root}; remove it to rebuild")

    def _wait_started(self, daemon: processes.Daemon, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not processes.is_alive(daemon.pid):
                raise MiniclusterError(f"{daemon.role} exited at start; see {daemon.log_path} and {self.state / 'log'}")
            if self._ready_signal(daemon.role):
                return
            time.sleep(0.1)
        raise MiniclusterError(f"{daemon.role} did not come up within {timeout:.0f} s; see {daemon.log_path}")

    def _ready_signal(self, role: str) -> bool:
        if role == "munged":
            return (self.state / "run" / "munge.socket").exists()
        if role in ("mariadb", "slurmdbd"):
            assert self.accounting is not None
            return self.accounting.ready(role, self.env())
        port = self.spec.ports.slurmctld if role == "slurmctld" else self.spec.node_port(role.split(":", 1)[1])
        with socket.socket() as s:
            s.settimeout(0.2)
            return s.connect_ex(("127.0.0.1", port)) == 0

    def node_states(self) -> list[NodeStatus]:
        result = self.run(["sinfo", "-h", "-N", "-o", "%N|%T"], check=False, timeout=10)
        if result.returncode != 0:
            return []
        seen: dict[str, str] = {}
        for line in result.stdout.split():
            name, _, st = line.partition("|")
            seen[name] = st
        return [NodeStatus(n, s) for n, s in seen.items()]

    def wait_ready(self, timeout: float = 60.0) -> ClusterStatus:
        deadline = time.monotonic() + timeout
        resumed = False
        while True:
            nodes = self.node_states()
            states = {n.name: n.state.rstrip("*~#!%$@^-") for n in nodes}
            if len(states) == len(self.spec.node_names()) and all(s in READY_STATES for s in states.values()):
                return self.status()
            if not resumed and any(s.startswith(("down", "drain")) for s in states.values()):
                # A restarted slurmd can come back DOWN; ReturnToService=2 usually handles it.
                down = [n for n, s in states.items() if s.startswith(("down", "drain"))]
                self.run(["scontrol", "update", f"NodeName={','.join(down)}", "State=RESUME"], check=False)
                resumed = True
            if time.monotonic() > deadline:
                raise MiniclusterError(
                    f"nodes not ready after {timeout:.0f} s: {states or 'sinfo gave nothing'}; logs in {self.state / 'log'}"
                )
            time.sleep(0.2)

    # ----- status ----------------------------------------------------------------------------------
    def status(self) -> ClusterStatus:
        daemons = self.registry.load()
        table = {r: (d.pid, processes.owns(d)) for r, d in daemons.items()}
        up = daemons.get("slurmctld") is not None and processes.owns(daemons["slurmctld"])
        return ClusterStatus(conf=self.conf_path, daemons=table, nodes=self.node_states() if up else [])

    # ----- down ------------------------------------------------------------------------------------
    def down(self) -> list[str]:
        """Stop everything ``up`` started; returns the roles stopped. Safe when nothing runs."""
        daemons = self.registry.load()
        if not daemons:
            if self.rooted:
                self.rooted.leave()
            return []
        ctld = daemons.get("slurmctld")
        if ctld and processes.owns(ctld):
            self._cancel_all_jobs()
        sessions = {d.pid for d in daemons.values()}
        stopped = []
        # slurmds first (they end their job steps), then slurmctld (it hands its last records to
        # slurmdbd), slurmdbd, mariadb, munged last.
        rank = {"slurmctld": 1, "slurmdbd": 2, "mariadb": 3, "munged": 4}
        order = sorted(daemons, key=lambda r: rank.get(r, 0))
        for role in order:
            d = daemons[role]
            if processes.owns(d):
                processes.stop_pid(d.pid)
                stopped.append(role)
        for pid in self._strays(sessions):
            log.info("stopping leftover process %d %s", pid, " ".join(processes.cmdline(pid)))
            processes.stop_pid(pid, timeout=0.5)
        self.registry.save({})
        if self.rooted:
            self.rooted.leave()
        return stopped

    def _cancel_all_jobs(self, timeout: float = 15.0) -> None:
        try:
            self._cancel_jobs(timeout)
        except subprocess.TimeoutExpired as exc:  # thousands of jobs on a busy machine: the daemons stop anyway
            log.warning("cancelling the jobs: `%s` timed out; stopping the daemons with jobs left", exc.cmd[0])

    def _cancel_jobs(self, timeout: float) -> None:
        result = self.run(["squeue", "-h", "-o", "%i"], check=False, timeout=10)
        jobs = result.stdout.split()
        if not jobs:
            return
        self.run(["scancel", *jobs], check=False, timeout=60)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            left = self.run(["squeue", "-h", "-t", "running,completing", "-o", "%i"], check=False, timeout=10).stdout.split()
            if not left:
                return
            time.sleep(0.3)

    def _strays(self, sessions: set[int]) -> list[int]:
        """Processes our daemons left behind: anything still in their sessions, and every slurmstepd
        that holds a file of our state directory open (a step's log), with its job's processes."""
        stepd_sessions: set[int] = set()
        state = tuple(self.state_prefixes())
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            argv = processes.cmdline(pid)
            if argv and argv[0].startswith("slurmstepd") and processes.is_alive(pid):
                if any(target.startswith(state) for target in processes.open_files(pid)):
                    sid = processes.session_id(pid)
                    if sid is not None:
                        stepd_sessions.add(sid)
        strays = set(processes.processes_in_sessions(sessions | stepd_sessions))
        strays.discard(os.getpid())
        return sorted(strays)


def _abs(argv: list[str]) -> list[str]:
    """Resolve the program to an absolute path so /proc cmdline matches what we record."""
    prog = shutil.which(argv[0]) or shutil.which(argv[0], path="/usr/sbin:/usr/bin")
    if prog is None:
        raise MiniclusterError(f"{argv[0]} not found; is Debian's Slurm installed?")
    return [prog, *argv[1:]]
