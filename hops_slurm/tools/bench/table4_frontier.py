"""Benchmark ``table4-frontier``: how far Table 4's preemptions come down when the rules that cut them are
combined, and what each target pays for it.

Data flow: :func:`hops_slurm.sim.runner.compare` on ``paper-512`` with the ``paper`` workload (Table 4's
setup), fast path: today's defaults and each combination of :data:`COMBINATIONS`, and sia-lr of the same
seeds -> ``docs/results/table4-frontier.md``. The table, its cells and the targets are
:mod:`hops_slurm.tools.bench.table4_targets`'s (one definition of the targets).

Why: issue 37 asks for preemptions per job <= 1.0 and avg JCT <= 0.75x sia-lr's on the same runs. Its
ablation (``table4-targets``) turns one rule at a time, and no single rule meets the preemption target. The
rules that cut preemptions act on different causes (a price on moves, a toll on jobs moved before, no
explore moves of running jobs, fragments given only to jobs for which they are nearly as good as their
best), so this bench combines them and reports, per row, the worst seed's preemptions per job against the
worst seed's avg JCT ratio: the rows no other row beats on both (the frontier), the least avg JCT paid for
<= 1.0 preemptions per job on every seed, and the fewest preemptions at avg JCT <= 0.75x on every seed.

``HOPS_BENCH_SEEDS`` (default ``0,1``), ``HOPS_BENCH_WORKERS`` (simulations at once, default 1),
``HOPS_BENCH_SETTINGS`` (``;``-separated Hops policy names in place of :data:`COMBINATIONS`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.runner import RunResult, compare
from hops_slurm.tools import results_header
from hops_slurm.tools.bench import table4_targets as targets
from hops_slurm.tools.bench.paper_tables import bench_workers

NAME = "table4-frontier"
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ("HOPS_BENCH_SEEDS", "HOPS_BENCH_WORKERS", "HOPS_BENCH_SETTINGS")
JCT, PREEMPTIONS = targets.TARGETS[0], targets.TARGETS[4]

#: the rules that cut preemptions, each named as in docs/design.md ("Planner parameters")
_TOLLS = "requeue_toll=0.5,move_toll=1"
_MOVES = "restart_penalty=0.2,explore_moves=false"

#: today's defaults, then the rules that cut preemptions combined, from two rules to six
COMBINATIONS: tuple[tuple[str, str], ...] = (
    ("today's defaults", "hops"),
    ("a preemption price, no explore moves", "hops:preempt_penalty=1,explore_moves=false"),
    ("tolls on jobs moved before", f"hops:{_TOLLS}"),
    ("tolls, no explore moves", f"hops:{_TOLLS},explore_moves=false"),
    ("dearer restarts, no explore moves, tolls", f"hops:{_MOVES},{_TOLLS}"),
    ("dearer restarts, no explore moves, tolls, no minimum run time", f"hops:{_MOVES},{_TOLLS},min_run_time=0"),
    ("dearer restarts, no explore moves, fragment affinity 0.7", f"hops:{_MOVES},fragment_affinity=0.7"),
    ("the same, requeue toll", f"hops:{_MOVES},fragment_affinity=0.7,requeue_toll=0.5"),
    ("the same, half tolls", f"hops:{_MOVES},fragment_affinity=0.7,requeue_toll=0.25,move_toll=0.5"),
    ("the same, both tolls", f"hops:{_MOVES},fragment_affinity=0.7,{_TOLLS}"),
    ("the same, fragment affinity 0.5", f"hops:{_MOVES},fragment_affinity=0.5,{_TOLLS}"),
    ("the same, fragment affinity 0.7, displaced jobs moved to idle GPUs",
     f"hops:{_MOVES},fragment_affinity=0.7,{_TOLLS},fragment_moves=true"),
)


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


def rows(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """The rows: ``HOPS_BENCH_SETTINGS`` (validated as ``table4-targets`` does), else :data:`COMBINATIONS`."""
    if not env.get("HOPS_BENCH_SETTINGS", "").strip():
        return list(COMBINATIONS)
    return [row for _, _, group in targets.groups(env) for row in group]


def worst(name: str, target: targets.Target, results: Sequence[RunResult], seed_list: Sequence[int]) -> float | None:
    """The row's value for ``target`` on its worst seed (the highest), or None when a seed's run is missing."""
    base = {r.seed: r for r in results if r.policy == targets.BASELINE}
    values = [target.value(r, base[r.seed]) for r in results if r.policy == name and r.seed in base]
    return max(values) if len(values) == len(seed_list) and values else None


def frontier(points: Mapping[str, tuple[float, float]]) -> list[str]:
    """The names whose (preemptions, JCT) no other point matches or beats on both and beats on one, by
    preemptions then JCT."""
    def beaten(p: tuple[float, float]) -> bool:
        return any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in points.values())
    return sorted((n for n, p in points.items() if not beaten(p)), key=lambda n: points[n])


def frontier_section(table_rows: Sequence[tuple[str, str]], results: Sequence[RunResult],
                     seed_list: Sequence[int]) -> list[str]:
    """The frontier table and the two answers: least JCT at <= 1.0 preemptions, fewest preemptions at <= 0.75x."""
    points = {}
    for _, name in table_rows:
        pre, jct = worst(name, PREEMPTIONS, results, seed_list), worst(name, JCT, results, seed_list)
        if pre is not None and jct is not None:
            points[name] = (pre, jct)
    labels = {n: label for label, n in table_rows}
    lines = ["## The frontier", "",
             "Each row on its worst seed (the highest value over the seeds): the rows that no other row matches or "
             "beats on both preemptions per job and avg JCT, fewest preemptions first.", "",
             "| setting | preemptions per job, worst seed | avg JCT x sia-lr's, worst seed |", "|---|---:|---:|"]
    lines += [f"| {labels[n]} (`{n}`) | {points[n][0]:.2f} | {points[n][1]:.3f} |" for n in frontier(points)]
    lines.append("")
    low = {n: p for n, p in points.items() if p[0] <= PREEMPTIONS.bound}
    fast = {n: p for n, p in points.items() if p[1] <= JCT.bound}
    if low:
        n = min(low, key=lambda k: (low[k][1], low[k][0]))
        lines.append(f"- Least avg JCT with <= {PREEMPTIONS.bound} preemptions per job on every seed: `{n}`, "
                     f"{low[n][1]:.3f}x sia-lr's on its worst seed ({low[n][0]:.2f} preemptions per job); the "
                     f"JCT target ({JCT.bound}x) is {'met' if low[n][1] <= JCT.bound else 'missed'} there.")
    else:
        lines.append(f"- No row has <= {PREEMPTIONS.bound} preemptions per job on every seed.")
    if fast:
        n = min(fast, key=lambda k: (fast[k][0], fast[k][1]))
        lines.append(f"- Fewest preemptions with avg JCT <= {JCT.bound}x sia-lr's on every seed: `{n}`, "
                     f"{fast[n][0]:.2f} per job on its worst seed.")
    else:
        lines.append(f"- No row has avg JCT <= {JCT.bound}x sia-lr's on every seed.")
    return [*lines, ""]


def run(out_dir: Path) -> Path:
    env = os.environ
    seed_list, table_rows = targets.seeds(env), rows(env)
    start = time.perf_counter()
    names = list(dict.fromkeys([n for _, n in table_rows] + [targets.BASELINE]))
    results = compare(load_cluster(targets.CLUSTER), targets.WORKLOAD, names, seed_list, None, progress=False,
                      workers=bench_workers())
    seeds_text = ",".join(map(str, seed_list))
    lines = [
        "# Issue 37's Table 4: the rules that cut preemptions, combined",
        "",
        f"Written by `hops-slurm bench {NAME}` (source `hops_slurm/tools/bench/table4_frontier.py`): cluster "
        f"`{targets.CLUSTER}`, workload `{targets.WORKLOAD}` (Table 4's setup), seeds {seeds_text}, fast path "
        f"(`hops-slurm simulate --cluster paper-512 --workload paper --policies POLICY --seeds {seeds_text}` "
        "reruns one row). Each row is today's defaults with the settings its policy name gives (planner/params.py; "
        "docs/design.md, \"Planner parameters\"). Cells as in docs/results/table4-targets.md (the ablation, one "
        "rule at a time, and the band the planner's own noise gives each target): each seed's value in order, ✗ "
        "on a seed over the target.",
        "",
        "## The combinations",
        "",
        *targets.table(table_rows, results, seed_list),
        "",
        targets.baseline_line(results),
        "",
        *frontier_section(table_rows, results, seed_list),
        *targets.causes_section(results, [n for _, n in table_rows]),
        *targets.failed_lines(results),
        f"Wall time {time.perf_counter() - start:.0f} s (fast path); ran on: {results_header.ran_on()}.",
        "",
    ]
    out_dir.mkdir(parents=True, exist_ok=True)
    return results_header.write(out_dir / f"{NAME}.md", "\n".join(lines), generator=f"{__name__}:run",
                                command=command(env))


__all__ = ["COMBINATIONS", "NAME", "command", "frontier", "frontier_section", "rows", "run", "worst"]
