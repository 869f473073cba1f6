"""Measuring aid, not a test: the engine's start and rounds with N pending jobs on a live minicluster,
with the Slurm processes each one ran.

``sudo .venv/bin/python tests/hops_slurm/engine/live_round_timing.py 5000 SPEC.toml`` brings up the
minicluster of ``SPEC.toml`` with the submit hook (after taking it down and deleting its saved job and
reservation state, so it starts empty: use a spec of your own, never a shared cluster's), submits N
``#HOPS`` jobs (the shapes of ``hops-slurm bench engine``), opens one engine (its start reconciles: an
admin hold for every new job), then times two rounds as the daemon runs them
(:func:`hops_slurm.tools.bench.engine_bench.timed_round`) and prints each one's seconds and Slurm processes by
command; the cluster is taken down at the end. A shorter live companion to ``hops-slurm bench load``
(docs/results/load.md).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hops_slurm.tools.bench.engine_bench import SCRIPT, SHAPES, timed_round, wait_profiled
from hops_slurm.config import parse_config
from hops_slurm.engine.engine import Engine
from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.tools.minicluster.spec import load_spec
from hops_slurm.slurm.cli import CliSlurm

ROOT = Path(__file__).resolve().parents[3]


def main(argv: list[str]) -> int:
    n, spec = int(argv[0]), load_spec(Path(argv[1]))
    cluster = Minicluster(spec, job_submit_lua=ROOT / "hooks" / "job_submit.lua")
    cluster.down()
    saved = Path(spec.state_dir) / "ctld"  # slurmctld's StateSaveLocation: start without old jobs
    for f in glob.glob(str(saved / "job_state*")) + glob.glob(str(saved / "resv_state*")):
        os.remove(f)
    for d in glob.glob(str(saved / "hash.*")):
        shutil.rmtree(d)
    cluster.up()
    work = Path(tempfile.mkdtemp(prefix="hops-live-round-"))
    os.chmod(work, 0o755)
    env = cluster.env()

    def submit(i: int) -> None:
        gpus, model = SHAPES[i % len(SHAPES)]
        script = work / f"job{i}.sh"
        script.write_text(SCRIPT.format(gpus=gpus, samples=(1 + i % 7) * 100000, model=model, top=gpus.split(",")[-1]))
        subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", "-D", str(work), str(script)], env=env, check=True,
                       capture_output=True, timeout=60)

    try:
        t0 = time.time()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(submit, range(n)))
        print(f"submitted {n} jobs in {time.time() - t0:.0f} s", flush=True)
        cfg = parse_config({"scheduler": {"round_length": 360, "queue_refresh": 30}, "planner": {"time_limit": 30},
                            "engine": {"probe_size": "tiny", "probe_iterations": 3, "probe_device": "cpu",
                                       "settle_timeout": 10},
                            "paths": {"state_dir": str(work / "state")}})
        api = CliSlurm(env)
        t0 = time.time()
        with Engine(cfg, api=api, env=env) as engine:
            print(f"engine start (reconcile: an admin hold for every new job) {time.time() - t0:.1f} s, "
                  f"{sum(api.calls.values())} Slurm processes", flush=True)
            print(f"profiled in {wait_profiled(engine, n, timeout=900):.0f} s", flush=True)
            for r in (1, 2):
                before = dict(api.calls)
                row = timed_round(engine, r)
                ran = {k: v - before.get(k, 0) for k, v in api.calls.items() if v - before.get(k, 0)}
                print(f"round {r}: {row['total']:.2f} s (read {row['read']:.2f}, plan {row['plan']:.2f}, enact "
                      f"{row['enact']:.2f}); placed {row['placed']}, started {row['started']}, preempted "
                      f"{row['preempted']}; {sum(ran.values())} Slurm processes: {ran}", flush=True)
    finally:
        cluster.down()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
