"""Benchmark ``estimator-learning``: how fast the store corrects the formula once a model's jobs run.

Replays the paper workload's jobs of Gavel's 19 multi-GPU variants in order through the production store
and estimator (:mod:`hops_slurm.tools.bench.learning_replay`), for :data:`SEEDS`, with every type's
bandwidths calibrated on every model (in-sample) and, held out, on the other three families only (one
replay per held-out family, leave-one-family-out: every variant of the family is held out at once). Writes
``docs/results/estimator-learning.md``: per cell (GPU type x count x layout) the error of the estimate for
a model's first job (formula only), after one run of the model on the same type and layout at another
count, and after one run on that very configuration, with the same store read without
:mod:`estimator.refine` beside it; the family layer (:mod:`estimator.family_refine`) per cell with and
without it (:mod:`hops_slurm.tools.bench.learning_family`); the cross-model layer (:mod:`estimator.peers`) the
same way (:mod:`hops_slurm.tools.bench.learning_peers`); other rules carrying the one run
(:mod:`hops_slurm.tools.bench.learning_carries`); the learning curve per model; and, for every cell over
a target, the reason from its own points.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from hops_slurm.sim.groundtruth import GroundTruth, batch_size, family
from hops_slurm.sim.workload import MULTI_GPU_FAMILIES
from estimator.peers import PEERS
from estimator.refine import REFINED
from hops_slurm.tools.bench.learning_carries import (CarryPoint, alternatives, carries_table, carries_verdict,
                                                     coverage_table)
from hops_slurm.tools.bench.learning_carries_bound import law_bound_section
from hops_slurm.tools.bench.learning_family import FamilyPoint, family_table, verdict
from hops_slurm.tools.bench.learning_peers import PeerPoint, peers_table, peers_verdict
from hops_slurm.tools.bench.learning_probes import probes_section
from hops_slurm.tools.bench.learning_replay import COUNTS, Cell, Outcome, multi_gpu_models, plan_runs, replay
from hops_slurm.tools import results_header

NAME = "estimator-learning"
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ()


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


SEEDS = (0, 1, 2, 3)
JOBS = 500  # paper-workload jobs generated per seed (those of multi-GPU variants are replayed)
TYPE_TARGET = 0.10  # mean error after one run of the model on the type (issue 37)
CONFIG_TARGET = 0.03  # mean error on a configuration already run
CURVE_POINTS = (0, 1, 2, 3, 5, 10, 20)

Point = tuple[str, Cell, float, float, float]  # model, cell, estimate, unrefined estimate, measured


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def _err(estimate: float, measured: float) -> float:
    return abs(estimate - measured) / measured


class Collected(NamedTuple):
    """What :func:`collect` gathers over the seeds."""

    #: per stage, every (model, cell) point
    stages: dict[str, list[Point]]
    #: per model, its learning curves (one per seed)
    curves: dict[str, list[list[tuple[float, float]]]]
    #: the points of the stage "type", with and without the family layer (neither with the cross-model one)
    family: list[FamilyPoint]
    #: the points of the stage "type", with and without the cross-model layer
    peers: list[PeerPoint]
    #: the points of the stage "type", production's estimate beside other rules carrying the one run
    carries: list[CarryPoint]


def collect(truth: GroundTruth, seeds: tuple[int, ...] = SEEDS, jobs: int = JOBS, held_out: bool = False) -> Collected:
    """Per stage, every (model, cell) point over the seeds; per model, its learning curves."""
    stages: dict[str, list[Point]] = defaultdict(list)
    curves: dict[str, list[list[tuple[float, float]]]] = defaultdict(list)
    fam_points: list[FamilyPoint] = []
    peer_points: list[PeerPoint] = []
    carry_points: list[CarryPoint] = []
    for seed in seeds:
        runs = plan_runs(truth, seed, jobs)
        outcomes: list[Outcome] = []
        if held_out:
            for fam in MULTI_GPU_FAMILIES:
                models = {r.model for r in runs if family(r.model) == fam}
                outcomes.append(replay(truth, runs, held_out=(fam,), evaluate=models))
        else:
            outcomes.append(replay(truth, runs))
        for out in outcomes:
            for (model, cell, stage), (est, plain, meas) in out.first_at.items():
                stages[stage].append((model, cell, est, plain, meas))
                if stage == "type":
                    key = (model, cell, stage)
                    layer, no_peers = out.layers[key], out.no_peers[key]
                    fam_points.append(FamilyPoint(model, cell, no_peers, out.no_family[key], meas,
                                                  REFINED if layer == PEERS else layer))
                    peer_points.append(PeerPoint(model, cell, est, no_peers, meas, layer, out.coverage[key]))
                    snap, cal = out.held[key]
                    others = alternatives(snap, cal, cell.gpu_type, cell.gpus, cell.spread)
                    carry_points.append(CarryPoint(model, cell, est, others, meas, out.coverage[key]))
            for model, curve in out.curve.items():
                curves[model].append(curve)
    return Collected(stages, curves, fam_points, peer_points, carry_points)


def _cell_mean(points: list[PeerPoint], with_peers: bool) -> float:
    cells = {p.cell for p in points}
    return statistics.mean(statistics.mean(p.error(with_peers) for p in points if p.cell == c) for c in cells)


def _cells(truth: GroundTruth) -> list[Cell]:
    return [Cell(t, n, s) for s in (False, True) for n in COUNTS[1:] for t in truth.gpu_types]


def _mean(points: list[Point], refined: bool = True) -> float | None:
    if not points:
        return None
    return statistics.mean(_err(p[2] if refined else p[3], p[4]) for p in points)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def stage_table(truth: GroundTruth, stages: dict[str, list[Point]]) -> list[str]:
    """Per cell: formula only → after one run on the type → after one run on the configuration."""
    lines = ["| layout | GPUs | " + " | ".join(truth.gpu_types) + " |", "|---|---|" + "---|" * len(truth.gpu_types)]
    for spread in (False, True):
        for n in COUNTS[1:]:
            row = []
            for t in truth.gpu_types:
                cell = Cell(t, n, spread)
                parts = []
                for stage, target in (("first", None), ("type", TYPE_TARGET), ("config", CONFIG_TARGET)):
                    pts = [p for p in stages[stage] if p[1] == cell]
                    m = _mean(pts)
                    mark = " ✗" if target is not None and m is not None and m > target else ""
                    parts.append(f"{_pct(m)}{mark} ({len(pts)})")
                row.append(" → ".join(parts))
            lines.append(f"| {'spread' if spread else 'consolidated'} | {n} | " + " | ".join(row) + " |")
    return lines


def before_after(truth: GroundTruth, stages: dict[str, list[Point]]) -> list[str]:
    lines = ["| stage | points | without estimator.refine (nor the family or cross-model layer) | with (production) |",
             "|---|---:|---:|---:|"]
    names = {"first": "model's first job (formula only)", "type": "one run on the type and layout, another count",
             "other_layout": "runs on the type, other layout or 1 GPU only", "elsewhere": "runs on other types only",
             "config": "one run on this configuration"}
    for stage, name in names.items():
        pts = stages[stage]
        lines.append(f"| {name} | {len(pts)} | {_pct(_mean(pts, False))} | {_pct(_mean(pts))} |")
    return lines


def curve_table(curves: dict[str, list[list[tuple[float, float]]]]) -> list[str]:
    lines = ["| runs of the model so far | models (x seeds) | mean error (production) | without estimator.refine "
             "(nor the family or cross-model layer) |",
             "|---:|---:|---:|---:|"]
    for k in CURVE_POINTS:
        now = [c[k] for runs in curves.values() for c in runs if len(c) > k]
        if now:
            lines.append(f"| {k} | {len(now)} | {_pct(statistics.mean(x for x, _ in now))} | "
                         f"{_pct(statistics.mean(y for _, y in now))} |")
    return lines


def _reasons(truth: GroundTruth, cell: Cell, pts: list[Point]) -> str:
    """Why a cell misses, from its own points: measurements that fall when GPUs are added, super-linear
    points, the worst one."""
    falls, rises, superlinear = set(), set(), set()
    for model, _, _, _, meas in pts:
        one = truth.samples_per_second(model, cell.gpu_type, 1, False)
        if meas > cell.gpus * one * 1.0001:
            superlinear.add(model)
        for other in COUNTS[1:]:
            there = truth.samples_per_second(model, cell.gpu_type, other, cell.spread)
            if (other < cell.gpus and there > meas) or (other > cell.gpus and there < meas):
                falls.add(model)
            elif (other < cell.gpus and there / other < meas / cell.gpus) or \
                    (other > cell.gpus and there / other > meas / cell.gpus):
                rises.add(model)
    worst = max(pts, key=lambda p: _err(p[2], p[4]))
    signed = statistics.mean((p[2] - p[4]) / p[4] for p in pts)
    parts = []
    if falls:
        parts.append(f"{len(falls)} of its {len({p[0] for p in pts})} models' throughput falls when GPUs are added "
                     f"next to this count ({', '.join(sorted(falls)[:3])}): a run at another count says the opposite "
                     "of what happens here, and eq. 1-2 (communication that only adds time) cannot follow")
    if rises:
        parts.append(f"{len(rises)} model(s) run faster per GPU on more GPUs next to this count (e.g. "
                     f"{sorted(rises)[0]}): per-GPU efficiency that rises with N is no communication cost, and the "
                     "ring share carried from the neighbour count predicts the opposite")
    if superlinear:
        parts.append(f"{len(superlinear)} super-linear point(s) (faster per GPU than one GPU alone, e.g. "
                     f"{sorted(superlinear)[0]}), which no added communication time reaches")
    parts.append(f"worst {worst[0]} {100 * (worst[2] - worst[4]) / worst[4]:+.0f}% (measured {worst[4]:.1f}, "
                 f"estimated {worst[2]:.1f} samples/s); mean signed error {100 * signed:+.0f}%")
    return "; ".join(parts)


def misses(truth: GroundTruth, stages: dict[str, list[Point]]) -> list[str]:
    lines = []
    for cell in _cells(truth):
        for stage, target in (("type", TYPE_TARGET), ("config", CONFIG_TARGET)):
            pts = [p for p in stages[stage] if p[1] == cell]
            m = _mean(pts)
            if m is not None and m > target:
                lines.append(f"- {cell.gpu_type} {cell.gpus} GPUs {cell.layout}, {stage} ({_pct(m)} > "
                             f"{_pct(target)}): {_reasons(truth, cell, pts)}.")
    return lines or ["- none"]


def _overall(stages: dict[str, list[Point]], stage: str) -> str:
    return _pct(_mean(stages[stage]))


def regular(truth: GroundTruth, model: str, cell: Cell) -> bool:
    """Whether the model's measurements on the cell's type and layout fit what eq. 1-2 can say: per-GPU
    throughput never rises when GPUs are added (1, 2, 4, 8 GPUs; so nothing super-linear either)."""
    per_gpu = [truth.samples_per_second(model, cell.gpu_type, n, cell.spread and n > 1) / n for n in COUNTS]
    return all(a >= b for a, b in zip(per_gpu, per_gpu[1:]))


def regular_line(truth: GroundTruth, stages: dict[str, list[Point]]) -> str:
    pts = [p for p in stages["type"] if regular(truth, p[0], p[1])]
    other = [p for p in stages["type"] if not regular(truth, p[0], p[1])]
    return (f"After one run on the type, on the points whose model's per-GPU throughput never rises with the GPU "
            f"count on that type and layout (what eq. 1-2 can follow): {_pct(_mean(pts))} ({len(pts)} points); on "
            f"the others (a dip or a super-linear point in their own measurements): {_pct(_mean(other))} "
            f"({len(other)} points).")


def _per_gpu(truth: GroundTruth, model: str, cell: Cell, gpus: int) -> float:
    return truth.samples_per_second(model, cell.gpu_type, gpus, cell.spread) / gpus


def sibling_ceiling(truth: GroundTruth, cell: Cell) -> tuple[float, float]:
    """What one run at another count can say of ``cell`` with the most a store could know of the family:
    mean error over every multi-GPU model and every other multi-GPU count N0 of the same type and layout of
    (a) the per-GPU rate held from N0 and (b) the N0 rate times the N/N0 per-GPU ratio its family's variant
    nearest in batch size measured (every point of that sibling known; the model's own point at N unseen)."""
    models = multi_gpu_models(truth)
    held, sibling = [], []
    for model in models:
        siblings = [m for m in models if m != model and family(m) == family(model)]
        if not siblings:
            continue
        near = min(siblings, key=lambda m: (abs(math.log(batch_size(m) / batch_size(model))), m))
        measured = _per_gpu(truth, model, cell, cell.gpus)
        for n0 in COUNTS[1:]:
            if n0 == cell.gpus:
                continue
            at_n0 = _per_gpu(truth, model, cell, n0)
            held.append(_err(at_n0, measured))
            sibling.append(_err(at_n0 * _per_gpu(truth, near, cell, cell.gpus) / _per_gpu(truth, near, cell, n0),
                                measured))
    return statistics.mean(held), statistics.mean(sibling)


def ceiling_table(truth: GroundTruth, stages: dict[str, list[Point]]) -> list[str]:
    """Per cell: the replay's error after one run on the type beside :func:`sibling_ceiling`'s two carries."""
    lines = ["| GPU type | layout | GPUs | after one run on the type (replay) | per-GPU rate held from N0 | "
             "nearest sibling's N/N0 ratio |", "|---|---|---:|---:|---:|---:|"]
    for cell in _cells(truth):
        replayed = _mean([p for p in stages["type"] if p[1] == cell])
        held, sibling = sibling_ceiling(truth, cell)
        mark = " ✗" if sibling > TYPE_TARGET else ""
        lines.append(f"| {cell.gpu_type} | {cell.layout} | {cell.gpus} | {_pct(replayed)} | {_pct(held)} | "
                     f"{_pct(sibling)}{mark} |")
    return lines


def run(out_dir: Path) -> Path:
    truth = GroundTruth()
    inside, curves, fam_inside, peers_inside, carries_inside = collect(truth)
    held, held_curves, fam_held, peers_held, _ = collect(truth, held_out=True)
    seeds = ",".join(str(s) for s in SEEDS)
    lines = [
        "# Estimator: the learning curve (how fast the store corrects the formula)",
        "",
        f"Generated by `hops-slurm bench estimator-learning --out docs/results` (in `make bench`) at commit "
        f"{_commit()}; source `hops_slurm/tools/bench/estimator_learning.py` (replay: "
        "`hops_slurm/tools/bench/learning_replay.py`).",
        "",
        "## Setup",
        "",
        f"- Workload: the paper workload (`paper`, {JOBS} jobs, seeds {seeds}), the jobs of Gavel's 19 multi-GPU "
        "variants in arrival order; each runs on a count of its requirement set that Gavel measured (1, 2, 4, 8), "
        "a GPU type and a layout drawn from the seed (consolidated: one node; spread: one GPU on each of N nodes).",
        "- Store and estimator: the production ones. A real SQLite `estimator.store.ThroughputStore`, probes "
        "through `profiler.ingest.ingest_probe` before a model's first job, each finished run's measured "
        "throughput (Gavel's table, every type, count and layout) written back as a recorder's runtime record "
        "through `profiler.ingest.ingest_runtime` (what the engine's `hops_slurm.engine.runtime_records.ingest_job` "
        "calls per accepted record), estimates through the planner's throughput function "
        "(`hops_slurm.sim.knowledge.Knowledge`, `estimator.estimate.Estimator`). The type's bandwidths come from "
        "the simulated calibration (`hops_slurm.sim.measure.calibration`) and are refitted from the records as "
        "they arrive (`estimator.calibration.refit`).",
        "- Measured: before every job of a model, the estimate of every configuration the model runs on in the "
        "workload, on other servers than its first run there. A (model, configuration) point counts once per "
        "stage, the first time the model's knowledge reaches it. Error = |estimate - measured| / measured.",
        "- Held out: the same replays with each GPU type's calibration made without the family under test "
        "(leave-one-family-out: all variants of that family held out at once; only its models are scored).",
        f"- Targets (issue 37): <= {_pct(TYPE_TARGET)} mean after one run of the model on the type, <= "
        f"{_pct(CONFIG_TARGET)} on a configuration already run. ✗ marks a miss; (n) the points.",
        "",
        "## Per cell: formula only → one run on the type at another count → one run on this configuration",
        "",
        "In-sample calibration:",
        "",
        *stage_table(truth, inside),
        "",
        "Held out (calibration without the family):",
        "",
        *stage_table(truth, held),
        "",
        f"All cells: first job {_overall(inside, 'first')}, one run on the type {_overall(inside, 'type')}, one run "
        f"on the configuration {_overall(inside, 'config')} (held out: {_overall(held, 'first')}, "
        f"{_overall(held, 'type')}, {_overall(held, 'config')}).",
        "",
        regular_line(truth, inside),
        "",
        "## What the refinement does (same store, read with and without `estimator.refine`, the family and the "
        "cross-model layers)",
        "",
        "The store alone answered a count a model had not run with the formula and the type's bandwidths, "
        "refitted as a median over every job's records: one run of the model barely moved it. "
        "`estimator.refine` carries the model's own communication time from its nearest measured count "
        "on the type and scope, with the ring all-reduce's share (N-1)/N (no fitted constant); where the model's "
        "siblings ran both counts, the family layer (below) answers first, and where other models ran both, "
        "the cross-model layer (below) next.",
        "",
        "In-sample:",
        "",
        *before_after(truth, inside),
        "",
        "Held out:",
        "",
        *before_after(truth, held),
        "",
        "## The learning curve (mean error over a model's configurations after k of its runs)",
        "",
        *curve_table(curves),
        "",
        "Held out:",
        "",
        *curve_table(held_curves),
        "",
        "## What one run at another count can say at best (Gavel's table alone, no replay)",
        "",
        "Two carries from a model's measured per-GPU rate at another multi-GPU count N0 of the same type and "
        "layout, over every model and every N0: the rate held as it is, and the rate times the N/N0 ratio "
        "that the family's variant nearest in batch size measured (same network, so the same gradients to "
        "exchange; every point of that sibling known, the model's own point at N unseen). The second is the "
        "most that reading the store's other variants of a family could give one run; ✗ where even it is "
        "over the target: there the model's own measurements and its siblings' disagree about how the rate "
        "moves with the count, so no rule carrying a measured point across counts reaches the target.",
        "",
        *ceiling_table(truth, inside),
        "",
        "## The family layer: the model's siblings at both counts (one run on the type at another count)",
        "",
        "`estimator.family_refine` answers a count the model has not run on the type and layout when some other "
        "signature of its family (`estimator.family`: the same network at another batch size, as the jobs' "
        "`#HOPS model=` and the probe name it; Gavel's variants in the simulator) has run there at both the "
        "model's own count N0 and the asked N: the weighted geometric mean of the model's N0 rate times each "
        "sibling's measured N/N0 ratio, weight (min/max batch size)^2, and of `estimator.refine`'s carry, "
        "weight 1 (a sibling at the model's own batch size). Nothing is fitted, so the held-out calibration "
        "does not touch it. Per cell, the points of that stage:",
        "",
        *family_table(truth, _cells(truth), fam_inside, TYPE_TARGET),
        "",
        "Held out (calibration without the family under test):",
        "",
        *family_table(truth, _cells(truth), fam_held, TYPE_TARGET),
        "",
        verdict(truth, _cells(truth), fam_inside, TYPE_TARGET,
                statistics.mean(sibling_ceiling(truth, c)[1] for c in _cells(truth))),
        "",
        "The family table reads the store without the cross-model layer (next section): its columns are the "
        "family layer's own.",
        "",
        "## The cross-model layer: every model that ran both counts on the type (one run on the type at another count)",
        "",
        "`estimator.peers` answers a count the model has not run on the type and layout, where no sibling did "
        "(the family layer first), when some other signature has run there at both the model's own count N0 "
        "and the asked N: the weighted geometric mean of the model's N0 rate times each such model's measured "
        "N/N0 ratio, weighted by how near its efficiency at N0 (per-GPU rate over its 1-GPU rate) is to the "
        "model's, exp(-|ln(e_p/e)| / 0.1), and of `estimator.refine`'s carry, weight 1. It reads no "
        "calibration, so the held-out replays give the same points. The layer is off by default "
        "(`estimator.estimate.Estimator.cross_model`); this bench turns it on, so the tables above include it. "
        "Per cell, the points of that stage:",
        "",
        *peers_table(truth, _cells(truth), peers_inside, TYPE_TARGET),
        "",
        f"Held out: {_pct(_cell_mean(peers_held, False))} without the layer, {_pct(_cell_mean(peers_held, True))} "
        "with it (mean over cells).",
        "",
        peers_verdict(truth, _cells(truth), peers_inside, TYPE_TARGET),
        "",
        "## Other ways to carry the one run (one run on the type at another count, in-sample)",
        "",
        "The same points, carried from the model's own rate at its count N0 nearest the one asked by rules "
        "other than production's, each reading only the model's snapshot and the type's calibration as the "
        "store held them (`hops_slurm/tools/bench/learning_carries.py`): `ring` is `estimator.refine` alone "
        "(the communication time fitted to the run, carried with the ring share (N-1)/N); `n-1` and `log2` "
        "carry the same fitted time with steeper count laws; `formula ratio` keeps the run's measured/formula "
        "factor at N0 (across servers eq. 2 does not move with the node count, so it is the rate held there); "
        "`rate held` keeps the per-GPU rate; `own ratio elsewhere` takes the model's own N/N0 ratio where it "
        "had run both counts on another GPU type or in the other layout, and `other layout` the model's own rate at "
        "N in the other layout on the type times the formula's ratio between the layouts (for these two, the "
        "points they answered in brackets).",
        "",
        *carries_table(_cells(truth), carries_inside, TYPE_TARGET),
        "",
        "By how many other models had run on the type and layout at both the model's count and the one asked "
        "when the estimate was taken:",
        "",
        *coverage_table(carries_inside),
        "",
        carries_verdict(_cells(truth), carries_inside, TYPE_TARGET) + " The ring share is the count law that "
        "fits these measurements best of those tried; a model's ratio on another type or layout, or its rate in "
        "the other layout, says little of its rate here; and more other models at both counts do not bring the "
        "error down steadily. At the density the store has when a model first runs on a type, what misses is "
        "the spread of the measurements themselves (the cells' reasons below), not a rule that reads too little "
        "of the store.",
        "",
        "## The most a law of the communication term can carry (Gavel's table alone, every model and N0)",
        "",
        "Every multi-GPU model, every cell and every other count N0 of the type and layout (not only the "
        "replay's points): the model's rate at N0 carried as `estimator.refine` does, its communication time "
        "growing as ((N-1)/N / (N0-1)/N0)^alpha; alpha = 1 is the ring share, the type's law is alpha learned "
        "from the other models' runs at two counts (median, every other model known), and the best law for "
        "the cell is the exponent that fits the cell's own answers best (fitted to what it is scored on: a "
        "bound, not a rule; `hops_slurm/tools/bench/learning_carries_bound.py`); the last column is not a law "
        "but a per-count correction of the type: the ring carry times the median over the other models of "
        "their measured rate at N over their own ring carry from N0 (`estimator.peers` weighs those models "
        "by efficiency instead: the cross-model table's column \"every other model known\" above). No calibration "
        "is read, so "
        "the held-out split gives the same table. ✗: over the target even with the cell's best law.",
        "",
        *law_bound_section(truth, _cells(truth), TYPE_TARGET,
                           {c: _mean([p for p in inside["type"] if p[1] == c]) for c in _cells(truth)}),
        "",
        "## A denser store: which cells carry the error, and probes that run data-parallel (in-sample)",
        "",
        "Per cell, the production error after one run on the type (the default: probes time one GPU), its "
        "signed share of the mean's distance to the target (the shares add up to it), and the same replays "
        "with `engine.probe_data_parallel` set: each model's probe also runs it data-parallel on k GPUs of one "
        "profiler node of every type (`python -m profiler.probe --data-parallel k`; here Gavel's consolidated "
        "figure at k, what that run measures, stored by `profiler.ingest.ingest_probe`; "
        "`hops_slurm/tools/bench/learning_probes.py`). The stages stay those of the jobs' runs; (probed) marks "
        "a cell the probe measured itself.",
        "",
        *probes_section(truth, _cells(truth), inside["type"], SEEDS, JOBS, TYPE_TARGET),
        "",
        "## Cells over a target, with the reason from their own points (in-sample)",
        "",
        *misses(truth, inside),
        "",
        "A configuration already run is answered by the measured layers: the type layer's mean of its records "
        "(times the server's entity factor on another server), so its error is the spread of its own records "
        "(none in Gavel's table: one figure per configuration).",
        "",
    ]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "estimator-learning.md"
    return results_header.write(path, "\n".join(lines), generator=f"{__name__}:run",
                                 command=command(os.environ))
