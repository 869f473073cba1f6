"""Benchmark ``whatif``: ``hops-slurm whatif`` on a recorded sacct export and on 10,000 generated jobs.

Data flow: (1) tests/data/sacct/22.05/sacct.json (recorded from the local cluster with slurmdbd by
tests/data/sacct/capture.py; present in a source checkout) replayed on its simulated twin
(tests/data/sacct/replay-cluster.toml) -> the side-by-side table and the report's plots under
docs/results/whatif/; (2) a generated history of ``HOPS_BENCH_WHATIF_JOBS`` jobs (default 10,000;
:mod:`hops_slurm.tools.bench.sacct_history`) as ``sacct --json`` and ``--parsable2`` -> the wall time of each
step (read, assumptions, each simulated policy) -> docs/results/whatif.md. Long (minutes): not in
``bench all``; run it by name. Measures; asserts nothing.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from hops_slurm.tools.bench import sacct_history
from hops_slurm.tools.bench.machine import load, machine_line
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.costs import CostModel, parse_checkpoint_seconds
from hops_slurm.sim.runner import Options
from hops_slurm.whatif import output
from hops_slurm.whatif.assumptions import Assumptions
from hops_slurm.whatif.exports import read_export
from hops_slurm.whatif.fidelity import fidelity, fidelity_line
from hops_slurm.whatif.pipeline import WhatIf, run_whatif

NAME = "whatif"
IN_ALL = False
RECORDED = Path(__file__).resolve().parents[3] / "tests" / "data" / "sacct"
#: the recorded jobs are short local ones: the demo's measured start (a few seconds) and a 1 s checkpoint
RECORDED_OPTIONS = ("--round-seconds", "30", "--refresh-seconds", "5", "--process-start-seconds", "5",
                    "--checkpoint-seconds", "1")
RECORDED_COSTS = CostModel(process_start=5.0).with_checkpoint_seconds(parse_checkpoint_seconds("1"))


def _table(result: WhatIf) -> str:
    return output.markdown(result.rows, "x").split("\n", 2)[2].rstrip("\n")


def _fidelity(result: WhatIf) -> list[str]:
    f = fidelity(result.rows)
    return [f"hops-slurm: whatif: {fidelity_line(f)}"] if f is not None else []


def _recorded(out_dir: Path) -> list[str]:
    export = RECORDED / "22.05" / "sacct.json"
    if not export.is_file():
        return ["## On a recorded sacct export", "", f"Not run: {export} is not here (a source checkout has it)."]
    cluster = load_cluster(RECORDED / "replay-cluster.toml")
    options = Options(round_seconds=30.0, refresh_seconds=5.0, costs=RECORDED_COSTS)
    start = time.perf_counter()
    result = run_whatif(export, cluster, Assumptions(), options=options)
    took = time.perf_counter() - start
    folder = out_dir / "whatif"
    meta = {"export": "tests/data/sacct/22.05/sacct.json", "cluster": cluster.name}
    plots = output.write_out(folder, result.sides, result.rows, result.derived, cluster, result.problems, meta,
                             "What-if on tests/data/sacct/22.05/sacct.json")
    cols = output.parse_format(output.DEFAULT_FORMAT)
    return [
        "## On a recorded sacct export (Slurm 22.05, slurmdbd)",
        "",
        "The export `tests/data/sacct/22.05/sacct.json` was recorded by `tests/data/sacct/capture.py 22.05`: 14 jobs on",
        "the local cluster (2 nodes x 4 fake v100 GPUs), sleeping 5-50 s each, queued behind each other by Slurm's",
        "own backfill; one fails, one is cancelled while running, one while pending, one has no GPUs. Command:",
        "",
        "    hops-slurm whatif tests/data/sacct/22.05/sacct.json --cluster tests/data/sacct/replay-cluster.toml \\",
        f"        {' '.join(RECORDED_OPTIONS)} --out docs/results/whatif",
        "",
        "```",
        *(p.line() for p in result.problems),
        output.render(result.rows, cols, False, True).rstrip("\n"),
        f"hops-slurm: whatif: {result.summary()}",
        *_fidelity(result),
        "```",
        "",
        _table(result),
        "",
        f"Wall time {took:.1f} s. The jobs are seconds long, so the simulated rounds are short (30 s rounds,",
        "5 s refresh, 5 s process start on a restart, 5 s probes on 2 probe GPUs: replay-cluster.toml); Hops pays",
        "its probes, the replays of Slurm's policies pay none (docs/whatif.md).",
        "",
        *(f"![{p.stem}](whatif/{p.name})" for p in plots),
    ]


def _generated(n: int) -> list[str]:
    jobs = sacct_history.generate(n)
    lines = [f"## {n} generated jobs", ""]
    with tempfile.TemporaryDirectory() as tmp:
        js, txt = Path(tmp) / "history.json", Path(tmp) / "history.txt"
        js.write_text(sacct_history.to_json(jobs))
        txt.write_text(sacct_history.to_parsable2(jobs))
        start = time.perf_counter()
        read_export(txt)
        parsable2 = time.perf_counter() - start
        start = time.perf_counter()
        result = run_whatif(js, None, Assumptions())
        total = time.perf_counter() - start
        size_js, size_txt = js.stat().st_size, txt.stat().st_size
    s = result.seconds
    lines += [
        f"`hops_slurm.tools.bench.sacct_history.generate({n})`: Poisson arrivals at 24 jobs/h, 1/2/4/8 GPUs, run times",
        "5 min-8 h, scheduled first come first served on 128 GPUs as the \"recorded\" history; written as",
        f"`sacct --json` (22.05 layout, {size_js / 1e6:.1f} MB) and `--parsable2` ({size_txt / 1e6:.1f} MB). Command",
        "(the same as `hops-slurm whatif history.json`: default policies slurm-backfill, slurm-multifactor and hops,",
        "cluster inferred):",
        "",
        "    hops-slurm bench whatif",
        "",
        _table(result),
        "",
        f"{result.summary()}; cluster {result.cluster.name} ({result.cluster.total_gpus} GPUs).",
        "",
        *_fidelity(result),
        "",
        "| Step | Wall time (s) |",
        "|---|---|",
        f"| read + check the --json export | {s.get('read', 0):.1f} |",
        f"| read + check the --parsable2 export (alone) | {parsable2:.1f} |",
        f"| assumptions + recorded side | {s.get('assumptions', 0):.1f} |",
        *(f"| simulate {side.label} | {s.get(side.label, 0):.1f} |" for side in result.sides[1:]),
        f"| **whatif in all** (read to table, every policy) | **{total:.1f}** |",
    ]
    return lines


def run(out_dir: Path) -> Path:
    n = int(os.environ.get("HOPS_BENCH_WHATIF_JOBS", "10000"))
    before = load()
    text = [
        "# hops-slurm whatif: a recorded export, and 10,000 jobs",
        "",
        "Written by `hops-slurm bench whatif` (docs/whatif.md describes the command and its assumptions).",
        "",
        *_recorded(out_dir),
        "",
        *_generated(n),
        "",
        machine_line(before),
    ]
    path = out_dir / "whatif.md"
    path.write_text("\n".join(text) + "\n")
    return path
