"""Record a larger ``sacct`` export with a busy queue, for the fidelity of ``hops-slurm whatif``'s replay
of Slurm's own policy (issue 23; tests/hops_slurm/whatif/test_whatif_fidelity.py).

Usage (root, from the repository root)::

    .venv/bin/python tests/data/sacct-busy/capture.py --spec SPEC.toml 22.05

``SPEC.toml`` is a minicluster spec with accounting (slurmdbd + MariaDB) and its own ports and state
directory, e.g. tests/data/sacct-busy/capture-cluster.toml (4 nodes x 4 fake v100) with the ports changed to free
ones. The state directory is wiped first (job ids from 1). :data:`JOB_COUNT` GPU jobs drawn from
``random.Random(SEED)`` are submitted on their own schedule over about four minutes (exponential gaps,
mean :data:`MEAN_GAP` s): 1/2/4/8 GPUs (8 = two nodes of 4), sleeping 10-100 s, each with a time
limit of 1 to 3 minutes more than it needs (``-t``, whole minutes: Slurm's backfill plans with it); the
queue stays long for most of the run, so Slurm starts jobs both in order and by backfill. When every job
is over and slurmdbd has every record, writes ``<release>/`` beside this file: ``sacct.json``,
``sacct-parsable2.txt`` (with ``Timelimit``), ``sacct-version.txt`` and ``jobs.txt`` (job id, name,
GPUs, nodes, seconds, limit minutes, submit offset). Everything started is stopped at the end
(``Minicluster.down``, by PID).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import time
from pathlib import Path

from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.tools.minicluster.spec import load_spec
from hops_slurm.whatif.read_parsable2 import FORMAT

HERE = Path(__file__).resolve().parent
SINCE = "2020-01-01"
SEED = 23
JOB_COUNT = 60
MEAN_GAP = 4.0


def draw() -> list[tuple[str, int, int, int, int, float]]:
    """(name, GPUs, nodes, sleep seconds, limit minutes, submit offset s) for each job, reproducibly."""
    rng = random.Random(SEED)
    out, t = [], 0.0
    for i in range(JOB_COUNT):
        gpus = rng.choices((1, 2, 4, 8), weights=(40, 25, 25, 10))[0]
        seconds = rng.randint(10, 100)
        limit = -(-seconds // 60) + rng.randint(1, 3)
        out.append((f"busy-{i:02d}", gpus, 2 if gpus == 8 else 1, seconds, limit, round(t, 1)))
        t += rng.expovariate(1.0 / MEAN_GAP)
    return out


def _wait(pred, what: str, timeout: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            sys.exit(f"capture (busy): {what} not reached in {timeout:.0f} s")
        time.sleep(2.0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("release", choices=["22.05", "24.11", "26.05"])
    p.add_argument("--spec", type=Path, required=True, help="a minicluster spec with accounting and free ports")
    p.add_argument("--out", type=Path, default=HERE)
    a = p.parse_args()
    cluster = Minicluster(load_spec(a.spec, slurm=a.release))
    if not cluster.spec.accounting:
        sys.exit("capture (busy): the spec needs accounting = true (slurmdbd + MariaDB)")
    cluster.down()
    shutil.rmtree(cluster.state, ignore_errors=True)  # a fresh database: job ids from 1
    out = a.out / a.release
    jobs = draw()
    try:
        cluster.up()
        version = cluster.run(["sacct", "--version"]).stdout.strip()
        if a.release not in version:
            sys.exit(f"capture (busy): asked for {a.release}, sacct says {version}")
        submitted = []
        t0 = time.monotonic()
        for name, gpus, nodes, seconds, limit, offset in jobs:
            time.sleep(max(0.0, t0 + offset - time.monotonic()))
            argv = ["sbatch", "--parsable", "-o", "/dev/null", "-D", "/tmp", "-J", name, "-t", str(limit),
                    "-N", str(nodes), f"--gres=gpu:{gpus // nodes}", "--wrap", f"sleep {seconds}"]
            job = cluster.run(argv).stdout.strip().split(";")[0]
            submitted.append((job, name, gpus, nodes, seconds, limit, offset))
        _wait(lambda: not cluster.run(["squeue", "-h"]).stdout.strip(), "every job over", 1800)
        parsable = ["sacct", "--allusers", "--allocations", "--parsable2", "-S", SINCE, f"--format={FORMAT}"]

        def settled() -> bool:  # slurmdbd has every job with its end
            rows = [r.split("|") for r in cluster.run(parsable).stdout.splitlines()[1:]]
            return len(rows) == len(submitted) and all(r[7] not in ("Unknown", "") for r in rows)

        _wait(settled, "sacct listing every job finished", 180)
        out.mkdir(parents=True, exist_ok=True)
        (out / "sacct-version.txt").write_text(version + "\n")
        (out / "sacct-parsable2.txt").write_text(cluster.run(parsable).stdout)
        (out / "sacct.json").write_text(cluster.run(["sacct", "--allusers", "--allocations", "--json", "-S", SINCE]).stdout)
        (out / "jobs.txt").write_text("".join("|".join(map(str, s)) + "\n" for s in submitted))
        print(f"capture (busy): {version}; wrote {out}")
    finally:
        cluster.down()


if __name__ == "__main__":
    main()
