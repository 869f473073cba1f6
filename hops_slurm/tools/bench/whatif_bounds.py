"""Benchmark ``whatif-bounds`` (issue 24): ``hops-slurm whatif`` bounded by its input, not its numbers.

Data flow: small hostile exports (40 overlapping jobs of 4096 GPUs, of 1024 GPUs with and without node
lists) and generated histories of 10,000 to 100,000 rows (:mod:`hops_slurm.tools.bench.sacct_history`) ->
:func:`hops_slurm.whatif.pipeline.run_whatif`, or its reading steps (read, select, assumptions, the
recorded side) for the large ones -> wall time, and peak memory (:mod:`tracemalloc`, a second run) ->
``docs/results/whatif-bounds.md``. Measures; asserts nothing.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Mapping
from pathlib import Path

from hops_slurm.tools.bench import sacct_history
from hops_slurm.tools.bench.machine import load, machine_line
from hops_slurm.errors import HopsError
from hops_slurm.sim.cluster_spec import ClusterSpec
from hops_slurm.whatif.assumptions import Assumptions, derive_all
from hops_slurm.whatif.exports import read_export, select
from hops_slurm.whatif.pipeline import run_whatif
from hops_slurm.whatif.replay import infer_cluster, recorded_records
from hops_slurm.tools import results_header

NAME = "whatif-bounds"
IN_ALL = False  # a few minutes (100,000 rows, twice): run by name
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ()


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


T0 = 1_767_225_600
SIZES = (10_000, 50_000, 100_000)


def _overlapping(n: int, gpus: int, nodes: int | None) -> str:
    rows = []
    for i in range(n):
        row: dict[str, object] = {"job_id": i + 1, "name": f"big{i}", "user": "u", "partition": "gpu",
                                  "state": {"current": "COMPLETED"},
                                  "time": {"submission": T0 + i, "start": T0 + i, "end": T0 + 3600 + i},
                                  "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": gpus}]}}
        if nodes:
            row["nodes"] = f"n[1-{nodes}]"
        rows.append(row)
    return json.dumps({"meta": {"plugin": {"type": "openapi/dbv0.0.38"}}, "jobs": rows})


def _measure(fn: Callable[[], str]) -> tuple[float, float, str]:
    """(seconds, peak MiB of Python allocations, what it said): the time of one run, the memory of another."""
    start = time.perf_counter()
    said = fn()
    took = time.perf_counter() - start
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return took, peak, said


def _whatif(path: Path, cluster: ClusterSpec | None = None) -> Callable[[], str]:
    def run() -> str:
        try:
            result = run_whatif(path, cluster, Assumptions())
        except HopsError as exc:
            return f"error: {str(exc).splitlines()[0][:240]}"
        return f"answer: {len(result.derived)} jobs on {result.cluster.total_gpus} GPUs"
    return run


def _reading(path: Path) -> Callable[[], str]:
    def run() -> str:
        selection = select(read_export(path))
        cluster = infer_cluster(selection.jobs)
        derived = derive_all(selection.jobs, Assumptions(), cluster.total_gpus, 8, selection.reading.problems)
        recorded_records(selection.jobs, derived)
        return f"{len(derived)} jobs on {cluster.total_gpus} GPUs"
    return run


def run(out_dir: Path) -> Path:
    before = load()
    lines = ["# hops-slurm whatif bounded by its input (issue 24)", "",
             "Written by `hops-slurm bench whatif-bounds` (hops_slurm/tools/bench/whatif_bounds.py). Time: one run; memory: the",
             "peak of Python's allocations (tracemalloc) in a second run of the same.", "",
             "## 40 overlapping jobs", "",
             "Before (issue 24, on 5268481): 40 overlapping jobs of 4096 GPUs (a 40 KB file) ran more than 7 minutes and",
             "took more than 1.2 GB without an answer (the cluster inferred as the sum of the jobs' GPUs); 20 of them took",
             "213 s.", "",
             "| Export (JSON, 40 jobs of 1 h, all started within 40 s) | Result | Wall (s) | Peak memory (MiB) |",
             "|---|---|---|---|"]
    one_k = ClusterSpec.model_validate({"name": "c1024", "server_kind": [{"name": "v100", "gpu_type": "v100", "gpus": 8,
                                                                         "count": 128}]})
    with tempfile.TemporaryDirectory(prefix="hops-bench-whatif-") as tmp:
        cases = [("4096 GPUs each, on n[1-512]", _overlapping(40, 4096, 512), None),
                 ("1024 GPUs each, no node list", _overlapping(40, 1024, None), None),
                 ("1024 GPUs each, on n[1-128]", _overlapping(40, 1024, 128), None),
                 ("1024 GPUs each, `--cluster` of 128 x 8 GPUs", _overlapping(40, 1024, 128), one_k)]
        for i, (label, text, cluster) in enumerate(cases):
            path = Path(tmp) / f"case{i}.json"
            path.write_text(text)
            took, peak, said = _measure(_whatif(path, cluster))
            lines.append(f"| {label} ({len(text) / 1000:.0f} KB) | {said} | {took:.2f} | {peak:.1f} |")
        lines += ["", "## Reading is linear in rows", "",
                  "A generated history (`hops_slurm.tools.bench.sacct_history.generate(n)`, as `sacct --json`): read, check,",
                  "select, infer the cluster, derive the simulator jobs and the recorded side (everything before the",
                  "simulation, whose time depends on the jobs' sizes and the cluster, not on the file).", "",
                  "| Rows | File (MB) | Wall (s) | us per row | Peak memory (MiB) | KiB per row |", "|---|---|---|---|---|---|"]
        for n in SIZES:
            path = Path(tmp) / f"history{n}.json"
            path.write_text(sacct_history.to_json(sacct_history.generate(n)))
            took, peak, _said = _measure(_reading(path))
            lines.append(f"| {n} | {path.stat().st_size / 1e6:.1f} | {took:.2f} | {1e6 * took / n:.0f} | {peak:.0f} | "
                         f"{peak * 1024 / n:.2f} |")
            os.unlink(path)
    lines += ["", machine_line(before)]
    path = out_dir / "whatif-bounds.md"
    return results_header.write(path, "\n".join(lines) + "\n", generator=f"{__name__}:run",
                                 command=command(os.environ))
