"""The estimator-learning bench's section on a denser store: which cells carry the error after one run on
the type, and what probes that also run the model data-parallel on one node give there.

Where it sits: :mod:`hops_slurm.tools.bench.estimator_learning` passes the production replay's points of
the stage "one run on the type at another count"; this module replays the same workloads
(:func:`hops_slurm.tools.bench.learning_replay.replay`) with each model's probe also running it
data-parallel on k GPUs of one profiler node of every type (``probe_gpus``: the engine's
``engine.probe_data_parallel``, off by default; :meth:`hops_slurm.tools.bench.learning_replay.Replay.probe`,
Gavel's consolidated figure at k, what such a run measures), so these columns are what a site that turns
the option on gets, never the bench's headline (the default); the stages stay those of the runs, and a
cell whose count and layout the probe measured is marked.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.tools.bench.learning_replay import Cell, multi_gpu_models, plan_runs, replay

#: the probe sets compared: the counts of the one-node probes each model gets on every type
PROBE_SETS: tuple[tuple[int, ...], ...] = ((2,), (4,), (8,), (2, 8))

Point = tuple[str, Cell, float, float, float]  # model, cell, estimate, unrefined estimate, measured


def probed(cell: Cell, probe_gpus: tuple[int, ...]) -> bool:
    """Whether the one-node probes of ``probe_gpus`` measure ``cell``'s count and layout."""
    return not cell.spread and cell.gpus in probe_gpus


def type_errors(truth: GroundTruth, seeds: tuple[int, ...], jobs: int,
                probe_gpus: tuple[int, ...]) -> dict[Cell, list[float]]:
    """Per cell, the errors of the stage "type" (in-sample) when every probe adds ``probe_gpus``."""
    errors: dict[Cell, list[float]] = defaultdict(list)
    for seed in seeds:
        out = replay(truth, plan_runs(truth, seed, jobs), probe_gpus=probe_gpus)
        for (_, cell, stage), (estimate, _, measured) in out.first_at.items():
            if stage == "type":
                errors[cell].append(abs(estimate - measured) / measured)
    return errors


def production_errors(points: list[Point]) -> dict[Cell, list[float]]:
    errors: dict[Cell, list[float]] = defaultdict(list)
    for _, cell, estimate, _, measured in points:
        errors[cell].append(abs(estimate - measured) / measured)
    return errors


def between(truth: GroundTruth, cell: Cell) -> float:
    """Mean error over the multi-GPU models of the per-GPU rate at ``cell``'s count taken as the geometric
    mean of the model's own rates at the counts either side (Gavel's table alone): what two measured counts
    bracketing a cell could give it at best by interpolation."""
    counts = sorted({1, 2, 4, 8})
    i = counts.index(cell.gpus)
    lo, hi = counts[i - 1], counts[i + 1]
    errs = []
    for m in multi_gpu_models(truth):
        rate = {n: truth.samples_per_second(m, cell.gpu_type, n, cell.spread if n > 1 else False) / n
                for n in (lo, cell.gpus, hi)}
        guess = math.sqrt(rate[lo] * rate[hi])
        errs.append(abs(guess - rate[cell.gpus]) / rate[cell.gpus])
    return statistics.mean(errs)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def probes_section(truth: GroundTruth, cells: list[Cell], production: list[Point], seeds: tuple[int, ...],
                   jobs: int, target: float) -> list[str]:
    """The section's table and summary (module docstring)."""
    prod = production_errors(production)
    prod_mean = {c: statistics.mean(prod[c]) for c in cells}
    overall = statistics.mean(prod_mean.values())
    variants = {ks: type_errors(truth, seeds, jobs, ks) for ks in PROBE_SETS}
    names = {ks: " & ".join(str(k) for k in ks) for ks in PROBE_SETS}
    lines = ["| GPU type | layout | GPUs | points | production | share of the mean's excess over the target | "
             + " | ".join(f"+ {names[ks]}-GPU probe" for ks in PROBE_SETS) + " |",
             "|---|---|---:|---:|---:|---:|" + "---:|" * len(PROBE_SETS)]
    for c in cells:
        share = (prod_mean[c] - target) / len(cells)
        row = [f"{_pct(statistics.mean(variants[ks][c]))}{' (probed)' if probed(c, ks) else ''}"
               for ks in PROBE_SETS]
        mark = " ✗" if prod_mean[c] > target else ""
        lines.append(f"| {c.gpu_type} | {c.layout} | {c.gpus} | {len(prod[c])} | {_pct(prod_mean[c])}{mark} | "
                     f"{100 * share:+.2f} | " + " | ".join(row) + " |")
    means = {ks: statistics.mean(statistics.mean(variants[ks][c]) for c in cells) for ks in PROBE_SETS}
    unprobed = {ks: statistics.mean(statistics.mean(variants[ks][c]) for c in cells if not probed(c, ks))
                for ks in PROBE_SETS}
    lines.append(f"| mean over cells | | | {sum(len(v) for v in prod.values())} | {_pct(overall)} | "
                 f"{100 * (overall - target):+.2f} | " + " | ".join(_pct(means[ks]) for ks in PROBE_SETS) + " |")
    lines.append("| mean over the cells not probed | | | | | | "
                 + " | ".join(_pct(unprobed[ks]) for ks in PROBE_SETS) + " |")
    worst = sorted(cells, key=lambda c: -prod_mean[c])
    over = [c for c in cells if prod_mean[c] > target]
    excess = sum(prod_mean[c] - target for c in over)
    v100 = [c for c in cells if c.gpu_type == "v100" and not c.spread]
    v100_share = sum(max(prod_mean[c] - target, 0.0) for c in v100) / excess if excess else 0.0
    rest = statistics.mean(prod_mean[c] for c in cells if c not in v100)
    fours = [c for c in cells if c.gpus == 4]
    best = min(PROBE_SETS, key=lambda ks: means[ks])
    lines += [
        "",
        f"Which cells carry the error: {len(over)} of {len(cells)} cells are over {_pct(target)}; their excess "
        f"adds {100 * excess / len(cells):.2f} points to the mean over cells (the cells under the target take "
        f"{100 * (excess / len(cells) - (overall - target)):.2f} back), {100 * v100_share:.0f}% of it from the "
        f"three consolidated V100 cells (worst {worst[0].gpu_type} {worst[0].layout} {worst[0].gpus} GPUs at "
        f"{_pct(prod_mean[worst[0]])}); the other {len(cells) - len(v100)} cells average {_pct(rest)}. What fixes "
        "a consolidated V100 cell is a measurement at that count: the model's own rate at another count, its "
        "siblings' and other models' ratios all miss there (sections above), and even the model's own rates at "
        "both counts either side would not do: their geometric mean (Gavel's table alone) misses the "
        "consolidated V100 4-GPU cell by "
        + ", the other 4-GPU cells by ".join(
            [_pct(between(truth, Cell("v100", 4, False))),
             ", ".join(f"{c.gpu_type} {c.layout} {_pct(between(truth, c))}" for c in fours
                       if c != Cell("v100", 4, False))]) + ".",
        "",
        f"A denser store when the first run ends: the best probe set here, {names[best]} GPUs on one node of every "
        f"type, gives {_pct(means[best])} over all cells (the {_pct(target)} target "
        f"{'met' if means[best] <= target else 'missed'} with the option on), {_pct(unprobed[best])} over the cells it "
        "does not measure itself; "
        + "; ".join(f"{names[ks]} GPUs {_pct(means[ks])} ({_pct(unprobed[ks])} on the cells not probed, the default "
                    f"{_pct(statistics.mean(prod_mean[c] for c in cells if not probed(c, ks)))} there)"
                    for ks in PROBE_SETS)
        + ". Most of the gain is the probed cells themselves: a carry from a probed count moves the cells next "
        "to it less, because the cells that miss are those whose rate does not follow from a neighbouring "
        f"count. Cost: with `engine.probe_data_parallel = [{', '.join(str(k) for k in best)}]` a zoo model's "
        f"probe takes {max(best)} GPUs of one node of each type (where the default probe takes one) and runs "
        "the model data-parallel on each count after its one-GPU phases; off by default, as the paper's profiler "
        "(one GPU per type): a new model waits longer for a node's GPUs to probe, entrypoint models (whose "
        "probe cannot build a data-parallel run) gain nothing, and the cells it does not measure gain little, so "
        "the headline figure above is the default's.",
    ]
    pair = next((ks for ks in PROBE_SETS if len(ks) == 2), None)
    if pair is not None:
        inside = [c for c in fours if not c.spread and not probed(c, pair)]
        lines[-1] += (
            f" With {names[pair]} GPUs probed, a 4-GPU consolidated cell is still carried from one side "
            "(`estimator.refine` reads the nearest measured count): "
            + ", ".join(f"{c.gpu_type} {_pct(statistics.mean(variants[pair][c]))} where the geometric mean of the "
                        f"two sides gives {_pct(between(truth, c))}" for c in inside)
            + "; an estimator that interpolates between measured counts either side could help only "
            + (", ".join(c.gpu_type for c in inside if between(truth, c) < statistics.mean(variants[pair][c]))
               or "none of them") + ".")
    return lines
    return lines


__all__ = ["PROBE_SETS", "between", "probed", "probes_section", "production_errors", "type_errors"]
