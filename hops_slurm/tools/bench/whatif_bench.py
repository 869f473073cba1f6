"""Benchmark ``whatif``: ``hops-slurm whatif`` with every default on the recorded exports, and on generated jobs.

Data flow: (1) tests/data/sacct/<release>/sacct.json of 22.05, 24.11 and 26.05 (recorded from the local
cluster with slurmdbd by tests/data/sacct/capture.py; present in a source checkout) and the busy queues of
tests/data/sacct-busy/, each replayed by the
console script exactly as a site first types it (``hops-slurm whatif EXPORT``, no option) -> its table,
assumptions and verdict verbatim, with the commit; (2) a generated history of ``HOPS_BENCH_WHATIF_JOBS``
jobs (default 10,000; 0 leaves it out; :mod:`hops_slurm.tools.bench.sacct_history`) as ``sacct --json``
and ``--parsable2`` -> the wall time of each step (read, assumptions, each simulated policy) ->
docs/results/whatif.md. Long (the Hops side is the production engine: hours at 10,000 jobs): not in
``bench all``; run it by name. Measures; asserts nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from hops_slurm.config import parse_config
from hops_slurm.sim.runner import Options
from hops_slurm.tools.bench import sacct_history
from hops_slurm.tools.bench.machine import load, machine_line
from hops_slurm.whatif import output
from hops_slurm.whatif.assumptions import Assumptions
from hops_slurm.whatif.exports import read_export
from hops_slurm.whatif.fidelity import fidelity, fidelity_line
from hops_slurm.whatif.pipeline import WhatIf, run_whatif
from hops_slurm.whatif.verdict import verdict
from hops_slurm.tools import results_header

NAME = "whatif"
IN_ALL = False
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ("HOPS_BENCH_WHATIF_JOBS",)


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


RECORDED = Path(__file__).resolve().parents[3] / "tests" / "data" / "sacct"
#: the recorded exports replayed with every default (paths from the checkout's root)
EXPORTS = (*(f"tests/data/sacct/{r}/sacct.json" for r in ("22.05", "24.11", "26.05")),
           *(f"tests/data/sacct-busy/{r}/sacct.json" for r in ("22.05", "24.11")))


def _table(result: WhatIf) -> str:
    return output.markdown(result.rows, "x").split("\n", 2)[2].rstrip("\n")


def _fidelity(result: WhatIf) -> list[str]:
    f = fidelity(result.rows)
    return [f"hops-slurm: whatif: {fidelity_line(f)}"] if f is not None else []


def _commit() -> str:
    """The checkout's commit (with ``+changes`` when the tree differs from it), or "unknown"."""
    root = RECORDED.parents[2]
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=30, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True,
                               text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def _verdict(result: WhatIf, monitor_seconds: float) -> list[str]:
    """The verdict lines ``hops-slurm whatif`` prints (:mod:`hops_slurm.whatif.verdict`), as a block."""
    v = verdict(result.sides, result.rows, result.derived, monitor_seconds, result.cluster.profiler.probe_seconds)
    if v is None:
        return []
    return ["", "```", *(ln if ln.startswith("  ") else f"hops-slurm: whatif: {ln}" for ln in v.lines()), "```"]


def _default_run(export: str, summary: list[str]) -> list[str]:
    """``hops-slurm whatif EXPORT`` with every default, as a site types it (the console script, from the
    checkout's root, without $HOPS_CONFIG): its stdout and stderr verbatim; a row per side to ``summary``."""
    root = RECORDED.parents[2]
    if not (root / export).is_file():
        return [f"### {export}", "", f"Not run: {export} is not here (a source checkout has it)."]
    script = Path(sys.executable).with_name("hops-slurm")
    env = {k: v for k, v in os.environ.items() if k != "HOPS_CONFIG"}
    start = time.perf_counter()
    done = subprocess.run([str(script), "whatif", export, "--no-progress"], cwd=root, env=env, capture_output=True,
                          text=True, timeout=3600)
    took = time.perf_counter() - start
    for line in done.stdout.splitlines()[2:]:  # the table's rows, below its header and rule
        cells = line.split()
        if len(cells) == 9:
            summary.append(f"| `{export}` | {cells[0]} | {cells[3]} | {cells[4]} | {cells[5]} | {cells[6]} | {cells[7]} |")
    return [f"### {export}", "", "    " + " ".join(["hops-slurm", "whatif", export]), "", "```",
            done.stdout.rstrip("\n"), done.stderr.rstrip("\n"), "```", "",
            f"Exit status {done.returncode}; wall time {took:.1f} s."]


def _recorded(out_dir: Path) -> list[str]:
    lines = [
        "## The recorded exports, with every default",
        "",
        "`tests/data/sacct/<release>/sacct.json` were recorded by `tests/data/sacct/capture.py RELEASE`: 14 jobs on",
        "the local cluster (2 nodes x 4 fake v100 GPUs), sleeping 5-50 s each, queued behind each other by Slurm's",
        "own backfill; one fails, one is cancelled while running, one while pending, one has no GPUs. Each is",
        "replayed with no option at all, as a site would first run it: the cluster read from the export, the",
        "Hops side the production engine with the documented defaults (no --config, $HOPS_CONFIG or",
        "/etc/hops-slurm/hops.toml on the machine: round 6 min, refresh 30 s, monitor step 5 s, probes in",
        "place), every assumption printed and marked (docs/whatif.md, \"What whatif assumes\").",
        f"Commit {_commit()}.",
        "",
    ]
    summary = ["| Export | Scheduler | Avg JCT | Avg wait | Max LR | GPU util. | Makespan |", "|---|---|---|---|---|---|---|"]
    runs: list[str] = []
    for export in EXPORTS:
        runs += [*_default_run(export, summary), ""]
    return [*lines, *summary, "", "The busy queues (`tests/data/sacct-busy/`, 60 jobs on 4 x 4 GPUs; docs/whatif.md) are "
            "replayed the same way. Each run in full:", "", *runs]


def _generated(n: int) -> list[str]:
    if n <= 0:
        return ["## Generated jobs", "",
                "Not run (`HOPS_BENCH_WHATIF_JOBS=0`). The Hops side is the production engine (issue 33); "
                "`HOPS_BENCH_WHATIF_JOBS=N hops-slurm bench whatif` measures it on N generated jobs."]
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
        site = parse_config({}, "defaults")  # what `hops-slurm whatif` runs with when the site has no configuration
        options = Options(site.scheduler.round_length, site.scheduler.queue_refresh,
                          monitor_seconds=site.engine.monitor_interval)
        result = run_whatif(js, None, Assumptions(), options=options, site=site)
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
        *_verdict(result, site.engine.monitor_interval),
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
        "# hops-slurm whatif: the recorded exports with every default, and generated jobs",
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
    return results_header.write(path, "\n".join(text) + "\n", generator=f"{__name__}:run",
                                 command=command(os.environ))
