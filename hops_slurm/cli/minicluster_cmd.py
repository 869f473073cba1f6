"""``hops-slurm minicluster up|down|status|env|install``: the local fake-GPU Slurm cluster."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

from hops_slurm.tools.minicluster import roots
from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.tools.minicluster.packages import ensure_mariadb, ensure_packages
from hops_slurm.tools.minicluster.spec import default_spec_path, load_spec


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("minicluster", help="a local multi-node fake-GPU Slurm cluster (real daemons)",
                       description="A local multi-node fake-GPU Slurm cluster: real slurmctld and one slurmd "
                                   "per node on this host, GPUs as character devices.")
    p.add_argument("action", choices=["up", "down", "status", "env", "install"],
                   help="up: start it (idempotent); down: stop what up started, by PID; status: its daemons; "
                        "env: the shell lines that point Slurm's clients at it; install: the Slurm packages "
                        "(or Debian root) it needs")
    p.add_argument("--spec", type=Path, default=None, help=f"cluster spec TOML (default {default_spec_path()})")
    p.add_argument("--slurm", choices=roots.RELEASES, default=None,
                   help="Slurm release (default: the spec's `slurm`, else 22.05 = the host's packages; "
                        "24.11 / 26.05 run in a Debian root built under /var/lib/hops-slurm/roots)")
    p.add_argument("--job-submit-lua", type=Path, default=None, help="install this job_submit.lua (JobSubmitPlugins=lua), with the Hops module files from beside it, else the shipped ones, and hops-partitions from the spec")
    p.add_argument("--json", action="store_true", help="status as JSON")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec, slurm=args.slurm)
    if args.action == "install":
        if spec.slurm == roots.HOST_RELEASE:
            installed = ensure_packages(spec.accounting)
            print("installed: " + " ".join(installed) if installed else "Slurm packages present")
        else:
            installed = ensure_mariadb() if spec.accounting else []
            root = roots.ensure_root(spec.slurm)
            print(f"Slurm {roots.slurm_version(root)} root ready: {root}" + (f"; installed {' '.join(installed)}" if installed else ""))
        return 0
    cluster = Minicluster(spec, job_submit_lua=args.job_submit_lua)
    if args.action == "env":
        if cluster.rooted and not cluster.rooted.bin_dir.is_dir():
            cluster.rooted.write_wrappers()  # so PATH never falls through to the host's 22.05 clients
        for line in _client_env(cluster):
            print(line)
        return 0
    if args.action == "up":
        st = cluster.up()
        print(f"minicluster {spec.cluster_name} up on Slurm {spec.slurm}: {len(st.nodes)} nodes; "
              + "; ".join(_client_env(cluster)))
        return 0
    if args.action == "down":
        stopped = cluster.down()
        print(f"stopped {len(stopped)} daemons" if stopped else "minicluster was not running")
        return 0
    st = cluster.status()
    if args.json:
        print(json.dumps({
            "conf": str(st.conf), "up": st.up,
            "daemons": {r: {"pid": p, "alive": a} for r, (p, a) in st.daemons.items()},
            "nodes": {n.name: n.state for n in st.nodes},
        }, indent=1))
    else:
        print(f"minicluster {spec.cluster_name}: {'up' if st.up else 'down'} (SLURM_CONF={st.conf})")
        for role, (pid, alive) in st.daemons.items():
            print(f"  {role:<16} pid {pid:<8} {'running' if alive else 'gone'}")
        for n in st.nodes:
            print(f"  node {n.name:<12} {n.state}")
    return 0 if st.up or args.action == "status" else 1


def _client_env(cluster: Minicluster) -> list[str]:
    """Shell lines giving a client what it needs: SLURM_CONF, and for a root the directory of wrapper
    commands (they run the root's clients under chroot) first on PATH."""
    lines = [f"export SLURM_CONF={shlex.quote(str(cluster.conf_path))}"]
    if cluster.rooted:
        lines.append(f'export PATH={shlex.quote(str(cluster.rooted.bin_dir))}:"$PATH"')
    return lines
