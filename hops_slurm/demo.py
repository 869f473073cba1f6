"""``make demo`` / ``hops-slurm demo``: the minicluster, a few #HOPS jobs, their parsed requirements.

Stage 1 of the demo: bring the local cluster up with the submit hook (hooks/job_submit.lua), submit
the scripts in etc/demo/jobs with plain sbatch; the hook rejects the malformed one with its message
and holds the others with their canonical directives in admin_comment; read them back, place one job
on a named node and show the GPUs it got, then tear the cluster down. Later stages put the engine in
charge of placement.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TextIO

from hops_slurm.directives import HopsDirectives
from hops_slurm.errors import HopsError
from hops_slurm.minicluster.cluster import Minicluster
from hops_slurm.minicluster.spec import MiniclusterSpec, load_spec

ROOT = Path(__file__).resolve().parents[1]
JOBS_DIR = ROOT / "etc" / "demo" / "jobs"
HOOK = ROOT / "hooks" / "job_submit.lua"


def run_demo(out: TextIO, spec: MiniclusterSpec | None = None, keep: bool = False) -> int:
    cluster = Minicluster(spec or load_spec(), job_submit_lua=HOOK)
    print("== bringing up the minicluster (real slurmctld + one slurmd per node, fake GPUs)", file=out)
    status = cluster.up()
    print(f"   SLURM_CONF={status.conf}", file=out)
    print(cluster.run(["sinfo", "-N", "-o", "%N %P %G %T"]).stdout, file=out)
    try:
        job_ids = _submit_all(cluster, out)
        held = _show_queue(cluster, job_ids, out)
        if held:
            _place_first(cluster, held, out)
    finally:
        if keep:
            print(f"== leaving the cluster up (export SLURM_CONF={status.conf}; hops-slurm minicluster down)", file=out)
        else:
            print("== tearing down", file=out)
            stopped = cluster.down()
            print(f"   stopped {len(stopped)} daemons", file=out)
    return 0


def _submit_all(cluster: Minicluster, out: TextIO) -> list[str]:
    print("== sbatch etc/demo/jobs/*.sh (the submit hook validates #HOPS lines and holds the job)", file=out)
    job_ids = []
    for script in sorted(JOBS_DIR.glob("*.sh")):
        result = cluster.run(["sbatch", "--parsable", str(script)], check=False)
        if result.returncode != 0:
            reason = next((l for l in result.stderr.splitlines() if "#HOPS" in l), result.stderr.strip())
            print(f"   {script.name:<14} rejected by sbatch: {reason.removeprefix('sbatch: error: ')}", file=out)
            continue
        job_ids.append(result.stdout.strip().split(";")[0])
        print(f"   {script.name:<14} job {job_ids[-1]}", file=out)
    return job_ids


def _show_queue(cluster: Minicluster, job_ids: list[str], out: TextIO) -> dict[str, HopsDirectives]:
    """Read the jobs back from Slurm; their requirements come from the admin comment the hook set."""
    jobs = json.loads(cluster.run(["squeue", "--json"]).stdout)["jobs"]
    print("== the queue, with each job's #HOPS requirements read back from its admin comment", file=out)
    print(f"{'JOBID':>6} {'NAME':<10} {'STATE':<8} {'REASON':<13} {'GPUS':<10} {'SAMPLES':>10} {'MODEL':<11} LR(max GPUs)", file=out)
    held: dict[str, HopsDirectives] = {}
    for job in jobs:
        job_id = str(job["job_id"])
        if job_id not in job_ids:
            continue
        d = HopsDirectives.from_canonical(job.get("admin_comment") or "")
        held[job_id] = d
        lr = d.lr_for(d.gpus[-1])
        print(
            f"{job_id:>6} {job['name']:<10} {job['job_state']:<8} {job['state_reason']:<13} "
            f"{','.join(map(str, d.gpus)):<10} {d.samples:>10} {d.model:<11} {'-' if lr is None else f'{lr:.6g}'}",
            file=out,
        )
    return held


def _place_first(cluster: Minicluster, held: dict[str, HopsDirectives], out: TextIO) -> None:
    job_id, d = min(held.items(), key=lambda kv: int(kv[0]))
    gpus = max((g for g in d.gpus if g <= 4), default=d.gpus[0])
    print(f"== placing job {job_id} by hand on v100-1 with {gpus} GPUs, then releasing it", file=out)
    cluster.run(["scontrol", "update", f"JobId={job_id}", f"TresPerNode=gres:gpu:v100:{gpus}"])
    cluster.run(["scontrol", "update", f"JobId={job_id}", "NodeList=v100-1"])
    cluster.run(["scontrol", "release", job_id])
    deadline = time.monotonic() + 20
    while True:
        line = cluster.run(["scontrol", "-o", "-d", "show", "job", job_id]).stdout
        fields = dict(t.split("=", 1) for t in line.split() if "=" in t)
        if fields.get("JobState") == "RUNNING" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if fields.get("JobState") != "RUNNING":
        raise HopsError(f"demo job {job_id} did not start: {fields.get('JobState')} {fields.get('Reason')}")
    print(f"   job {job_id}: {fields['JobState']} on {fields['NodeList']}, {fields.get('GRES', '')}", file=out)
