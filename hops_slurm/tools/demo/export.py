"""The demo's own sacct export: on a minicluster with accounting (slurmdbd), what Slurm recorded of the
demo's jobs, written where ``hops-slurm whatif`` can replay it.

Where it sits: :func:`hops_slurm.tools.demo.run.run_demo` calls :func:`export_sacct` after the last run, before
the cluster goes down; :mod:`hops_slurm.tools.demo.next_steps` prints the ``whatif`` command on the file.
slurmdbd learns of a job's start and end a few seconds late and first keeps a stand-in row for it
(see :mod:`hops_slurm.report.sacct`), so the export is taken again until every demo job is there, ended,
with its partition, or until ``settle`` seconds have passed (then it is written as it is, and said).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from pathlib import Path

from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.whatif.exports import parse_text

EXPORT_FILE = "sacct.json"


def missing_jobs(text: str, job_ids: Collection[str]) -> list[str]:
    """The ``job_ids`` a ``sacct --json`` export does not yet hold as ended jobs with a partition."""
    reading = parse_text(text)
    settled = {j.job_id for j in reading.jobs if j.end is not None and j.partition}
    return sorted(set(job_ids) - settled, key=lambda j: (len(j), j))


def export_sacct(cluster: Minicluster, since: float, job_ids: Collection[str], dest: Path, *, settle: float = 60.0,
                 say: Callable[[str], None] = lambda _line: None) -> Path | None:
    """``sacct --allusers --allocations --json`` from ``since`` (epoch seconds) into ``dest``; None when the
    cluster keeps no accounting."""
    if not cluster.spec.accounting:
        return None
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since))
    argv = ["sacct", "--allusers", "--allocations", "--json", "-S", start]
    deadline = time.monotonic() + settle
    while True:
        text = cluster.run(argv, timeout=60).stdout
        missing = missing_jobs(text, job_ids)
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(2.0)
    if missing:
        say(f"   slurmdbd has not recorded the end of jobs {', '.join(missing)} after {settle:.0f} s; exported as it is")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)
    return dest
