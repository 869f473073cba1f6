"""The estimator-learning bench's section on the family layer (:mod:`estimator.family_refine`).

Where it sits: :mod:`hops_slurm.tools.bench.estimator_learning` collects, for every point of the stage
"one run on the type at another count", the estimate without the cross-model layer, the same without the
family layer and the layer that answered (:class:`hops_slurm.tools.bench.learning_replay.Outcome`); this
module turns them into the per-cell table, with two bounds from Gavel's table alone: what the points the
family layer answered could give at best (error 0 there, the others as they are), and what the same rule
gives when every point of every sibling is known (:func:`full_knowledge`, the production
:func:`estimator.family_refine.family_per_gpu` on snapshots built from the table and the simulated probe).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from estimator.family_refine import FAMILY, family_per_gpu
from estimator.mixture import Mixture
from estimator.model import TimeComponents
from estimator.snapshot import JobSnapshot, Sibling, TypeTheory
from hops_slurm.sim.groundtruth import GroundTruth, batch_size, family
from hops_slurm.sim.measure import probe_result
from hops_slurm.tools.bench.learning_replay import COUNTS, Cell, multi_gpu_models



class _Scored(Protocol):  # a point of a learning table: its error with the layer, or without it
    def error(self, with_layer: bool = True, /) -> float: ...


@dataclass(frozen=True)
class FamilyPoint:
    """One (model, cell) point of the stage "type": estimates with and without the family layer."""

    model: str
    cell: Cell
    estimate: float
    without: float
    measured: float
    layer: str

    def error(self, with_family: bool = True) -> float:
        return abs((self.estimate if with_family else self.without) - self.measured) / self.measured


def per_gpu_rate(truth: GroundTruth, model: str, gpu_type: str, gpus: int, spread: bool) -> float:
    return truth.samples_per_second(model, gpu_type, gpus, spread and gpus > 1) / gpus


def probed_theory(truth: GroundTruth, model: str, gpu_type: str) -> TypeTheory:
    probe = probe_result(truth, model, gpu_type, "bench", at=0.0, probe_seconds=60.0)
    assert probe is not None
    tc = TimeComponents(probe.t_forward, probe.t_backward, probe.t_update, probe.pattern, float(probe.params),
                        probe.batch_size)
    return TypeTheory(tc, Mixture.constant(0.0))


def full_knowledge(truth: GroundTruth, cell: Cell) -> float:
    """Mean error over every multi-GPU model and every other multi-GPU count N0 of the same type and layout
    of :func:`estimator.family_refine.family_per_gpu` with the model's own point at N0 and every point of
    every sibling of its family known."""
    models = multi_gpu_models(truth)
    t, n = cell.gpu_type, cell.gpus
    errors = []
    for model in models:
        sibs = tuple(Sibling(m, batch_size(m),
                             {} if cell.spread else {(t, c): per_gpu_rate(truth, m, t, c, False) for c in COUNTS[1:]},
                             {(t, c): per_gpu_rate(truth, m, t, c, True) for c in COUNTS[1:]} if cell.spread else {})
                     for m in models if m != model and family(m) == family(model))
        measured = per_gpu_rate(truth, model, t, n, cell.spread)
        for n0 in COUNTS[1:]:
            if n0 == n:
                continue
            own = {(t, n0): per_gpu_rate(truth, model, t, n0, cell.spread)}
            snap = JobSnapshot(model, theory={t: probed_theory(truth, model, t)}, siblings=sibs, family=family(model),
                               type_aggregated={} if cell.spread else own, type_distributed=own if cell.spread else {})
            got = family_per_gpu(snap, t, gpus=n, nodes=n if cell.spread else 1)
            assert got is not None
            errors.append(abs(got - measured) / measured)
    return statistics.mean(errors)


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def shift(points: Sequence[_Scored]) -> str:
    """"a → b": the mean error of ``points`` without the layer, then with it ("–" when there are none); the
    learning bench's per-layer tables (this module's and :mod:`hops_slurm.tools.bench.learning_peers`)."""
    if not points:
        return "–"
    return f"{pct(statistics.mean(p.error(False) for p in points))} → {pct(statistics.mean(p.error() for p in points))}"


def family_table(truth: GroundTruth, cells: list[Cell], points: list[FamilyPoint], target: float) -> list[str]:
    """Per cell (and the mean over cells): without the family layer, with it (no cross-model layer), the points it
    answered, the bound with those points exact, the rule with every sibling point known."""
    lines = ["| GPU type | layout | GPUs | without the family layer | with it (no cross-model layer) | points the family "
             "layer answered | those points without → with | bound: those points exact | every sibling point "
             "known |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    cols: list[list[float]] = [[], [], [], []]
    for cell in cells:
        pts = [p for p in points if p.cell == cell]
        fam = [p for p in pts if p.layer == FAMILY]
        row = [statistics.mean(p.error(False) for p in pts), statistics.mean(p.error() for p in pts),
               statistics.mean(0.0 if p.layer == FAMILY else p.error() for p in pts), full_knowledge(truth, cell)]
        for col, x in zip(cols, row):
            col.append(x)
        shown = shift(fam)
        mark = " ✗" if row[1] > target else ""
        lines.append(f"| {cell.gpu_type} | {cell.layout} | {cell.gpus} | {pct(row[0])} | {pct(row[1])}{mark} | "
                     f"{len(fam)} of {len(pts)} | {shown} | {pct(row[2])} | {pct(row[3])} |")
    fam = [p for p in points if p.layer == FAMILY]
    means = [statistics.mean(c) for c in cols]
    lines.append(f"| mean over cells | | | {pct(means[0])} | {pct(means[1])} | {len(fam)} of {len(points)} | "
                 f"{shift(fam)} | {pct(means[2])} | {pct(means[3])} |")
    return lines


def verdict(truth: GroundTruth, cells: list[Cell], points: list[FamilyPoint], target: float,
            nearest: float) -> str:
    """Why the stage does or does not reach ``target`` with the family layer, from the table's numbers;
    ``nearest``: the mean over cells of the nearest sibling's N/N0 ratio alone, every point known."""
    fam = [p for p in points if p.layer == FAMILY]
    by_cell = [[p for p in points if p.cell == c] for c in cells]
    without = statistics.mean(statistics.mean(p.error(False) for p in pts) for pts in by_cell)
    with_ = statistics.mean(statistics.mean(p.error() for p in pts) for pts in by_cell)
    bound = statistics.mean(statistics.mean(0.0 if p.layer == FAMILY else p.error() for p in pts) for pts in by_cell)
    full = statistics.mean(full_knowledge(truth, c) for c in cells)
    worse = max(statistics.mean(p.error() for p in pts) - statistics.mean(p.error(False) for p in pts)
                for pts in by_cell)
    return (
        f"Mean over cells: {pct(without)} without the family layer, {pct(with_)} with it (target "
        f"{pct(target)}: {'met' if with_ <= target else 'missed'}); no cell gets worse by more than "
        f"{100 * worse:.1f} points. When a model first has one run on the type and layout at another count, some "
        f"sibling has run there at both that count and the one asked in {len(fam)} of {len(points)} points "
        f"({pct(len(fam) / len(points))}); the other {len(points) - len(fam)} keep `estimator.refine`'s answer, "
        f"so even exact answers on those {len(fam)} would give {pct(bound)}: what the store has seen of the family "
        f"by then is the first limit. The second is the rule's own carry: with every point of every sibling known "
        f"the rule gives {pct(full)}, the nearest sibling's ratio alone {pct(nearest)} (table above), because the "
        f"model's own carry weighs as much as a sibling at its batch size while a sibling at twice or half the "
        f"batch weighs 1/4, and where eq. 1-2 miss most (consolidated V100s) that carry is the furthest off.")


__all__ = ["FamilyPoint", "family_table", "full_knowledge", "per_gpu_rate", "probed_theory", "verdict"]
