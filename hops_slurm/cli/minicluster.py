"""``hops-slurm minicluster up|down|status|env|install``: the local fake-GPU Slurm cluster."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hops_slurm.minicluster.cluster import Minicluster
from hops_slurm.minicluster.packages import ensure_packages
from hops_slurm.minicluster.spec import default_spec_path, load_spec


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("minicluster", help="a local multi-node fake-GPU Slurm cluster (real daemons)")
    p.add_argument("action", choices=["up", "down", "status", "env", "install"])
    p.add_argument("--spec", type=Path, default=None, help=f"cluster spec TOML (default {default_spec_path()})")
    p.add_argument("--job-submit-lua", type=Path, default=None, help="install this job_submit.lua (JobSubmitPlugins=lua)")
    p.add_argument("--json", action="store_true", help="status as JSON")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    if args.action == "install":
        installed = ensure_packages(spec.accounting)
        print("installed: " + " ".join(installed) if installed else "Slurm packages present")
        return 0
    cluster = Minicluster(spec, job_submit_lua=args.job_submit_lua)
    if args.action == "env":
        print(f"export SLURM_CONF={cluster.conf_path}")
        return 0
    if args.action == "up":
        st = cluster.up()
        print(f"minicluster {spec.cluster_name} up: {len(st.nodes)} nodes; export SLURM_CONF={st.conf}")
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
