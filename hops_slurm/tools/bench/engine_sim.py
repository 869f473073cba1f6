"""Benchmark: the production engine on a simulated slurmctld against the simulator's fast path (issue 14).

Both paths share the planner, the estimator and its store, the job-view pipeline, the accounting and the
metrics; the engine path (:mod:`hops_slurm.sim.engine_run`) adds everything the daemon does with Slurm:
jobs held and released through ``scontrol``-shaped calls, node reservations, probe jobs whose record files
are read back and validated, runtime record files, the journal, engine.sqlite and records.sqlite. Same
workload, same seeds: the paper-tables bench's Table 3; writes ``engine-sim.md``. ``HOPS_BENCH_SEEDS`` (default
``0,1,2``) and ``HOPS_BENCH_POLICIES`` shorten it.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hops_slurm.errors import HopsError
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.engine_run import simulate_engine
from hops_slurm.sim.comparison import markdown_table
from hops_slurm.sim.runner import Options, RunResult, compare, simulate
from hops_slurm.tools import results_header

NAME = "engine-sim"
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ("HOPS_BENCH_PARTS", "HOPS_BENCH_SEEDS", "HOPS_BENCH_POLICIES")


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


WORKLOAD = "paper"
POLICIES = ("hops", "sia-lr", "gavel-lr", "sia", "gavel", "themis", "slurm-backfill")  # Table 3's


#: the parts: Table 3 (paper-64, every policy, three seeds: about 4 min) and Table 4 (paper-512, 500 jobs,
#: three policies, one seed: about 10 min); ``HOPS_BENCH_PARTS=table4`` runs one; each part's text is kept
#: in engine-sim/<part>.md (committed) and engine-sim.md is assembled from the parts there
PARTS = {"table3": ("Table 3: 64 GPUs", "paper-64", POLICIES, "0,1,2"),
         "table4": ("Table 4: 512 GPUs, 500 jobs at 100/h", "paper-512", ("hops", "sia-lr", "gavel-lr"), "0")}
DIFFERENCES = [
    "Where the paths differ, by construction:", "",
    "- A new model's job starts in place at the engine's first refresh after its arrival when GPUs are idle, "
    "its probes running on the simulated profiler's own GPUs; the engine collects their records at the first "
    "refresh after they end (up to two 30 s ticks later than the fast path).",
    "- The enactor refuses a placement Slurm would not make exactly (an uneven split over nodes, `greedy_split`: "
    "Slurm 22.05 splits `--gpus` greedily in node order); the fast path applies the same rule with the free GPUs "
    "counted as the enactor counts them (hops_slurm/sim/split.py). The refused job waits for the next plan.",
    "- The engine accounts jobs at its refreshes (every 30 s), the fast path at every event; both estimate "
    "processed samples from the runtime records by one function (hops_slurm/core/processed.py: restart time "
    "is not progress, redone samples count once), the engine from the record files it reads at its refreshes.",
    "- Both paths charge one cost model (hops_slurm/sim/costs.py): a requeue's notice holds the job's GPUs and "
    "a job placed on a node where a notice runs starts when the notices there end. On the engine path the "
    "requeue and the placements come at one virtual instant, so a job a fragment plan placed beside a notice "
    "may be split by Slurm otherwise than planned once it starts (the enactor then requeue-holds it).",
    "- Restart costs: the engine learns each model's from its runtime records (start to first progress, notice "
    "included; `[engine] restart_cost_default`, 60 s, before), the fast path is told the cost model's; a run "
    "without a record yet counts its time less that cost as progress (engine) or less the process start (fast).",
    "- Fair share: the fast path gives each job its owner's decayed-usage factor, the engine path has no `sshare` "
    "(every factor 1.0); the planner reads it only with `fairshare_weight` > 0 (default 0).",
    "- Both plan with the declared samples as the job's `#HOPS samples=` line states them (a whole number). The "
    "planner's choice among near-equal plans (1% gap; jobs without data are equal on every GPU type) turns on "
    "the last bits of its inputs, and the engine's times are Unix seconds (2.4e-7 s resolution): the paths part "
    "within the first hour and one seed's numbers differ within the planner's own noise (see the section below).", "",
    "The engine path's wall time is its SQLite writes (journal, engine state, records; `synchronous=OFF` in "
    "simulation), the probe and runtime-record files and the estimates made at every refresh.", "",
]


#: a hand-written part (engine-sim/notes.md: measurements made by hand, e.g. why the paths differ), put
#: after the generated text when present
NOTES = "notes.md"


def parts(env: Mapping[str, str]) -> list[str]:
    """The parts a run under ``env`` writes (``HOPS_BENCH_PARTS``, default all)."""
    chosen = [p for p in env.get("HOPS_BENCH_PARTS", ",".join(PARTS)).split(",") if p]
    unknown = sorted(set(chosen) - set(PARTS))
    if unknown:
        raise HopsError(f"HOPS_BENCH_PARTS: unknown part(s) {', '.join(unknown)}; known: {', '.join(PARTS)}")
    return chosen


#: the engine's loggers whose per-job lines a benchmark leaves out: refused splits, requeue-holds of jobs Slurm
#: split otherwise, re-aged jobs (each shows in the numbers; the first two log at ERROR)
NOISY = ("hops_slurm.slurm.enact", "hops_slurm.engine.honesty_review", "hops_slurm.engine.engine")


def quiet_engine(*args: Any, **kwargs: Any) -> RunResult:
    """:func:`simulate_engine` without the :data:`NOISY` loggers' lines, in whichever process runs it (a
    benchmark's worker processes too); their levels are as they were afterwards."""
    loggers = [logging.getLogger(name) for name in NOISY]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        return simulate_engine(*args, **kwargs)
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def run(out_dir: Path) -> Path:
    chosen = parts(os.environ)
    data = out_dir / "engine-sim"
    data.mkdir(parents=True, exist_ok=True)
    for name in chosen:
        title, cluster, policies, seeds = PARTS[name]
        seeds = os.environ.get("HOPS_BENCH_SEEDS", seeds)
        chosen_policies = [p for p in os.environ.get("HOPS_BENCH_POLICIES", ",".join(policies)).split(",") if p]
        text = _part(title, cluster, chosen_policies, [int(x) for x in seeds.split(",")])
        (data / f"{name}.md").write_text(text + "\n")
    return assemble(out_dir)


def assemble(out_dir: Path) -> Path:
    """``out_dir/engine-sim.md`` from every part written so far under ``out_dir/engine-sim/``."""
    data = out_dir / "engine-sim"
    lines = [
        "# The paper's tables through the production engine on a simulated slurmctld (issue 14)", "",
        "Written by `hops-slurm bench engine-sim` (parts `table3` and `table4`; `HOPS_BENCH_PARTS`, "
        "`HOPS_BENCH_SEEDS` and `HOPS_BENCH_POLICIES` pick). Each part: the same workload and seeds through two paths. *engine*: "
        "`hops-slurm simulate --engine`, the daemon's `Engine` against `hops_slurm/sim/slurmctld.py`; *fast*: "
        "`hops-slurm simulate`, `SimBackend` (what docs/results/paper-tables.md runs). The simulator's defaults "
        f"(360 s rounds, 30 s refresh; costs, docs/simulator.md: {Options().costs.describe()}), workload `paper`. "
        "Max.ρ: Themis' ideal time by the same formula on both paths (`hops_slurm.sim.groundtruth.ideal_time`).", "",
    ]
    for name in PARTS:
        part = data / f"{name}.md"
        if part.is_file():
            lines += [part.read_text().rstrip("\n"), ""]
    lines += DIFFERENCES
    notes = data / NOTES  # the hand-written part, kept as it is
    if notes.is_file():
        lines += [notes.read_text().rstrip("\n"), ""]
    path = out_dir / "engine-sim.md"
    return results_header.write(path, "\n".join(lines) + "\n", generator=f"{__name__}:run",
                                 command=command(os.environ))


def _part(title: str, cluster_name: str, policies: list[str], seeds: list[int]) -> str:
    cluster = load_cluster(cluster_name)
    lines = [f"## {title}", "", f"Cluster `{cluster_name}`, seeds {','.join(map(str, seeds))}, commit `{_commit()}`; "
             f"ran on: {results_header.ran_on()}.", ""]
    paths = {}
    for label, runner in (("engine", quiet_engine), ("fast", simulate)):
        start = time.perf_counter()
        results = compare(cluster, WORKLOAD, policies, seeds, None, Options(), progress=False, run=runner)
        paths[label] = results
        lines += [f"**{label}**", "", markdown_table(results),
                  f"Wall time {time.perf_counter() - start:.0f} s for {len(policies)} policies x {len(seeds)} seeds.", ""]
    lines += ["| policy | avg JCT engine / fast | Hops' avg JCT / the policy's, engine | same, fast |", "|---|---|---|---|"]
    mean = {label: _means(results) for label, results in paths.items()}
    for policy in policies:
        e, f = mean["engine"].get(policy), mean["fast"].get(policy)
        he, hf = mean["engine"].get("hops"), mean["fast"].get("hops")
        if e and f and he and hf:
            lines.append(f"| {policy} | {e / f:.3f} | {he / e:.3f} | {hf / f:.3f} |")
    lines += ["", "Means over the seeds."]
    return "\n".join(lines)


def _means(results: Sequence[RunResult]) -> dict[str, float]:
    by: dict[str, list[float]] = {}
    for r in results:
        if r.metrics.unfinished == 0:
            by.setdefault(r.policy, []).append(r.metrics.avg_jct)
    return {p: sum(v) / len(v) for p, v in by.items()}


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"
