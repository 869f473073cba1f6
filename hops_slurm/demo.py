"""``make demo`` / ``hops-slurm demo``: the minicluster, a few #HOPS jobs, their parsed requirements.

Stage 1 of the demo (Foundation): bring the local cluster up, submit the scripts in etc/demo/jobs
held, record each job's canonical directives in its admin comment (what the submit hook will do),
reject the malformed one with its message, place one job on a named node and show the GPUs it got,
then tear the cluster down. Later stages put the engine in charge of placement.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TextIO

from hops_slurm.directives import COMMENT_PREFIX, HopsDirectives, parse_script
from hops_slurm.errors import DirectiveError, HopsError
from hops_slurm.minicluster.cluster import Minicluster
from hops_slurm.minicluster.spec import load_spec

JOBS_DIR = Path(__file__).resolve().parents[1] / "etc" / "demo" / "jobs"


def run_demo(out: TextIO, spec_path: Path | None = None, keep: bool = False) -> int:
    cluster = Minicluster(load_spec(spec_path))
    print("== bringing up the minicluster (real slurmctld + one slurmd per node, fake GPUs)", file=out)
    status = cluster.up()
    print(f"   SLURM_CONF={status.conf}", file=out)
    print(cluster.run(["sinfo", "-N", "-o", "%N %P %G %T"]).stdout, file=out)
    try:
        submitted = _submit_all(cluster, out)
        _show_queue(cluster, submitted, out)
        if submitted:
            _place_first(cluster, submitted, out)
    finally:
        if keep:
            print(f"== leaving the cluster up (export SLURM_CONF={status.conf}; hops-slurm minicluster down)", file=out)
        else:
            print("== tearing down", file=out)
            stopped = cluster.down()
            print(f"   stopped {len(stopped)} daemons", file=out)
    return 0


def _submit_all(cluster: Minicluster, out: TextIO) -> dict[str, HopsDirectives]:
    print("== submitting etc/demo/jobs/*.sh", file=out)
    submitted: dict[str, HopsDirectives] = {}
    for script in sorted(JOBS_DIR.glob("*.sh")):
        try:
            directives = parse_script(script.read_text())
        except DirectiveError as exc:
            print(f"   {script.name:<14} rejected: {exc}", file=out)
            continue
        if directives is None:
            print(f"   {script.name:<14} no #HOPS lines: left to plain Slurm", file=out)
            continue
        job_id = cluster.run(["sbatch", "--parsable", "-H", "-p", "hops", str(script)]).stdout.strip().split(";")[0]
        cluster.run(["scontrol", "update", f"JobId={job_id}", f"AdminComment={COMMENT_PREFIX}{directives.canonical()}"])
        submitted[job_id] = directives
        print(f"   {script.name:<14} job {job_id}, held", file=out)
    return submitted


def _show_queue(cluster: Minicluster, submitted: dict[str, HopsDirectives], out: TextIO) -> None:
    jobs = json.loads(cluster.run(["squeue", "--json"]).stdout)["jobs"]
    print("== the queue, with each job's #HOPS requirements read back from its admin comment", file=out)
    header = f"{'JOBID':>6} {'NAME':<10} {'STATE':<8} {'REASON':<13} {'GPUS':<10} {'SAMPLES':>10} {'MODEL':<11} LR(max GPUs)"
    print(header, file=out)
    for job in jobs:
        job_id = str(job["job_id"])
        if job_id not in submitted:
            continue
        d = HopsDirectives.from_canonical(job.get("admin_comment") or "")
        lr = d.lr_for(d.gpus[-1])
        print(
            f"{job_id:>6} {job['name']:<10} {job['job_state']:<8} {job['state_reason']:<13} "
            f"{','.join(map(str, d.gpus)):<10} {d.samples:>10} {d.model:<11} {'-' if lr is None else f'{lr:.6g}'}",
            file=out,
        )


def _place_first(cluster: Minicluster, submitted: dict[str, HopsDirectives], out: TextIO) -> None:
    job_id, d = next(iter(submitted.items()))
    gpus = max(g for g in d.gpus if g <= 4)
    print(f"== placing job {job_id} by hand on v100-1 with {gpus} GPUs, then releasing it", file=out)
    for update in ([f"JobId={job_id}", f"TresPerNode=gres:gpu:v100:{gpus}"], [f"JobId={job_id}", "NodeList=v100-1"]):
        cluster.run(["scontrol", "update", *update])
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
