"""Enactment latency on a live minicluster: read Slurm's state, admin-hold new jobs, enact round plans.

Where it sits: a measurement, not a test (``python -m hops_slurm.tools.slurm_latency [SPEC.toml OUT.md [N]]``;
without arguments: the demo's cluster, etc/minicluster/default.toml, into docs/results/slurm-enactment.md).
It brings the spec's minicluster up (with the submit hook), submits ``N`` real ``#HOPS`` jobs (pending,
held by the hook), and times the live engine's Slurm-facing steps of a round: reading jobs, nodes and
reservations; holding the new jobs; enacting a plan that fills every GPU with 1-GPU jobs (place +
reservation + release + read-back + detach), then a re-plan that preempts half of them and starts
others. Planning itself (the ILP) is the planner's and is not included. Tears the cluster down after.
"""

from __future__ import annotations

import shlex
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from hops_slurm.bundled import bundle_root
from hops_slurm.journal import Journal
from hops_slurm.tools import results_header
from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.tools.minicluster.spec import load_spec
from hops_slurm.slurm.cli import CliSlurm
from hops_slurm.slurm.enact import Enactor

HOOK = bundle_root() / "hooks" / "job_submit.lua"
SCRIPT = "#!/bin/bash\n#HOPS gpus=1,2,4 samples=1M batch-size=32 model=resnet50 lr=0.1@4\nsleep 600\n"


def _timed(fn):  # noqa: ANN001, ANN202
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def measure(spec_path: Path, n_jobs: int = 100, reads: int = 5) -> dict[str, object]:
    cluster = Minicluster(load_spec(spec_path), job_submit_lua=HOOK)
    cluster.down()
    cluster.up()
    try:
        api = CliSlurm(cluster.env())
        work = Path(tempfile.mkdtemp(prefix="hops-latency-"))
        script = work / "job.sh"
        script.write_text(SCRIPT)
        ids = [cluster.run(["sbatch", "--parsable", "-o", "/dev/null", "-D", str(work), str(script)]).stdout.strip()
               for _ in range(n_jobs)]
        enactor = Enactor(api, Journal(work / "journal.db"), env_dir=work / "env", settle_timeout=60.0)
        read_times = []
        for _ in range(reads):
            _, dt = _timed(lambda: (api.jobs(), api.nodes(), api.reservations()))
            read_times.append(dt)
        held, hold_s = _timed(enactor.hold_new)
        slots = [n.name for n in api.nodes() for _ in range(n.gpus_total)]
        first = {j: ({slots[i]: 1} if i < len(slots) else None) for i, j in enumerate(ids)}
        r1, round1_s = _timed(lambda: enactor.apply(first, round_id="r1"))
        # re-plan: the first half of the running jobs make way for the same number of waiting ones
        half = len(slots) // 2
        second = dict(first)
        for k in range(half):
            second[ids[k]] = None
            second[ids[len(slots) + k]] = {slots[k]: 1}
        r2, round2_s = _timed(lambda: enactor.apply(second, round_id="r2"))
        running = sum(1 for j in api.jobs() if j.job_id in ids and j.state == "RUNNING")
        cluster.run(["scancel", *ids], check=False)
        shutil.rmtree(work, ignore_errors=True)
        return {
            "jobs": n_jobs, "gpus": len(slots), "read_median_s": statistics.median(read_times), "read_max_s": max(read_times),
            "hold_new_s": hold_s, "held": len(held), "round1_s": round1_s, "round1_started": len(r1.started),
            "round1_verified": len(r1.verified), "round2_s": round2_s, "round2_preempted": len(r2.preempted),
            "round2_started": len(r2.started), "round2_kept": len(r2.kept), "running_after": running,
            "refused": len(r1.refused) + len(r2.refused), "mismatched": len(r1.mismatched) + len(r2.mismatched),
        }
    finally:
        cluster.down()


def report(m: dict[str, object]) -> str:
    return "\n".join([
        "# Slurm enactment latency (live minicluster)",
        "",
        f"{m['jobs']} pending `#HOPS` jobs, {m['gpus']} fake GPUs (Slurm 22.05, CLI backend, one scontrol call per step).",
        "Produced by `python -m hops_slurm.tools.slurm_latency SPEC OUT`; planning (the ILP) is not included.",
        "",
        "| step | seconds | what |",
        "|---|---|---|",
        f"| read state | {m['read_median_s']:.3f} (max {m['read_max_s']:.3f}) | squeue --json + sinfo --json + reservations |",
        f"| hold new jobs | {m['hold_new_s']:.2f} | {m['held']} admin holds (once per job) |",
        f"| round 1 enact | {m['round1_s']:.2f} | {m['round1_started']} jobs placed, released, read back, detached ({m['round1_verified']} verified) |",
        f"| round 2 enact | {m['round2_s']:.2f} | {m['round2_preempted']} preempted, {m['round2_started']} started, {m['round2_kept']} kept |",
        "",
        f"Running afterwards: {m['running_after']}; refused: {m['refused']}; allocation mismatches: {m['mismatched']}.",
        "",
    ])


#: what a run without arguments measures and where it writes (from the checkout's root)
DEFAULT_ARGS = ["etc/minicluster/default.toml", "docs/results/slurm-enactment.md"]
PROGRAM = "python -m hops_slurm.tools.slurm_latency"


def command(env: Mapping[str, str], argv: Sequence[str] = ()) -> str:
    """The command a run with ``argv`` writes in its results header (the committed document: no arguments)."""
    return " ".join([PROGRAM, *([shlex.join(argv)] if argv else [])])


def main(argv: list[str]) -> int:
    spec, out = Path((argv or DEFAULT_ARGS)[0]), Path((argv or DEFAULT_ARGS)[1])
    m = measure(spec, int(argv[2]) if len(argv) > 2 else 100)
    results_header.write(out, report(m), generator=f"{__name__}:main", command=command({}, argv))
    print(out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
