"""Record real ``sacct`` exports for ``hops-slurm whatif``'s tests (tests/hops_slurm/whatif/).

Usage (root, from the repository root; inside a test namespace, see docs/whatif.md)::

    .venv/bin/python tests/data/sacct/capture.py 22.05     # the host's Debian 12 Slurm
    .venv/bin/python tests/data/sacct/capture.py 24.11     # in the Debian root (built on first use)
    .venv/bin/python tests/data/sacct/capture.py 26.05

Brings up the local cluster of ``capture-cluster.toml`` (2 nodes x 4 fake v100 GPUs, slurmdbd and
MariaDB, a fresh state directory so job ids start at 1) on that release, runs :data:`JOBS` (GPU jobs of
1 to 8 GPUs that queue behind each other, one that fails, one cancelled while running, one cancelled
while pending (it asks for the whole cluster; a held job would never be eligible, and sacct leaves
those out), one without GPUs), waits until they are over and slurmdbd has every record, and writes
``<release>/`` beside this file:

* ``sacct.json``: ``sacct --allusers --allocations --json -S 2020-01-01``
* ``sacct-parsable2.txt``: ``sacct --allusers --allocations --parsable2 -S 2020-01-01 --format=...``
  (the field list whatif documents, :data:`hops_slurm.whatif.read_parsable2.FORMAT`)
* ``sacct-steps-parsable2.txt``: the same without ``--allocations`` (step lines included)
* ``sacct-version.txt``, ``jobs.txt`` (what was submitted: job id, name, GPUs, sleep, fate)

Everything started is stopped at the end (``Minicluster.down``, by PID).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.tools.minicluster.spec import load_spec
from hops_slurm.whatif.read_parsable2 import FORMAT

HERE = Path(__file__).resolve().parent
SINCE = "2020-01-01"

#: (name, GPUs, nodes, seconds of sleep, fate): "ok", "fail" (exit 3), "cancel-running", "cancel-pending"
JOBS = (
    ("train-a", 4, 1, 40, "ok"),
    ("train-b", 2, 1, 30, "ok"),
    ("train-c", 2, 1, 50, "ok"),
    ("wide-d", 8, 2, 30, "ok"),
    ("small-e", 1, 1, 20, "ok"),
    ("broken-f", 1, 1, 5, "fail"),
    ("train-g", 4, 1, 20, "ok"),
    ("stopped-h", 2, 1, 120, "cancel-running"),
    ("never-i", 8, 2, 10, "cancel-pending"),  # the whole cluster, behind the others: pends, then cancelled
    ("cpu-j", 0, 1, 5, "ok"),
    ("train-k", 1, 1, 45, "ok"),
    ("train-l", 2, 1, 25, "ok"),
    ("train-m", 4, 1, 30, "ok"),
    ("small-n", 1, 1, 10, "ok"),
)


def _wait(pred, what: str, timeout: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            sys.exit(f"capture: {what} not reached in {timeout:.0f} s")
        time.sleep(1.0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("release", choices=["22.05", "24.11", "26.05"])
    p.add_argument("--out", type=Path, default=HERE)
    a = p.parse_args()
    cluster = Minicluster(load_spec(HERE / "capture-cluster.toml", slurm=a.release))
    cluster.down()
    shutil.rmtree(cluster.state, ignore_errors=True)  # a fresh database: job ids from 1
    out = a.out / a.release
    try:
        cluster.up()
        version = cluster.run(["sacct", "--version"]).stdout.strip()
        if a.release not in version:
            sys.exit(f"capture: asked for {a.release}, sacct says {version}")
        submitted = []
        for name, gpus, nodes, seconds, fate in JOBS:
            argv = ["sbatch", "--parsable", "-o", "/dev/null", "-D", "/tmp", "-J", name, "-t", "5", "-N", str(nodes)]
            if gpus:
                argv.append(f"--gres=gpu:{gpus // nodes}")
            argv += ["--wrap", f"sleep {seconds}; exit 3" if fate == "fail" else f"sleep {seconds}"]
            job = cluster.run(argv).stdout.strip().split(";")[0]
            submitted.append((job, name, gpus, seconds, fate))
            time.sleep(0.5)
        by_fate = {fate: job for job, _n, _g, _s, fate in submitted}
        time.sleep(3)
        cluster.run(["scancel", by_fate["cancel-pending"]])

        def state(job: str) -> str:
            return cluster.run(["squeue", "-h", "-j", job, "-o", "%T"], check=False).stdout.strip()

        _wait(lambda: state(by_fate["cancel-running"]) == "RUNNING", "the job to cancel running", 240)
        time.sleep(8)
        cluster.run(["scancel", by_fate["cancel-running"]])
        _wait(lambda: not cluster.run(["squeue", "-h"]).stdout.strip(), "every job over", 420)
        ids = [s[0] for s in submitted]
        parsable = ["sacct", "--allusers", "--allocations", "--parsable2", "-S", SINCE, f"--format={FORMAT}"]

        last: list[str] = []

        def settled() -> bool:  # slurmdbd has every job, each that started with its partition (not a
            # stand-in row, see hops_slurm/report/sacct.py) and its end
            text = cluster.run(parsable).stdout
            last[:] = [text]
            rows = [r.split("|") for r in text.splitlines()[1:]]
            return len(rows) == len(ids) and all(r[7] != "Unknown" and (r[3] or r[6] in ("None", "Unknown"))
                                                 for r in rows)

        try:
            _wait(settled, "sacct listing every job finished", 120)
        except SystemExit:
            print(last[0] if last else "(no sacct output)", file=sys.stderr)
            raise
        out.mkdir(parents=True, exist_ok=True)
        (out / "sacct-version.txt").write_text(version + "\n")
        (out / "sacct-parsable2.txt").write_text(cluster.run(parsable).stdout)
        steps = [a for a in parsable if a != "--allocations"]
        (out / "sacct-steps-parsable2.txt").write_text(cluster.run(steps).stdout)
        (out / "sacct.json").write_text(cluster.run(["sacct", "--allusers", "--allocations", "--json", "-S", SINCE]).stdout)
        (out / "jobs.txt").write_text("".join(f"{j}|{n}|{g}|{s}|{f}\n" for j, n, g, s, f in submitted))
        print(f"capture: {version}; wrote {out}")
    finally:
        cluster.down()


if __name__ == "__main__":
    main()
