"""The estimator-learning bench's section on the cross-model layer (:mod:`estimator.peers`).

Where it sits: :mod:`hops_slurm.tools.bench.estimator_learning` collects, for every point of the stage
"one run on the type at another count", the production estimate, the same store's estimate without the
cross-model layer, the layer that answered and how many other models had then run on the type and layout
at both counts (:class:`hops_slurm.tools.bench.learning_replay.Outcome`); this module turns them into the
per-cell table, with the rule's own limit from Gavel's table alone: the production
:func:`estimator.peers.peer_per_gpu` with every other model's points known (:func:`full_knowledge`).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from estimator.peers import PEERS, Peer, PeerTable, one_gpu_rate, peer_per_gpu
from estimator.snapshot import JobSnapshot
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.tools.bench.learning_family import pct, per_gpu_rate, probed_theory, shift
from hops_slurm.tools.bench.learning_replay import COUNTS, Cell, multi_gpu_models


@dataclass(frozen=True)
class PeerPoint:
    """One (model, cell) point of the stage "type": estimates with and without the cross-model layer."""

    model: str
    cell: Cell
    estimate: float
    without: float
    measured: float
    layer: str
    coverage: int  # other models that had run on the type and layout at both counts then

    def error(self, with_peers: bool = True) -> float:
        return abs((self.estimate if with_peers else self.without) - self.measured) / self.measured


def full_knowledge(truth: GroundTruth, cell: Cell) -> float:
    """Mean error over every multi-GPU model and every other multi-GPU count N0 of the same type and layout
    of :func:`estimator.peers.peer_per_gpu` with the model's own point at N0 and every multi-GPU point of
    every other model on the type and layout known."""
    models = multi_gpu_models(truth)
    t, n = cell.gpu_type, cell.gpus
    theories = {m: probed_theory(truth, m, t) for m in models}
    peers = []
    for m in models:
        one = one_gpu_rate(JobSnapshot(m, theory={t: theories[m]}), t)
        assert one is not None
        peers.append(Peer(m, one, {c: per_gpu_rate(truth, m, t, c, cell.spread) for c in COUNTS[1:]}))
    table = PeerTable({(t, not cell.spread): tuple(peers)})
    errors = []
    for model in models:
        measured = per_gpu_rate(truth, model, t, n, cell.spread)
        for n0 in COUNTS[1:]:
            if n0 == n:
                continue
            own = {(t, n0): per_gpu_rate(truth, model, t, n0, cell.spread)}
            snap = JobSnapshot(model, theory={t: theories[model]}, type_aggregated={} if cell.spread else own,
                               type_distributed=own if cell.spread else {})
            got = peer_per_gpu(snap, table, t, gpus=n, nodes=n if cell.spread else 1)
            assert got is not None
            errors.append(abs(got - measured) / measured)
    return statistics.mean(errors)


def peers_table(truth: GroundTruth, cells: list[Cell], points: list[PeerPoint], target: float) -> list[str]:
    """Per cell (and the mean over cells): without the cross-model layer, with it (production), the points
    it answered and those points without → with, the median of other models that had run both counts, the
    rule with every other model known."""
    lines = ["| GPU type | layout | GPUs | without the cross-model layer | with it (production) | points it "
             "answered | those points without → with | other models at both counts (median) | every other "
             "model known |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    cols: list[list[float]] = [[], [], []]
    for cell in cells:
        pts = [p for p in points if p.cell == cell]
        got = [p for p in pts if p.layer == PEERS]
        row = [statistics.mean(p.error(False) for p in pts), statistics.mean(p.error() for p in pts),
               full_knowledge(truth, cell)]
        for col, x in zip(cols, row):
            col.append(x)
        shown = shift(got)
        mark = " ✗" if row[1] > target else ""
        lines.append(f"| {cell.gpu_type} | {cell.layout} | {cell.gpus} | {pct(row[0])} | {pct(row[1])}{mark} | "
                     f"{len(got)} of {len(pts)} | {shown} | {statistics.median(p.coverage for p in pts):g} | "
                     f"{pct(row[2])} |")
    got = [p for p in points if p.layer == PEERS]
    means = [statistics.mean(c) for c in cols]
    lines.append(f"| mean over cells | | | {pct(means[0])} | {pct(means[1])} | {len(got)} of {len(points)} | "
                 f"{shift(got)} | {statistics.median(p.coverage for p in points):g} | {pct(means[2])} |")
    return lines


def peers_verdict(truth: GroundTruth, cells: list[Cell], points: list[PeerPoint], target: float) -> str:
    """What the cross-model layer gives and what limits it, from the table's numbers."""
    by_cell = [[p for p in points if p.cell == c] for c in cells]
    without = statistics.mean(statistics.mean(p.error(False) for p in pts) for pts in by_cell)
    with_ = statistics.mean(statistics.mean(p.error() for p in pts) for pts in by_cell)
    worse = max(statistics.mean(p.error() for p in pts) - statistics.mean(p.error(False) for p in pts)
                for pts in by_cell)
    full = statistics.mean(full_knowledge(truth, c) for c in cells)
    none = sum(1 for p in points if p.coverage == 0)
    rest = [statistics.mean(p.error() for p in pts) for c, pts in zip(cells, by_cell)
            if c.spread or c.gpu_type != "v100"]
    return (
        f"Mean over cells: {pct(without)} without the cross-model layer, {pct(with_)} with it (target "
        f"{pct(target)}: {'met' if with_ <= target else 'missed'}); no cell gets worse by more than "
        f"{max(0.0, 100 * worse):.1f} points. With every other model's points known the same rule gives "
        f"{pct(full)}: what limits it here is what the store holds when a model first runs on a type and "
        f"layout: in {none} of {len(points)} points no other model had yet run there at both the model's count "
        f"and the one asked, and the median is the column above. Without the consolidated V100 cells (whose own "
        f"measurements fall and rise with the GPU count, below) the other {len(rest)} cells average "
        f"{pct(statistics.mean(rest))}.")


__all__ = ["PeerPoint", "full_knowledge", "peers_table", "peers_verdict"]
