"""Comparison output: RunResults -> summary.json, results.md (mean ± spread over seeds) and PNG plots.

Data flow: hops_slurm.sim.runner.compare -> :func:`aggregate` -> :func:`markdown_table`,
:func:`write_summary`, :func:`write_plots` (CDFs of JCT, latency ratio and FTF rho like the paper's
Figs. 9/12; normalised cluster throughput over time like Fig. 11). Matplotlib with the Agg backend.
Every table carries the physical bound (:mod:`hops_slurm.sim.bound`): its avg JCT once, under the
table, and each policy's slowdown against it (avg JCT / the bound's avg JCT) as a column.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hops_slurm.report.metrics import cdf
from hops_slurm.sim.bound import slowdown
from hops_slurm.sim.runner import RunResult
from planner.changes import Change

COLUMNS = (
    ("makespan", "Makespan (h)", 3600.0),
    ("avg_jct", "Avg.JCT (h)", 3600.0),
    ("slowdown", "Slowdown vs bound", 1.0),
    ("avg_wait", "Avg.WT (h)", 3600.0),
    ("max_lr", "Max.LR", 1.0),
    ("avg_frag", "Avg.frag", 1.0),
    ("max_rho", "Max.ρ (FTF)", 1.0),
    ("preemptions", "Preemptions", 1.0),
    ("planner_mean_seconds", "Planner s/round", 1.0),
    ("set_aside", "Set aside", 1.0),
    ("unfinished", "Unfinished", 1.0),
)
#: columns that count things (jobs, preemptions): whole numbers, not measurements (see :func:`_fmt`)
COUNTS = frozenset({"preemptions", "set_aside", "unfinished"})


def aggregate(results: Sequence[RunResult]) -> dict[str, dict[str, tuple[float, float]]]:
    """policy -> metric -> (mean, sample standard deviation over seeds; 0 for one seed)."""
    by_policy: dict[str, list[RunResult]] = {}
    for r in results:
        by_policy.setdefault(r.policy, []).append(r)
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for policy, runs in by_policy.items():
        row = {}
        for key, _label, _scale in COLUMNS:
            values = [_value(r, key) for r in runs]
            mean = statistics.fmean(values)
            row[key] = (mean, statistics.stdev(values) if len(values) > 1 else 0.0)
        out[policy] = row
    return out


def _value(r: RunResult, key: str) -> float:
    if key == "slowdown":
        return slowdown(r.metrics.avg_jct, r.bound_avg_jct)
    return float(getattr(r.metrics, key))


def bound_line(results: Sequence[RunResult]) -> str:
    """The sentence under a table: the bound's avg JCT (mean over the seeds' workloads); "" without one."""
    per_seed = {r.seed: r.bound_avg_jct for r in results if r.bound_avg_jct is not None}
    if not per_seed:
        return ""
    values = [per_seed[s] for s in sorted(per_seed)]
    mean = statistics.fmean(values)
    spread = statistics.stdev(values) if len(values) > 1 and all(map(math.isfinite, values)) else 0.0
    return (f"Physical bound (each job alone on its fastest allowed configuration from its submission: no wait, "
            f"no restart): avg JCT {_fmt(mean, spread, 3600.0)} h. Slowdown vs bound = a policy's avg JCT / the "
            "bound's.\n")


def _fmt(mean: float, spread: float, scale: float, count: bool = False) -> str:
    """``mean ± spread`` over seeds. A ``count`` prints as the whole number it is (one seed, or seeds that
    agree), and a mean over seeds that is not whole (2.5 preemptions) with one decimal, as is its spread."""
    if math.isnan(mean):
        return "-"
    if not math.isfinite(mean):
        return "∞"
    if count:
        text = f"{mean:.0f}" if float(mean).is_integer() else f"{mean:.1f}"
        return text + (f" ± {spread:.1f}" if spread > 0 else "")
    digits = 3 if scale == 1.0 and abs(mean) < 10 else 2
    text = f"{mean / scale:.{digits}f}"
    return text + (f" ± {spread / scale:.{digits}f}" if spread > 0 else "")


def _failures(results: Sequence[RunResult]) -> list[Any]:
    return list(getattr(results, "failures", []))


def markdown_table(results: Sequence[RunResult]) -> str:
    """One row per policy (mean ± spread over its completed seeds); a policy with failed runs is
    marked, and one whose every run failed gets a row saying why."""
    agg = aggregate(results)
    failed: dict[str, list[Any]] = {}
    for f in _failures(results):
        failed.setdefault(f.policy, []).append(f)
    head = "| Policy | " + " | ".join(label for _k, label, _s in COLUMNS) + " |"
    sep = "|" + "---|" * (len(COLUMNS) + 1)
    rows = []
    for p, row in agg.items():
        mark = f" (FAILED seed {','.join(str(f.seed) for f in failed[p])})" if p in failed else ""
        rows.append(f"| {p}{mark} | " + " | ".join(_fmt(*row[k], s, k in COUNTS) for k, _l, s in COLUMNS) + " |")
    for p, fs in failed.items():
        if p not in agg:
            rows.append(f"| {p} (FAILED) | " + " | ".join(["-"] * len(COLUMNS)) + " |")
    notes = [f"FAILED: {f.policy} seed {f.seed}: {f.error}" for f in _failures(results)]
    bound = bound_line(results)
    return ("\n".join([head, sep, *rows]) + "\n" + ("\n" + bound if bound else "")
            + ("\n" + "\n\n".join(notes) + "\n" if notes else ""))


def causes_table(results: Sequence[RunResult]) -> str:
    """Preemptions per job by cause (planner.changes), mean over each policy's seeds; "" when no run has any."""
    causes = [c.value for c in Change] + ["other"]
    by_policy: dict[str, list[RunResult]] = {}
    for r in results:
        by_policy.setdefault(r.policy, []).append(r)
    rows = []
    for p, runs in by_policy.items():
        per_job = [{c: r.metrics.preemption_causes.get(c, 0) / max(r.metrics.jobs, 1) for c in causes} for r in runs]
        rows.append(f"| {p} | " + " | ".join(f"{statistics.fmean(x[c] for x in per_job):.2f}" for c in causes) + " |")
    if not any(r.metrics.preemption_causes for r in results):
        return ""
    return ("Preemptions per job by cause (planner/changes.py; mean over the seeds):\n\n| Policy | " + " | ".join(causes)
            + " |\n|" + "---|" * (len(causes) + 1) + "\n" + "\n".join(rows) + "\n")


def results_text(results: Sequence[RunResult]) -> str:
    """What ``results.md`` holds below its header and ``hops-slurm simulate`` prints: the table, then the
    preemptions by cause."""
    causes = causes_table(results)
    return markdown_table(results) + ("\n" + causes if causes else "")


def write_summary(results: Sequence[RunResult], out: Path, header: str = "") -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    summary = {
        "runs": [
            {"policy": r.policy, "seed": r.seed, "wall_seconds": r.wall_seconds, **r.metrics.table_row(),
             "bound_avg_jct": r.bound_avg_jct, "slowdown": None if math.isnan(_value(r, "slowdown")) else _value(r, "slowdown")}
            for r in results
        ],
        "aggregate": {p: {k: {"mean": m, "std": s} for k, (m, s) in row.items()} for p, row in aggregate(results).items()},
        "failed": [{"policy": f.policy, "seed": f.seed, "error": f.error} for f in _failures(results)],
    }
    js = out / "summary.json"
    js.write_text(json.dumps(summary, indent=2, default=lambda v: None if not math.isfinite(v) else v) + "\n")
    md = out / "results.md"
    md.write_text((header + "\n\n" if header else "") + results_text(results))
    return js, md


def write_plots(results: Sequence[RunResult], out: Path, prefix: str = "") -> list[Path]:
    """CDF of JCT, CDF of latency ratio, CDF of FTF rho (all seeds pooled) and throughput over time (first seed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hops_slurm.report.plots import UNITS, time_unit  # the one rule for the unit of a time axis

    out.mkdir(parents=True, exist_ok=True)
    policies = list(dict.fromkeys(r.policy for r in results))
    paths: list[Path] = []
    if not policies:
        return paths
    jct_unit = time_unit(max((v for r in results for v in r.metrics.jct), default=0.0))
    for key, label, scale, fname in (
        ("jct", f"JCT ({jct_unit})", UNITS[jct_unit], "cdf_jct.png"),
        ("lr", "latency ratio", 1.0, "cdf_lr.png"),
        ("rho", "FTF ρ", 1.0, "cdf_rho.png"),
    ):
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for p in policies:
            values = [v / scale for r in results if r.policy == p for v in getattr(r.metrics, key)]
            xs, ys = cdf(values)
            ax.step(xs, ys, where="post", label=p)
        if key != "jct":
            ax.set_xscale("symlog", linthresh=0.1)  # ratios span 0 .. 100+
        paths.append(_finish(plt, fig, ax, label, "CDF", out / f"{prefix}{fname}"))
    firsts = {p: next(r for r in results if r.policy == p) for p in policies}
    time_unit_name = time_unit(max((t for r in firsts.values() for t, _u, _n in r.series), default=0.0))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for p, first in firsts.items():
        ax.step([t / UNITS[time_unit_name] for t, _u, _n in first.series], [n for _t, _u, n in first.series],
                where="post", label=p)
    paths.append(_finish(plt, fig, ax, f"time ({time_unit_name})", "cluster throughput (p100-GPU equivalents)",
                         out / f"{prefix}throughput.png"))
    return paths


def _finish(plt: Any, fig: Any, ax: Any, xlabel: str, ylabel: str, path: Path) -> Path:
    """Label, grid and legend ``ax``, save ``fig`` to ``path`` and close it."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
